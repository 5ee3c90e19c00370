"""Context-overflow recovery, provider-reported usage, and actor_model per front door."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

from langchain_om import (
    ObservationalChatMessageHistory,
    ObservationalMemory,
    add_observational_memory,
)
from langchain_om._core.tokens import TokenCounter
from langchain_om._core.usage import reported_window_tokens
from langchain_om.errors import OMConfigError
from langchain_om.events import ContextOverflowEvent, ObservationEndEvent, OMEvent, StatusEvent
from langchain_om.testing import FunctionChatModel, RecordedCall, ScriptedChatModel
from tests.helpers import archived_ids, build_agent, make_memory

FACT = "My cousin number {i} lives in city {i} and works as a baker there. "


class _Overflowing:
    """An agent model that overflows once its prompt holds more than ``limit`` messages."""

    def __init__(self, limit: int, *, times: int = 1) -> None:
        self.limit, self.times = limit, times
        self.sizes: list[int] = []

    def __call__(self, messages: list[BaseMessage], info: RecordedCall) -> str:
        conversation = [m for m in messages if m.type != "system"]
        self.sizes.append(len(conversation))
        if len(conversation) > self.limit and self.times > 0:
            self.times -= 1
            raise ContextOverflowError("prompt is too long: maximum context length exceeded")
        return "Noted."


def _agent(memory: ObservationalMemory, actor: FunctionChatModel) -> Any:
    return build_agent(memory, actor, tools=[])


def _events(memory: ObservationalMemory) -> list[OMEvent]:
    events: list[OMEvent] = []
    memory.on_debug_event = events.append
    return events


CONFIG: Any = {"configurable": {"thread_id": "t1"}}


def _turns(n: int) -> list[HumanMessage]:
    return [HumanMessage(FACT.format(i=i)) for i in range(n)]


def test_overflow_is_observed_away_and_the_call_retried_once() -> None:
    memory = make_memory()  # message_tokens 2 000: these turns never reach it
    events = _events(memory)
    overflowing = _Overflowing(limit=8)
    agent = _agent(memory, FunctionChatModel(function=overflowing))
    for message in _turns(4):
        agent.invoke({"messages": [message]}, CONFIG)
    assert not any(isinstance(e, ObservationEndEvent) for e in events)
    out = agent.invoke({"messages": [HumanMessage("And my aunt?")]}, CONFIG)
    assert out["messages"][-1].content == "Noted."
    # The call with 9 messages overflowed; the retry saw only the current turn.
    assert overflowing.sizes[-2:] == [9, 1]
    (report,) = [e for e in events if isinstance(e, ContextOverflowEvent)]
    assert report.removed_messages == 8 and report.tokens_after < report.tokens_before
    assert [isinstance(e, ObservationEndEvent) for e in events].count(True) == 1
    assert len(archived_ids(memory, "t1")) == 8
    state = agent.get_state(CONFIG).values
    assert [m.content for m in state["messages"]] == ["And my aunt?", "Noted."]
    assert state["om_record"]["observation_tokens"] > 0


def test_overflow_recovery_async() -> None:
    memory = make_memory()
    events = _events(memory)
    overflowing = _Overflowing(limit=4)
    agent = _agent(memory, FunctionChatModel(function=overflowing))

    async def run() -> Any:
        for message in _turns(3):
            out = await agent.ainvoke({"messages": [message]}, CONFIG)
        return out

    out = asyncio.run(run())
    assert out["messages"][-1].content == "Noted."
    assert overflowing.sizes[-2:] == [5, 1]
    (report,) = [e for e in events if isinstance(e, ContextOverflowEvent)]
    assert report.removed_messages == 4


def test_overflow_with_nothing_to_free_propagates() -> None:
    memory = make_memory()
    events = _events(memory)
    overflowing = _Overflowing(limit=0)
    agent = _agent(memory, FunctionChatModel(function=overflowing))
    with pytest.raises(ContextOverflowError):
        agent.invoke({"messages": [HumanMessage("a single huge message")]}, CONFIG)
    assert overflowing.sizes == [1]  # not retried: the window could not shrink
    (report,) = [e for e in events if isinstance(e, ContextOverflowEvent)]
    assert report.removed_messages == 0


def test_overflow_is_retried_only_once() -> None:
    memory = make_memory()
    overflowing = _Overflowing(limit=0, times=99)
    agent = _agent(memory, FunctionChatModel(function=overflowing))
    overflowing.times = 0
    for message in _turns(2):
        agent.invoke({"messages": [message]}, CONFIG)
    overflowing.times = 99
    with pytest.raises(ContextOverflowError):
        agent.invoke({"messages": [HumanMessage("again")]}, CONFIG)
    assert overflowing.sizes[-2:] == [5, 1]  # one retry, then the error


# -- provider-reported usage --------------------------------------------------------------------


def _reply(total: int, provider: str = "openai") -> AIMessage:
    return AIMessage(
        "ok",
        usage_metadata={"input_tokens": total - 10, "output_tokens": 10, "total_tokens": total},
        response_metadata={"model_provider": provider},
    )


def test_reported_window_tokens() -> None:
    counter = TokenCounter()
    tail = [HumanMessage("next question")]
    window = [HumanMessage("hi"), _reply(5_000), *tail]
    got = reported_window_tokens(
        window, counter.count_messages, actor_model="openai/gpt-5", logged_tokens=1_000
    )
    assert got == 4_000 + counter.count_messages(tail)
    other = reported_window_tokens(
        window, counter.count_messages, actor_model="anthropic/claude-sonnet-4-5", logged_tokens=0
    )
    assert other == 0  # another provider's usage says nothing about this model's prompt
    plain = [HumanMessage("hi"), AIMessage("ok")]
    assert (
        reported_window_tokens(plain, counter.count_messages, actor_model=None, logged_tokens=0)
        == 0
    )


@pytest.mark.parametrize("use", [True, False])
def test_usage_metadata_triggers_but_does_not_inflate_the_status(use: bool) -> None:
    memory = make_memory(
        observation={"message_tokens": 2_000, "buffer_tokens": False, "use_usage_metadata": use}
    )
    window: list[BaseMessage] = [
        HumanMessage("I am planning a trip to Lisbon with my sister Ana."),
        _reply(9_000),
        HumanMessage("We land in Lisbon on Friday and stay four nights."),
    ]
    outcome = memory.step(thread_id="t", window=window, actor_model="openai/gpt-5")
    assert outcome.observed is use
    estimate = memory.counter.count_messages(window)
    assert estimate < 2_000
    if not use:
        assert outcome.status is not None and outcome.status.messages.tokens == estimate


# -- actor_model per front door -----------------------------------------------------------------


def _fraction_memory() -> ObservationalMemory:
    return make_memory(observation={"message_tokens": ("fraction", 0.5), "buffer_tokens": False})


def _graph(memory: ObservationalMemory, **kwargs: Any) -> Any:
    actor = ScriptedChatModel(script=["ok"], repeat_last=True)
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda s: {"messages": [actor.invoke(s["messages"])]})
    builder.add_edge(START, "model")
    add_observational_memory(builder, memory, **kwargs)
    return builder.compile(checkpointer=memory.checkpointer, store=memory.store)


def _thresholds(memory: ObservationalMemory) -> list[int]:
    seen: list[int] = []
    memory.on_debug_event = lambda e: (
        seen.append(e.messages.threshold) if isinstance(e, StatusEvent) else None
    )
    return seen


def test_graph_nodes_take_actor_model_from_the_argument_or_the_run_config() -> None:
    profiled = ScriptedChatModel(script=["x"], profile={"max_input_tokens": 8_000})
    memory = _fraction_memory()
    seen = _thresholds(memory)
    _graph(memory, actor_model=profiled).invoke({"messages": [HumanMessage("hi")]}, CONFIG)
    assert seen == [4_000]
    wider = ScriptedChatModel(script=["x"], profile={"max_input_tokens": 20_000})
    config: Any = {"configurable": {"thread_id": "t2", "actor_model": wider}}
    _graph(memory, actor_model=profiled).invoke({"messages": [HumanMessage("hi")]}, config)
    assert seen == [4_000, 10_000]  # the run config wins
    with pytest.raises(OMConfigError, match="actor_model"):
        _graph(_fraction_memory()).invoke({"messages": [HumanMessage("hi")]}, CONFIG)


def test_history_adapter_takes_actor_model() -> None:
    profiled = ScriptedChatModel(script=["x"], profile={"max_input_tokens": 8_000})
    memory = _fraction_memory()
    seen = _thresholds(memory)
    history = ObservationalChatMessageHistory(memory, thread_id="h", actor_model=profiled)
    history.add_messages([HumanMessage("hi"), AIMessage("hello")])
    assert seen == [4_000]
    bare = ObservationalChatMessageHistory(_fraction_memory(), thread_id="h")
    with pytest.raises(OMConfigError, match="actor_model"):
        bare.add_messages([HumanMessage("hi")])
