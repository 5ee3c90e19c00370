"""Real replies of small local models, replayed through the stream cut, the parser and the judge.

The fixtures are raw Observer replies recorded with Qwen2.5-Coder-1.5B (and a few of
SmolLM2-135M) on the long two-person conversation of ``examples/data/eval/longconv.json``
(``tests/fixtures/qwen15b/README.md``). Each says what memory must make of it; the lines it
commits are also checked with an independent rule (whole words, names and numbers present).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om._core.tokens import TokenCounter
from langchain_om.eval.recorded import MemoryCall, batch_messages, check_lines, replay
from langchain_om.testing import FunctionChatModel
from tests.helpers import archived

FIXTURES = Path(__file__).parents[1] / "fixtures" / "qwen15b" / "observer_calls.jsonl"
ROWS: list[dict[str, Any]] = [
    json.loads(line) for line in FIXTURES.read_text(encoding="utf-8").splitlines() if line
]
COUNT = TokenCounter().count_text

LOOP_OVERRUN_TOKENS = 300
"""A stopped reply may cost at most this many tokens beyond the text memory keeps of it."""


def _call(row: dict[str, Any]) -> MemoryCall:
    prompt = row["prompt"]
    system = next(p["text"] for p in prompt if p["type"] == "system")
    human = next(p["text"] for p in reversed(prompt) if p["type"] == "human")
    return MemoryCall(system, human, row["reply"], "observer", {})


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['id']}: {r['note']}" for r in ROWS])
def test_a_recorded_reply_is_taken_as_expected(row: dict[str, Any]) -> None:
    expect = row["expect"]
    got = replay(_call(row))
    outcome = (
        "rejected"
        if not got.verdict.accepted
        else "salvaged"
        if got.verdict.salvaged
        else "accepted"
    )
    assert outcome == expect["outcome"] and got.verdict.reason == expect["reason"]
    assert (got.cut.reason if got.cut else None) == expect["stopped"]
    top = [line for line in got.lines if not line.startswith((" ", "\t"))]
    assert top == expect["lines"]  # exactly these lines: the grounded ones before the loop
    for check in check_lines(got.lines, got.evidence):
        assert check.grounded, f"committed but not grounded: {check.line!r} {check.missing}"
    if got.cut is not None:
        kept = COUNT(got.verdict.observations) if got.verdict.accepted else 0
        assert got.generated_tokens <= LOOP_OVERRUN_TOKENS + kept


def test_the_fixtures_cover_salvage_rejection_and_acceptance() -> None:
    outcomes = [r["expect"]["outcome"] for r in ROWS]
    assert {"accepted", "salvaged", "rejected"} <= set(outcomes)
    salvaged = [r for r in ROWS if r["expect"]["outcome"] == "salvaged"]
    assert all(r["expect"]["stopped"] == "loop" for r in salvaged)
    assert any(r["model"].startswith("SmolLM") for r in ROWS)  # a second model's garbage


def _recorded(reply: str) -> FunctionChatModel:
    return FunctionChatModel(function=lambda messages, info: reply)


@pytest.mark.parametrize(
    "fixture", [r["id"] for r in ROWS if r["expect"]["outcome"] == "salvaged"][:3]
)
def test_a_salvaged_real_reply_observes_only_the_messages_it_covers(fixture: str) -> None:
    """Through the engine: the recorded batch, the recorded reply, a covered prefix."""
    row = next(r for r in ROWS if r["id"] == fixture)
    human = next(p["text"] for p in reversed(row["prompt"]) if p["type"] == "human")
    batch: list[BaseMessage] = [
        HumanMessage(text, id=f"m{i}") for i, text in enumerate(batch_messages(human))
    ]
    memory = ObservationalMemory(
        model=_recorded(row["reply"]),
        observation={"message_tokens": 100_000, "buffer_tokens": False, "prompt": "compact"},
        reflection={"observation_tokens": 200_000},
    )
    events: list[Any] = []
    memory.on_debug_event = events.append
    snap = memory.observe(thread_id="t", messages=batch)
    (end,) = [e for e in events if e.type == "data-om-observation-end"]
    assert end.outcome == "salvaged" and 0 < (end.covered_messages or 0) < len(batch)
    lines = [line for line in snap.observations.splitlines() if line.startswith("*")]
    assert lines == row["expect"]["lines"]
    archive = [m.id for m in archived(memory, "t")]
    assert archive == [m.id for m in batch[: end.covered_messages]]
    assert [m.id for m in snap.window] == [m.id for m in batch[end.covered_messages :]]
