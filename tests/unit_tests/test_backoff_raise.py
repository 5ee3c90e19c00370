"""Backoff across turns also under ``failure_policy="raise"`` (a raised turn saves no state)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om.errors import CycleFailedError
from langchain_om.testing import FunctionChatModel, memory_model, rate_limit_error
from tests.helpers import Clock, archived_ids


def _turn(i: int) -> list[BaseMessage]:
    return [
        HumanMessage(f"Turn {i}: the budget for the move is {1000 + i} EUR. " * 8, id=f"h{i}"),
        AIMessage(f"Noted {i}.", id=f"a{i}"),
    ]


def test_a_raised_429_is_damped_across_turns() -> None:
    clock = Clock()
    good = memory_model().function
    assert good is not None
    calls: list[int] = []
    storm = {"on": True}

    def observer(messages: list[BaseMessage], info: Any) -> Any:
        calls.append(1)
        if storm["on"]:
            raise rate_limit_error(retry_after=60)
        return good(messages, info)

    memory = ObservationalMemory(
        model=FunctionChatModel(function=observer),
        observation={
            "message_tokens": 100,
            "buffer_tokens": False,
            "failure_policy": "raise",
            "block_after": 10.0,
        },
        clock=clock,
        sleep=lambda s: None,
    )
    with pytest.raises(CycleFailedError):
        memory.add_messages("t", _turn(0))
    first = len(calls)
    assert first >= 1
    # Within Retry-After, the next turns neither call the Observer nor raise.
    for i in range(1, 3):
        clock.now += timedelta(seconds=5)
        memory.add_messages("t", _turn(i))
    assert len(calls) == first
    # After the delay the Observer is tried again; it answers now, and the backoff is cleared.
    storm["on"] = False
    clock.now += timedelta(seconds=120)
    memory.add_messages("t", _turn(3))
    assert len(calls) > first
    assert archived_ids(memory, "t")[:2] == ["h0", "a0"]
    clock.now += timedelta(seconds=1)
    storm["on"] = True
    with pytest.raises(CycleFailedError):  # no stale backoff: a new failure is tried at once
        for i in range(4, 12):
            memory.add_messages("t", _turn(i))
