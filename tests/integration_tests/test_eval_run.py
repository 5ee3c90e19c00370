"""``langchain-om eval`` end to end on the synthetic fixtures with scripted models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

import langchain_om.eval.cli as eval_cli
from langchain_om._core.tokens import get_default_counter
from langchain_om.cli import main
from langchain_om.eval import (
    ANSWER_PROMPT,
    RunSettings,
    SystemSettings,
    ingest,
    load_locomo,
    load_longmemeval,
    read_records,
    run_eval,
    scripted_answerer,
    summarize,
)
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import ROOT

DATA = ROOT / "examples" / "data" / "eval"
LOCOMO = DATA / "locomo_synthetic.json"
SYSTEMS = "om,full,window,summarization"


def small_systems(**overrides: Any) -> SystemSettings:
    """Settings of the compared systems with small windows, on the scripted memory model."""
    options: dict[str, Any] = {
        "memory_model": memory_model(),
        "counter": get_default_counter(),
        "message_tokens": 200,
        "observation_tokens": 400,
    }
    return SystemSettings(**(options | overrides))


def eval_args(out: Path, *extra: str) -> list[str]:
    return [
        "eval",
        "--format",
        "locomo",
        "--data",
        str(LOCOMO),
        "--systems",
        SYSTEMS,
        "--scripted",
        "--out",
        str(out),
        *extra,
    ]


def answers(out: Path) -> list[dict[str, Any]]:
    return [r for r in read_records(out / "records.jsonl") if r["kind"] == "answer"]


def without_seconds(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: without_seconds(v) for k, v in value.items() if "seconds" not in k and k != "started"
        }
    if isinstance(value, list):
        return [without_seconds(v) for v in value]
    return value


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval") / "out"
    assert main(eval_args(out)) == 0
    return out


def test_cli_writes_reports(uninterrupted: Path) -> None:
    report = json.loads((uninterrupted / "report.json").read_text())
    assert list(report["systems"]) == ["om", "full", "window", "summarization"]
    assert report["primary_metric"] == "f1"
    for data in report["systems"].values():
        assert data["overall"]["questions"] == 6
        assert set(data["categories"]) == {
            "single-hop",
            "temporal",
            "multi-hop",
            "open-domain",
            "adversarial",
        }
    memory = {name: d["memory"] for name, d in report["systems"].items()}
    assert memory["om"]["calls"] > 0 and memory["summarization"]["calls"] > 0
    assert memory["full"]["calls"] == memory["window"]["calls"] == 0
    assert memory["om"]["tokens"] > 0
    markdown = (uninterrupted / "report.md").read_text()
    assert "| om | 6 |" in markdown and "Score (f1) per category" in markdown
    assert (uninterrupted / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_full_context_scores_match_hand_computed_values(uninterrupted: Path) -> None:
    full = {a["question_id"]: a for a in answers(uninterrupted) if a["system"] == "full"}
    # (prediction of the scripted answerer, its LoCoMo score worked out by hand)
    expected = {
        # 6 tokens (sound delici adopt pixel last week) vs "pixel": P=1/6, R=1 -> 2/7
        "syn-1:q0": ("Sounds delicious adopted Pixel last week", 2 / 7),
        # temporal, plain F1: ran sunday 14 march vs 14 march 2026: P=1/2, R=2/3 -> 4/7
        "syn-1:q1": ("ran Sunday 14 March", 4 / 7),
        # multi-hop: neither "Porto" nor "Lisbon" is in the one prediction part -> 0
        "syn-1:q2": ("Big news left bakery now coffee roastery", 0.0),
        # coffe roasteri shared with "coffee roastery in lisbon": P=2/6, R=2/4 -> 2/5
        "syn-1:q3": ("Big news left bakery coffee roastery", 2 / 5),
        # open-domain: only "Ana" (before ';') counts: P=1/5, R=1 -> 1/3
        "syn-1:q4": ("started lessons teacher called Ana", 1 / 3),
        # adversarial: the reply says "no information available" -> 1
        "syn-1:q5": ("No information available.", 1.0),
    }
    for qid, (prediction, score) in expected.items():
        assert full[qid]["prediction"] == prediction
        assert full[qid]["scores"]["f1"] == pytest.approx(score)
    report = json.loads((uninterrupted / "report.json").read_text())
    overall = report["systems"]["full"]["overall"]
    assert overall["f1"] == pytest.approx((2 / 7 + 4 / 7 + 0 + 2 / 5 + 1 / 3 + 1) / 6, abs=1e-4)
    assert overall["contains"] == pytest.approx(1 / 5)  # q0 holds "pixel"; abstention excluded
    assert overall["compression"] == 1.0
    assert report["systems"]["full"]["categories"]["single-hop"]["f1"] == pytest.approx(
        (2 / 7 + 2 / 5) / 2, abs=1e-4
    )


def test_window_gets_oms_budget_and_loses_early_facts(uninterrupted: Path) -> None:
    records = read_records(uninterrupted / "records.jsonl")
    ingests = {r["system"]: r for r in records if r["kind"] == "ingest"}
    budget = ingests["window"]["budget_tokens"]
    assert budget == ingests["om"]["context_tokens"]
    assert ingests["window"]["context_tokens"] <= budget < ingests["full"]["context_tokens"]
    window = {a["question_id"]: a for a in answers(uninterrupted) if a["system"] == "window"}
    assert window["syn-1:q0"]["prediction"] == "No information available."  # session 1 is gone
    assert ingests["summarization"]["summaries"] == 1


def test_summaries_are_cut_to_a_quarter_of_the_trigger(uninterrupted: Path) -> None:
    records = read_records(uninterrupted / "records.jsonl")
    run = next(r for r in records if r["kind"] == "run")
    assert run["identity"]["summary_tokens"] == run["identity"]["message_tokens"] // 4
    ingest = next(r for r in records if r["kind"] == "ingest" and r["system"] == "summarization")
    # the summary (at most a quarter) plus the kept fifth stay under the trigger
    assert ingest["context_tokens"] < run["identity"]["message_tokens"]


def test_resumes_after_being_killed(
    uninterrupted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "LANGCHAIN_OM_EVAL_SLOW_MS": "250", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "langchain_om.cli", *eval_args(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if (out / "records.jsonl").exists() and len(answers(out)) >= 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be interrupted"
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=30)
    first = answers(out)
    assert 2 <= len(first) < 24
    assert b"answers" in err and b"elapsed" in err  # the progress display
    assert not (out / "report.json").exists()

    calls: list[str] = []
    answerer = scripted_answerer()
    real = answerer.function
    assert real is not None

    def counting(messages: list[BaseMessage], info: RecordedCall) -> Any:
        calls.append(messages[-1].text)
        return real(messages, info)

    answerer.function = counting

    def scripted(**_: Any) -> FunctionChatModel:
        return answerer

    monkeypatch.setattr(eval_cli, "scripted_answerer", scripted)
    assert main(eval_args(out)) == 0
    final = answers(out)
    keys = [(a["system"], a["question_id"]) for a in final]
    assert len(keys) == len(set(keys)) == 24  # no question answered twice
    assert len(calls) == 24 - len(first)  # only what was left
    assert final[: len(first)] == first
    resumed = json.loads((out / "report.json").read_text())
    whole = json.loads((uninterrupted / "report.json").read_text())
    assert without_seconds(resumed) == without_seconds(whole)


def test_other_settings_in_the_same_folder_are_refused(
    uninterrupted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(eval_args(uninterrupted, "--seed", "5")) == 2
    assert "new --out folder" in capsys.readouterr().err


def test_every_system_gets_the_same_prompt(tmp_path: Path) -> None:
    seen: dict[str, list[tuple[str, str]]] = {}

    def answer(messages: list[BaseMessage], info: RecordedCall) -> str:
        system, question = messages[0].text, messages[1].text
        seen.setdefault(question, []).append((system.split("<context>")[0], system))
        return "No information available."

    settings = RunSettings(
        systems=("om", "full", "window", "summarization"),
        answer_model=FunctionChatModel(function=answer),
        # Budgets small enough that memory's context (preamble included) stays below the whole
        # history, so the window at memory's budget is a real cut and differs from ``full``.
        systems_settings=small_systems(message_tokens=100, observation_tokens=200),
        out=tmp_path,
        identity={"format": "locomo"},
    )
    run_eval(load_locomo(LOCOMO), settings)
    head = ANSWER_PROMPT.split("<context>")[0]
    assert len(seen) == 6
    for prompts in seen.values():
        assert [p[0] for p in prompts] == [head] * 4
        assert len({p[1] for p in prompts}) == 4  # only the context differs


@pytest.mark.parametrize("front_door", ["agent", "graph", "standalone"])
def test_front_doors_date_memory_by_the_conversation(front_door: str) -> None:
    conv = load_locomo(LOCOMO).conversations[0]
    settings = small_systems(
        memory_model=memory_model(words=10),
        observation_tokens=4000,
        front_door=front_door,
    )
    held = ingest("om", conv, settings)
    try:
        assert held.details["observed_messages"] > 0 and held.meter.calls > 0
        text = held.render(conv.questions[0].asked_at)
        assert "Date: Mar 2, 2026" in text and "Date: Mar 15, 2026" in text
        assert "User said: Maya: Hi Jon! I just started a new job" in text
        assert "(18:30)" in text  # the session's own time, not the clock of the machine
    finally:
        held.close()


def test_longmemeval_with_a_judge(tmp_path: Path) -> None:
    ds = load_longmemeval(DATA / "longmemeval_synthetic.json")
    replies = iter(["maybe", "yes"] + ["no"] * 100)
    judge = FunctionChatModel(function=lambda m, i: next(replies))
    settings = RunSettings(
        systems=("full",),
        answer_model=scripted_answerer(),
        systems_settings=small_systems(),
        out=tmp_path,
        judge_model=judge,
        identity={"format": "longmemeval", "systems": ["full"]},
    )
    records = run_eval(ds, settings)
    first = next(r for r in records if r.get("kind") == "answer")
    assert first["scores"]["judge"] == 1.0  # "maybe" is no verdict: asked again
    assert judge.call_count == 2 + 4
    report = summarize(records)
    assert report["primary_metric"] == "judge"
    assert report["systems"]["full"]["overall"]["judge"] == pytest.approx(1 / 5)


def test_longmemeval_scripted_cli(tmp_path: Path) -> None:
    out = tmp_path / "lme"
    args = [
        "eval",
        "--format",
        "longmemeval",
        "--data",
        str(DATA / "longmemeval_synthetic.json"),
        "--systems",
        "om,window",
        "--scripted",
        "--out",
        str(out),
        "--limit",
        "3",
    ]
    assert main(args) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["primary_metric"] == "judge"
    assert report["systems"]["om"]["overall"]["questions"] == 3
    assert report["systems"]["om"]["overall"]["judge"] is not None


def test_torn_last_record_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text('{"kind": "run"}\n{"kind": "answer", "sys')
    assert read_records(path) == [{"kind": "run"}]
    assert path.read_text() == '{"kind": "run"}\n'


def test_jsonl_through_the_standalone_front_door(tmp_path: Path) -> None:
    out = tmp_path / "jsonl"
    args = [
        "eval",
        "--format",
        "jsonl",
        "--data",
        str(DATA / "transcript.jsonl"),
        "--systems",
        "om,full",
        "--scripted",
        "--front-door",
        "standalone",
        "--message-tokens",
        "50",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    records = read_records(out / "records.jsonl")
    om = next(r for r in records if r["kind"] == "ingest" and r["system"] == "om")
    assert om["front_door"] == "standalone"
    assert om["observed_messages"] == 8 and om["window_messages"] == 0  # every session observed
    assert records[0]["identity"]["front_door"] == "standalone"
    full = {a["question_id"]: a for a in records if a.get("system") == "full" and "scores" in a}
    assert full["trip-q3"]["scores"]["f1"] == 1.0  # abstention: nothing about a seat
