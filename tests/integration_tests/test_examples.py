"""Every script in examples/ runs offline (scripted models) and shows memory at work."""

from __future__ import annotations

import re
import runpy

import pytest

from tests.helpers import ROOT

EXAMPLES = ROOT / "examples"
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py"))


def run_example(name: str, capsys: pytest.CaptureFixture[str]) -> str:
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    return capsys.readouterr().out


def number(pattern: str, text: str) -> int:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in output:\n{text}"
    return int(found.group(1))


def test_the_front_door_examples_are_there() -> None:
    assert {"agent.py", "custom_graph.py", "chat_history.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_example_runs(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example(name, capsys)
    assert out.strip(), f"{name} printed nothing"


def test_agent_example_observes_tool_turns(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("agent.py", capsys)
    in_context = number(r"(\d+) messages in context", out)
    observed = number(r"(\d+) observed", out)
    assert observed > 0
    assert in_context + observed == 5 * 2 + 5 * 4  # every message is observed or in context
    assert "User said: On " in out and "I'm working from the café." in out
    assert "Tool Call said:" in out or "Tool Result said:" in out


def test_custom_graph_example_observes_and_reflects(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("custom_graph.py", capsys)
    assert number(r"(\d+) observed", out) > 0
    assert number(r"generation (\d+)", out) >= 1
    assert number(r"Got it \((\d+) things remembered\)", out.split("last answer:")[1]) > 0
    assert "User said: Note 1: buy item number 7 today." in out


def test_chat_history_example_keeps_history_small(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("chat_history.py", capsys)
    assert number(r"seeing (\d+) messages", out.split("last answer:")[1]) < 2 * 12
    assert "Thread 'maya' · generation" in out
    assert "User said: Remember item 1: the code for box" in out


def test_recall_chain_example_pages_back(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLES / "recall_chain.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "recall" in out.lower() and "Lisbon" in out


def test_bad_observer_replies_example_archives_nothing_until_a_real_reply(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run_example("bad_observer_replies.py", capsys)
    assert "turn 0: 2 messages in the window, 0 archived" in out
    assert "turn 1: 4 messages in the window, 0 archived" in out
    assert "failed cycles and their reasons: ['empty', 'echo']" in out
    assert number(r"turn 7: \d+ messages in the window, (\d+) archived", out) > 0
