"""A synchronous step waits a bounded time for memory's retries; background work may wait longer.

Under ``Retry-After: 60`` the retry policy would wait 60 s before each of three retries. A turn
the user waits for (an agent's model call, ``add_messages``, ``observe``) waits at most
``RetryPolicy.max_sync_wait`` seconds in total, over all its Observer, Reflector and extractor
calls; then the cycle fails, and the next turns back off (honouring ``Retry-After``) while
the background retries as the policy says.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel

from langchain_om import Extractor, ObservationalMemory, OMConfigError
from langchain_om.retry import DEFAULT_RETRY_POLICY, RetryPolicy
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model, rate_limit_error


class Waits:
    """The ``sleep`` memory is given: records what it was asked to wait."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)

    @property
    def total(self) -> float:
        return sum(self.seconds)


def _limited(messages: list[BaseMessage], info: RecordedCall) -> Any:
    raise rate_limit_error(retry_after=60)


def _memory(waits: Waits, **options: Any) -> ObservationalMemory:
    return ObservationalMemory(
        model=FunctionChatModel(function=_limited),
        sleep=waits,
        observation={"message_tokens": 300, "buffer_tokens": False, "failure_policy": "continue"},
        **options,
    )


def test_a_turn_under_retry_after_60_waits_at_most_the_sync_bound() -> None:
    waits = Waits()
    memory = _memory(waits)
    snap = memory.add_messages("t", [HumanMessage("I live in Lisbon. " * 80)])
    assert snap.window, "nothing was lost: the messages stay in the window"
    assert waits.total < 60, f"the turn waited {waits.seconds}"
    assert waits.total <= DEFAULT_RETRY_POLICY.max_sync_wait < 60


def test_the_bound_covers_every_call_of_the_turn_and_the_async_path() -> None:
    class Profile(BaseModel):
        city: str

    calls = {"n": 0}
    good = memory_model()
    assert good.function is not None

    def reply(messages: list[BaseMessage], info: RecordedCall) -> Any:
        calls["n"] += 1
        if info.structured_output is None and calls["n"] == 1:
            return good.function(messages, info)  # type: ignore[misc]
        raise rate_limit_error(retry_after=4)  # under the bound, but not three of them

    waits = Waits()
    policy = RetryPolicy(max_retries=3, max_sync_wait=10)
    memory = ObservationalMemory(
        model=FunctionChatModel(function=reply),
        sleep=waits,
        retry_policy=policy,
        observation={
            "message_tokens": 300,
            "buffer_tokens": False,
            "failure_policy": "continue",
            "extract": [Extractor("Profile", "City.", schema=Profile)],
        },
        reflection={"observation_tokens": 300},
    )
    asyncio.run(memory.aadd_messages("t", [HumanMessage("I live in Lisbon. " * 80)]))
    assert calls["n"] >= 3, "the extractor and the reflection were tried as well"
    assert waits.seconds and waits.total <= 10


def test_background_work_waits_as_the_policy_says() -> None:
    waits = Waits()
    memory = ObservationalMemory(
        model=FunctionChatModel(function=_limited),
        sleep=waits,
        observation={"message_tokens": 2_000, "buffer_tokens": 100},
        background="manual",
    )
    turn = [HumanMessage("I live in Lisbon. " * 40), AIMessage("Noted.")]
    memory.add_messages("t", [*turn, HumanMessage("And I like tea.")])
    assert waits.total == 0 and memory.background_running("t")
    memory.run_background()
    assert waits.seconds == [60.0] * DEFAULT_RETRY_POLICY.max_retries


def test_the_bound_is_validated() -> None:
    with pytest.raises(OMConfigError, match="max_sync_wait"):
        RetryPolicy(max_sync_wait=-1)
