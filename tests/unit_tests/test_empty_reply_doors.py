"""An empty or echoing Observer reply never archives a message, on any front door.

Every front door (standalone engine, history adapter, ``create_agent`` middleware,
``StateGraph`` nodes), with buffering off and on: the Observer answers badly every time, the
turns go on (``failure_policy="continue"``), nothing is archived, every message stays in the
window, and the failure says why. A buffered chunk whose cycle failed is never activated.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om.events import OMEvent
from langchain_om.testing import FunctionChatModel
from tests.helpers import FIXED, archived_ids, visible_messages
from tests.lifecycle import Step, door_step

ECHO = "## Your Task\nExtract observations from the new messages.\n## New Messages to Observe\n"
REPLIES = {"empty": "", "empty-block": "<observations>\n</observations>", "echo": ECHO}
REASONS = {"empty": "empty", "empty-block": "empty", "echo": "echo"}
DOORS = ["standalone", "history", "agent", "graph"]


def _memory(reply: str, *, buffering: bool, events: list[OMEvent]) -> ObservationalMemory:
    observation: dict[str, Any] = {"message_tokens": 200, "failure_policy": "continue"}
    if not buffering:
        observation["buffer_tokens"] = False
    else:
        observation["buffer_tokens"] = 0.25
    memory = ObservationalMemory(
        model=FunctionChatModel(function=lambda messages, info: reply),
        observation=observation,
        reflection={"observation_tokens": 400},
        clock=lambda: FIXED,
        sleep=lambda s: None,
        background="manual",
    )
    memory.on_debug_event = events.append
    return memory


def _turn(i: int, door: str) -> list[BaseMessage]:
    turn: list[BaseMessage] = [
        HumanMessage(f"Turn {i}: my flat in Porto costs {900 + i} EUR a month. " * 3, id=f"h{i}")
    ]
    if door in ("standalone", "history"):
        turn.append(AIMessage(f"Noted the rent for turn {i}.", id=f"a{i}"))
    return turn


@pytest.mark.parametrize("buffering", [False, True], ids=["sync", "buffered"])
@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("kind", sorted(REPLIES))
def test_a_bad_reply_archives_nothing(kind: str, door: str, buffering: bool) -> None:
    events: list[OMEvent] = []
    memory = _memory(REPLIES[kind], buffering=buffering, events=events)
    step: Step
    if door == "standalone":

        def standalone(batch: list[BaseMessage]) -> tuple[list[BaseMessage], Any]:
            snap = memory.add_messages("t", batch)
            return list(snap.window), snap.record

        step = standalone
    else:
        step = door_step(memory, door, "t", "u")  # type: ignore[arg-type]
    sent: list[str] = []
    window: list[BaseMessage] = []
    for i in range(8):
        batch = _turn(i, door)
        sent.extend(m.id or "" for m in batch)
        window, record = step(batch)
        memory.run_background()
    assert archived_ids(memory, "t") == []
    humans = [m.id for m in visible_messages(window) if isinstance(m, HumanMessage)]
    assert humans == [s for s in sent if s.startswith("h")]  # every user message still shown
    assert record is None or record["observed_message_count"] == 0
    assert record is None or not record["groups"]
    failed = [
        e
        for e in events
        if e.type in ("data-om-observation-failed", "data-om-buffering-failed")
        and not getattr(e, "retrying", False)
    ]
    assert failed, "the failure was silent"
    assert {getattr(e, "reason", None) for e in failed} <= {REASONS[kind], "backoff"}
    assert not [e for e in events if e.type == "data-om-activation"]  # no failed chunk activated
    if buffering:
        assert any(e.type == "data-om-buffering-failed" for e in events)  # it did try to buffer
