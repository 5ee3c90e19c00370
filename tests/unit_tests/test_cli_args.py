"""The command line without a database: replay files, model selection, arguments, help."""

from __future__ import annotations

import argparse
import io
import logging
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from langchain_om import ObservationalMemory, __version__
from langchain_om._cli.backend import open_backend
from langchain_om._cli.console import Console, notices_through, plural
from langchain_om.cli import (
    ReplayFormatError,
    _over_notes,
    build_parser,
    load_conversation,
    main,
)
from langchain_om.events import WindowUsage
from langchain_om.testing import memory_model
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
    probed: list[str] = []
    monkeypatch.setattr("langchain_om._cli.backend._check_base_url", probed.append)
    with open_backend(_args("--base-url", "http://127.0.0.1:9/v1"), print) as backend:
        assert isinstance(backend.actor, ChatOpenAI)
        assert backend.actor.openai_api_base == "http://127.0.0.1:9/v1"
        assert isinstance(backend.actor.openai_api_key, SecretStr)
        assert backend.actor.openai_api_key.get_secret_value() == "none"
        assert backend.actor.max_retries == 0  # memory's retry plan is the only layer
        assert backend.memory_model is backend.actor
        assert backend.thresholds is None  # the library's thresholds
    assert probed == ["http://127.0.0.1:9/v1"]  # checked before anything runs on it


@pytest.mark.real_provider
def test_a_set_provider_key_picks_that_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    monkeypatch.setitem(sys.modules, "langchain_google_genai", None)  # the [google] extra missing
    said: list[str] = []
    with open_backend(_args(), said.append) as backend:
        assert isinstance(backend.actor, ChatOpenAI)
        assert backend.memory_model == "openai/gpt-5-mini"
    assert len(said) == 1
    assert 'pip install "langchain-om[google]"' in said[0]
    assert "memory uses openai/gpt-5-mini" in said[0]


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


# --- one-line errors, help, wording ---------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["replay", "x.jsonl", "--thread", ""], "--thread: the thread id must not be empty"),
        (["inspect", "--thread", "  "], "--thread: the thread id must not be empty"),
        (["chat", "--resource", ""], "argument --resource: the resource id must not be empty"),
        (["chat", "--message-tokens", "lots"], "'lots' is not a whole number of tokens"),
        (["inspect", "--checkpoint", "a", "--checkpoints"], "not allowed with argument"),
        (["nonsense"], "invalid choice: 'nonsense'"),
    ],
)
def test_argument_errors_are_one_line_with_exit_code_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert says in err and "--help)" in err and "usage:" not in err


def test_help_names_eval_and_the_threshold_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    top = capsys.readouterr().out
    assert "chat, replay, inspect, eval." in top
    assert "langchain-om eval --format locomo" in top
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "what this --db was last used with, else 400 with --scripted" in text
    assert "the library's 30,000 otherwise" in text  # --message-tokens
    assert "1,200 with the offline Observer" in text and "the library's 40,000" in text
    assert "--fresh" in text and "postgresql:// URL" in text


def test_a_line_without_content_is_refused_with_its_line_number(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "t.jsonl", [{"role": "user", "content": "hi"}, {"role": "assistant"}]
    )
    with pytest.raises(ReplayFormatError, match=r't\.jsonl:2: no "content"'):
        load_conversation(path)
    no_role = write_jsonl(tmp_path / "r.jsonl", [{"content": "hi"}])
    with pytest.raises(ReplayFormatError, match=r'r\.jsonl:1: no "role"'):
        load_conversation(no_role)
    # An assistant line that only calls tools may leave content out.
    calls = [{"name": "weather", "args": {}, "id": "c1"}]
    ok = write_jsonl(tmp_path / "ok.jsonl", [{"role": "assistant", "tool_calls": calls}])
    assert load_conversation(ok)[0].text == ""


def test_a_file_gives_the_same_ids_on_every_read_and_another_file_others(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "", "tool_calls": [{"name": "weather", "args": {}}]},
        {"role": "tool", "content": "sunny"},
        {"role": "user", "content": "thanks", "id": "mine"},
    ]
    path = write_jsonl(tmp_path / "t.jsonl", rows)
    first, second = load_conversation(path), load_conversation(path)
    assert [m.id for m in first] == [m.id for m in second]
    assert first[3].id == "mine"
    call = first[1]
    assert isinstance(call, AIMessage) and isinstance(first[2], ToolMessage)
    assert call.tool_calls[0]["id"] == first[2].tool_call_id
    assert call.tool_calls == second[1].tool_calls  # type: ignore[attr-defined]
    other = write_jsonl(tmp_path / "u.jsonl", [{**rows[0], "content": "weather today?"}])
    assert load_conversation(other)[0].id != first[0].id


def test_plural_wording() -> None:
    assert plural(1, "message") == "1 message"
    assert plural(0, "message") == "0 messages"
    assert plural(1_200, "message") == "1,200 messages"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_notice_on_a_terminal_goes_above_the_bar_which_is_drawn_again() -> None:
    out = _Terminal()
    console = Console(out)
    console.progress(3, 10, "window 51 tok")
    with warnings.catch_warnings(), notices_through(console):
        warnings.simplefilter("always")  # shown, not raised (pytest makes warnings errors)
        warnings.warn("a warning mid-bar", UserWarning, stacklevel=1)
        logging.getLogger("langchain_om").warning("a background job failed: %s", "Boom")
        logging.getLogger("langchain_om.retry").warning("model call failed (its event says so)")
    console.progress(10, 10)
    screen = out.getvalue()
    bar = "\r[#########---------------------] 3/10 window 51 tok"
    assert screen.startswith(bar)
    notice = "\r\x1b[K  ! UserWarning: a warning mid-bar\n" + bar
    assert notice in screen  # erased, printed on its own line, the bar drawn again below
    assert "\r\x1b[K  ! a background job failed: Boom\n" + bar in screen
    assert "its event says so" not in screen  # cycle and retry lines are the events' job
    assert screen.endswith("\r" + f"[{'#' * 30}] 10/10".ljust(78) + "\n")  # done: the bar stays
    console.say("after")
    assert screen + "after\n" == out.getvalue()  # no bar to erase or draw any more


def test_a_window_over_its_threshold_says_why() -> None:
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 40},
        reflection={"observation_tokens": 900},
    )
    base = memory.status(thread_id="t").status
    assert _over_notes(memory, base) == []  # under: nothing to explain
    over = base.model_copy(update={"messages": WindowUsage(tokens=51, threshold=40)})
    (note,) = _over_notes(memory, over)
    assert "messages over 40" in note and "buffered observations are activated" in note
    assert "above 48 tokens, observation.block_after" in note  # 1.2 × 40
    quiet = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 40, "buffer_tokens": False},
        reflection={"observation_tokens": 900},
    )
    (note,) = _over_notes(quiet, over)
    assert "failed or is backing off" in note
    log = base.model_copy(update={"observations": WindowUsage(tokens=950, threshold=900)})
    (note,) = _over_notes(memory, log)
    assert "observations over 900" in note and "above 1,080 tokens" in note
    assert "condenses the log in the background" in note
    (note,) = _over_notes(quiet, log)
    assert "the last reflection failed or is backing off" in note


def test_an_unexpected_error_is_one_line_with_exit_code_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: argparse.Namespace, console: Console) -> int:
        raise RuntimeError("something\nbroke")

    monkeypatch.setattr("langchain_om.cli.cmd_inspect", broken)
    monkeypatch.delenv("LANGCHAIN_OM_TRACEBACK", raising=False)
    assert main(["inspect"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "langchain-om: unexpected RuntimeError: something broke (a bug; set "
        "LANGCHAIN_OM_TRACEBACK=1 for the traceback)\n"
    )
    monkeypatch.setenv("LANGCHAIN_OM_TRACEBACK", "1")
    with pytest.raises(RuntimeError, match="broke"):
        main(["inspect"])
