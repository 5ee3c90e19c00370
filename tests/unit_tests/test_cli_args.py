"""The command line without a database: replay files, model selection, arguments, help."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from langchain_om import __version__
from langchain_om._cli_backend import open_backend
from langchain_om.cli import ReplayFormatError, build_parser, load_conversation, main
from tests.helpers import ROOT, write_jsonl

DEMO = ROOT / "examples" / "data" / "demo.jsonl"

pytestmark = pytest.mark.usefixtures("fresh_model_cache")


# --- replay files ---------------------------------------------------------------------------


def test_load_conversation_pairs_tool_results_with_calls(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [
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
    rows: list[dict[str, Any]] = [
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


def test_bundled_demo_is_a_valid_conversation() -> None:
    messages = load_conversation(DEMO)
    assert len(messages) >= 30
    assert isinstance(messages[0], HumanMessage)
    assert any(isinstance(m, ToolMessage) for m in messages)


# --- model selection ------------------------------------------------------------------------


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["replay", "x.jsonl", *argv])


@pytest.mark.real_provider
def test_base_url_uses_chat_openai_with_a_dummy_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with open_backend(_args("--base-url", "http://127.0.0.1:9/v1"), print) as backend:
        assert isinstance(backend.actor, ChatOpenAI)
        assert backend.actor.openai_api_base == "http://127.0.0.1:9/v1"
        assert isinstance(backend.actor.openai_api_key, SecretStr)
        assert backend.actor.openai_api_key.get_secret_value() == "none"
        assert backend.memory_model is backend.actor
        assert backend.thresholds is None  # the library's thresholds


@pytest.mark.real_provider
def test_a_set_provider_key_picks_that_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    said: list[str] = []
    with open_backend(_args(), said.append) as backend:
        assert isinstance(backend.actor, ChatOpenAI)
        assert backend.memory_model == "openai/gpt-5-mini"
    assert said == [
        "Using openai/gpt-5-mini (its API key is set); pass --model to choose another model."
    ]


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


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"langchain-om {__version__}"


def test_inspect_takes_only_the_options_it_uses(capsys: pytest.CaptureFixture[str]) -> None:
    for option in ("--resource", "--verbose", "--model", "--scripted"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(
                ["inspect", option, *(["x"] if option in ("--resource", "--model") else [])]
            )
        assert "unrecognized arguments" in capsys.readouterr().err
    args = build_parser().parse_args(["inspect", "--max-lines", "0", "--json"])
    assert args.max_lines == 0 and args.json
