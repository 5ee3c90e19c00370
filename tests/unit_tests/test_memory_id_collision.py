"""A user message whose id is the memory message's own id stays in the window."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_om._plans.graph_state import (
    MEMORY_MESSAGE_ID,
    is_memory_message,
    memory_message_id,
    split_messages,
)
from tests.helpers import make_memory, visible_messages
from tests.lifecycle import door_step


def test_only_a_system_message_is_the_memory() -> None:
    assert not is_memory_message(HumanMessage("hi", id=MEMORY_MESSAGE_ID))
    assert is_memory_message(SystemMessage("memory", id=MEMORY_MESSAGE_ID))
    split = split_messages([HumanMessage("hi", id=MEMORY_MESSAGE_ID)])
    assert split.memory is None and len(split.window) == 1
    assert memory_message_id(split) == f"{MEMORY_MESSAGE_ID}~2"


@pytest.mark.parametrize("door", ["graph", "agent"])
def test_a_user_message_with_the_memory_id_never_vanishes(door: str) -> None:
    memory = make_memory(observation={"message_tokens": 150, "buffer_tokens": False})
    step = door_step(memory, door, "t", "u")  # type: ignore[arg-type]
    window: list[BaseMessage] = []
    record: Any = None
    sent: list[str] = []
    for i in range(6):
        mid = MEMORY_MESSAGE_ID if i == 2 else f"h{i}"
        sent.append(mid)
        window, record = step([HumanMessage(f"Turn {i}: the code is {4000 + i}. " * 4, id=mid)])
        archive = [m.id for m in memory.archived_messages("t", record=record)]
        shown = [m.id for m in visible_messages(window) if isinstance(m, HumanMessage)]
        assert [x for x in archive + shown if x in sent] == sent  # each exactly once, in order
    systems = [m for m in window if isinstance(m, SystemMessage)]
    assert len(systems) <= 1  # one memory message, never two
