"""Memory never forgets silently: an unusable Observer reply archives nothing and says why.

The scripted Observer here answers with nothing, then echoes its prompt, then works. Until it
works, every message stays in the window, a ``data-om-observation-failed`` event carries the
reason code (``empty``, ``echo``, ...) and later turns back off instead of retrying at once.
Runs offline in a second.

    python examples/bad_observer_replies.py
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om.events import OMEvent
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model

good = memory_model().function
assert good is not None
ECHO = "## Your Task\nExtract observations from the new messages.\n## New Messages to Observe\n"
bad_replies = ["", "", ECHO, ECHO]  # each cycle asks twice (the retry has a format reminder)


def observer(messages: list[BaseMessage], info: RecordedCall) -> Any:
    return bad_replies.pop(0) if bad_replies else good(messages, info)


now = [datetime(2026, 11, 30, 9, 0, tzinfo=UTC)]
reasons: list[str] = []


def on_event(event: OMEvent) -> None:
    if event.type == "data-om-observation-failed" and not getattr(event, "retrying", False):
        reasons.append(str(getattr(event, "reason", None)))


memory = ObservationalMemory(
    model=FunctionChatModel(function=observer),
    observation={"message_tokens": 120, "buffer_tokens": False, "failure_policy": "continue"},
    clock=lambda: now[0],
)
memory.on_debug_event = on_event
for i in range(8):
    now[0] += timedelta(minutes=10)  # long enough for the backoff after a failure to pass
    turn = [
        HumanMessage(f"Turn {i}: my locker code is {7100 + i}, keep it in mind. " * 3),
        AIMessage(f"Noted the code {7100 + i}."),
    ]
    snap = memory.add_messages("demo", turn)
    archived = len(memory.archived_messages("demo"))
    print(f"turn {i}: {len(snap.window)} messages in the window, {archived} archived")
print(f"failed cycles and their reasons: {reasons}")
print(f"observations now: {snap.observations.count(chr(10)) + 1} lines")
