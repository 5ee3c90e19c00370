"""``langchain-om chat`` in a real pseudo-terminal: line editing, Ctrl-C mid-reply, Ctrl-D."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from langchain_om import ObservationalMemory
from langchain_om._cli.backend import SCRIPTED_DELAY_ENV
from langchain_om.cli import CANCELLED_REPLY
from langchain_om.testing import memory_model
from tests.helpers import ROOT

pexpect = pytest.importorskip("pexpect")

LEFT, UP = "\x1b[D", "\x1b[A"
CTRL_C, CTRL_D = "\x03", "\x04"


def _spawn(db: Path, delay: float) -> Any:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TERM": "xterm",
        SCRIPTED_DELAY_ENV: str(delay),
        "OPENAI_API_KEY": "",
        "GOOGLE_API_KEY": "",
    }
    child = pexpect.spawn(
        sys.executable,
        ["-m", "langchain_om.cli", "chat", "--db", str(db), "--scripted"],
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 200),
    )
    child.expect("you> ")
    return child


def test_chat_in_a_terminal_edits_lines_cancels_replies_and_exits_on_ctrl_d(
    tmp_path: Path,
) -> None:
    db = tmp_path / "tty.db"
    child = _spawn(db, delay=1.5)
    # Arrow keys edit the line: "helo", one step left, insert "l" -> "hello".
    child.send("helo" + LEFT + "l\r")
    child.expect(r"You said: hello\b")
    child.expect("you> ")
    # Up recalls the previous line (readline history).
    child.send(UP + "\r")
    child.expect(r"You said: hello\b")
    child.expect("you> ")
    # Ctrl-C while the model answers cancels that reply only; the spinner showed meanwhile.
    child.send("wait for me\r")
    child.expect(r"thinking +\d+\.\ds")
    child.send(CTRL_C)
    child.expect_exact(CANCELLED_REPLY)
    child.expect("you> ")
    # Ctrl-C at the prompt clears the line; the session goes on.
    child.send("half a line" + CTRL_C)
    child.expect("you> ")
    child.send("still here\r")
    child.expect("You said: still here")
    child.expect("you> ")
    child.send(CTRL_D)
    child.expect("bye")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    with ObservationalMemory.from_sqlite(str(db), model=memory_model()) as memory:
        snap = memory.status(thread_id="default")
        messages = memory.archived_messages("default") + snap.window
    turns = [(m.type, str(m.text)) for m in messages]
    cancelled = turns.index(("human", "wait for me"))
    assert turns[cancelled + 1] == ("ai", CANCELLED_REPLY), "the cancelled turn is closed"
    assert messages[cancelled + 1].response_metadata["langchain_om_cli"] == {"cancelled": True}
    assert [t for t, _ in turns] == ["human", "ai"] * 4, "every user turn has one answer"
