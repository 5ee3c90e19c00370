"""What a step does in the foreground: count new messages once, write and read only what changed.

A turn's own work (``benchmarks/bookkeeping.py``) stays small because a step that finds
nothing due counts each new message once and the window in one pass, reads no store for a
record this process holds, writes the record only when more than its stamps changed, and
holds no graph state once the model call is done.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import _no_op_stream_writer
from langgraph.store.base import GetOp, Op, Result
from langgraph.store.memory import InMemoryStore

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om._core import group_keys
from langchain_om._core.group_keys import stored_record
from langchain_om._core.render import MemoryContext
from langchain_om._core.tokens import TokenCounter
from langchain_om._plans import cycles
from langchain_om._plans import turn as turn_module
from langchain_om._plans.graph_state import (
    OM_ACTIVITY_KEY,
    OM_STATE_KEY,
    record_update,
    state_update,
    stream_emitter,
)
from langchain_om.testing import FunctionChatModel, memory_model
from tests.helpers import Clock

CFG: Any = {"configurable": {"thread_id": "t"}}
QUIET: dict[str, Any] = {"observation": {"message_tokens": 100_000, "buffer_tokens": False}}
"""Options under which no turn of these tests observes."""


class CountingStore(InMemoryStore):
    """An in-memory store that keeps the ops of every batch it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[Op] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.ops.extend(ops)
        return super().batch(ops)

    def take(self) -> list[Op]:
        out, self.ops = self.ops, []
        return out


class CountingCounter(TokenCounter):
    """The heuristic counter, noting each text it tokenizes and each pass over a window."""

    def __init__(self) -> None:
        super().__init__(source="heuristic", provider="openai")  # a provider: never re-bound
        self.texts: list[str] = []
        self.passes = 0

    def count_text(self, text: str) -> int:
        self.texts.append(text)
        return super().count_text(text)

    def message_counts(self, messages: Sequence[BaseMessage]) -> list[int] | None:
        self.passes += 1
        return super().message_counts(messages)


def _agent(memory: ObservationalMemory, store: Any = None) -> Any:
    return create_agent(
        FunctionChatModel(function=lambda m, i: f"answer {i.index}: " + "fine " * 12),
        [],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=store if store is not None else memory.store,
    )


def _turn(agent: Any, i: int) -> dict[str, Any]:
    out: dict[str, Any] = agent.invoke(
        {"messages": [HumanMessage(f"turn {i}: " + "words " * 20, id=f"u{i}")]}, CFG
    )
    return out


def test_each_new_message_is_tokenized_once_and_the_window_counted_in_one_pass() -> None:
    counter = CountingCounter()
    memory = ObservationalMemory(model=memory_model(), token_counter=counter, **QUIET)
    agent = _agent(memory)
    tokenized, passes = [], []
    for i in range(6):
        counter.texts, counter.passes = [], 0
        _turn(agent, i)
        tokenized.append(counter.texts)
        passes.append(counter.passes)
    # the first turn counts its user message; every later one the last reply and the new
    # user message, however long the window has grown (12 messages at the last turn)
    assert [len(t) for t in tokenized] == [1, 2, 2, 2, 2, 2]
    assert tokenized[3] == ["answer 2: " + "fine " * 12, "turn 3: " + "words " * 20]
    assert passes == [1] * 6


def test_a_counter_that_counts_lists_its_own_way_is_asked_for_lists() -> None:
    class PerList(TokenCounter):
        def count_messages(self, messages: Sequence[BaseMessage]) -> int:
            return 1_000 * len(messages)

    counter = PerList(source="heuristic", provider="openai")
    assert counter.message_counts([HumanMessage("hi")]) is None
    memory = ObservationalMemory(model=memory_model(), token_counter=counter, **QUIET)
    window = [HumanMessage("a", id="a"), AIMessage("b", id="b"), HumanMessage("c", id="c")]
    outcome = memory.step(thread_id="t", window=window)
    assert outcome.status is not None and outcome.status.messages.tokens == 3_000


def test_a_window_pass_adds_up_to_the_count_of_the_list() -> None:
    counter = TokenCounter(source="heuristic")
    messages: list[BaseMessage] = [
        HumanMessage("plain text", id="h"),
        AIMessage("", id="c", tool_calls=[{"name": "f", "args": {"q": "x"}, "id": "call-1"}]),
        ToolMessage("result " * 9, tool_call_id="call-1", id="r"),
        HumanMessage([{"type": "text", "text": "two"}, {"type": "text", "text": "parts"}]),
        AIMessage("named", name="agent", id="n"),
    ]
    counts = counter.message_counts(messages)
    assert counts is not None and len(counts) == len(messages)
    assert counter.total(counts) == counter.count_messages(messages)
    assert [counter.count_messages([m]) for m in messages] == [counter.total([n]) for n in counts]
    assert counter.total([]) == counter.count_messages([]) == 0


def test_a_turn_with_nothing_due_reads_and_writes_no_store() -> None:
    store = CountingStore()
    memory = ObservationalMemory(model=memory_model(), store=store, **QUIET)
    agent = _agent(memory, store)
    for i in range(3):
        _turn(agent, i)
    store.take()
    _turn(agent, 3)
    assert store.take() == []


def test_a_record_whose_groups_this_process_lacks_is_read_from_the_store() -> None:
    store = CountingStore()
    memory = ObservationalMemory(
        model=memory_model(),
        store=store,
        observation={"message_tokens": 120, "buffer_tokens": False},
    )
    agent = _agent(memory, store)
    for i in range(6):
        _turn(agent, i)
    state = agent.get_state(CFG).values
    keys = state[OM_STATE_KEY]["group_keys"]
    assert keys, "the turns observed: the record names groups"
    store.take()
    assert memory.read_state(state)["groups"]  # cached: no store read
    assert store.take() == []
    group_keys._groups.clear()  # as in another process, or after a restart
    record = memory.read_state(state)
    reads = store.take()
    assert {op.key for op in reads if isinstance(op, GetOp)} == set(keys)
    assert len(record["groups"]) == len(keys)


def test_a_step_that_only_stamps_writes_the_activity_key_alone() -> None:
    clock = Clock()
    memory = ObservationalMemory(model=memory_model(), clock=clock, **QUIET)
    agent = _agent(memory)
    for i in range(2):
        _turn(agent, i)
    state = agent.get_state(CFG).values
    window = state["messages"]
    record = memory.read_state(state)
    outcome = memory.step(
        thread_id="t", window=window, record=record, actor_model=record["last_actor_model"]
    )
    assert outcome.stamps_only
    # at the same instant nothing changed at all: nothing is written
    assert state_update(outcome, window, state=state, restamps=False) == {}
    clock.now += timedelta(minutes=5)
    later = memory.step(
        thread_id="t", window=window, record=record, actor_model=record["last_actor_model"]
    )
    assert later.stamps_only
    update = state_update(later, window, state=state, restamps=False)
    assert update == {OM_ACTIVITY_KEY: {"last_activity_at": later.record["last_activity_at"]}}
    # another agent model is a change of the record: it is written
    changed = memory.step(thread_id="t", window=window, record=record, actor_model="other/m")
    assert not changed.stamps_only
    written = state_update(changed, window, state=state, restamps=False)
    assert written[OM_STATE_KEY]["last_actor_model"] == "other/m"


def test_a_stamped_record_held_inline_is_still_rewritten_by_key() -> None:
    record: dict[str, Any] = {
        "thread_id": "t",
        "groups": [{"text": "* 🔴 (09:00) user likes tea"}],
        "observation_tokens": 10,
        "last_activity_at": "2026-01-01T09:05:00+00:00",
    }
    inline = {OM_STATE_KEY: {**record, "last_activity_at": "2026-01-01T09:00:00+00:00"}}
    update = record_update(record, inline, stamps_only=True)
    assert update[OM_STATE_KEY] == stored_record(record)  # the state moves to keys
    keyed = {OM_STATE_KEY: stored_record(record), OM_ACTIVITY_KEY: {"last_activity_at": "x"}}
    assert record_update(record, keyed, stamps_only=True) == {
        OM_ACTIVITY_KEY: {"last_activity_at": record["last_activity_at"]}
    }


def test_memory_holds_no_graph_state_once_the_model_call_is_done() -> None:
    class Watch(AgentMiddleware[Any, Any]):
        """Outside memory: notes the graph state's messages of every model call."""

        def __init__(self) -> None:
            super().__init__()
            self.seen: list[weakref.ref[BaseMessage]] = []

        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            self.seen.extend(weakref.ref(m) for m in request.state["messages"])
            return handler(request)

    watch = Watch()
    memory = ObservationalMemory(model=memory_model(), checkpointer=InMemorySaver(), **QUIET)
    agent = create_agent(
        FunctionChatModel(function=lambda m, i: f"answer {i.index}"),
        [],
        middleware=[watch, ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )
    for i in range(3):
        _turn(agent, i)
    gc.collect()
    assert len(watch.seen) == 1 + 3 + 5  # each turn's state: the window so far
    assert all(ref() is None for ref in watch.seen)


def _status_counting_agent(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[ObservationalMemory, Any, list[int]]:
    """A quiet memory's agent, and a list noting each status event its steps build."""
    built: list[int] = []
    real = cycles.status_event

    def counting(*args: Any, **kwargs: Any) -> Any:
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(turn_module, "status_event", counting)
    memory = ObservationalMemory(model=memory_model(), **QUIET)
    agent = create_agent(
        FunctionChatModel(function=lambda m, i: "ok"),
        [],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=InMemorySaver(),
    )
    return memory, agent, built


def test_a_status_nobody_hears_is_not_built_and_one_streamed_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory, agent, built = _status_counting_agent(monkeypatch)
    agent.invoke({"messages": [HumanMessage("hi")]}, CFG)
    assert built == []  # no stream, no on_debug_event: nothing would hear it
    streamed = agent.stream(
        {"messages": [HumanMessage("again")]}, CFG, stream_mode=["custom", "updates"]
    )
    parts: list[Any] = [part for mode, part in streamed if mode == "custom"]
    assert built == [1]
    assert [p["type"] for p in parts if p["type"] == "data-om-status"] == ["data-om-status"]
    heard: list[Any] = []
    memory.on_debug_event = heard.append
    agent.invoke({"messages": [HumanMessage("third")]}, CFG)
    assert built == [1, 1] and [e.type for e in heard] == ["data-om-status"]


def test_an_unheard_status_is_built_when_the_caller_reads_it() -> None:
    memory = ObservationalMemory(model=memory_model(), **QUIET)
    out = memory.step(thread_id="t", window=[HumanMessage("hi", id="h")])
    assert out.status is not None and out.status.messages.tokens > 0
    assert out.status is out.status  # built once


def test_only_a_writer_that_does_nothing_is_left_unheard() -> None:
    def silent(_: Any) -> None:
        pass

    assert stream_emitter(None) is None
    assert stream_emitter(_no_op_stream_writer) is None
    assert stream_emitter(silent) is None
    heard: list[Any] = []
    emit = stream_emitter(heard.append)
    assert emit is not None

    def prints(part: Any) -> None:
        print(part)

    assert stream_emitter(prints) is not None
    assert stream_emitter(lambda part: heard.append(part)) is not None


async def test_the_async_door_builds_a_status_only_when_heard_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, agent, built = _status_counting_agent(monkeypatch)
    await agent.ainvoke({"messages": [HumanMessage("hi")]}, CFG)
    assert built == []
    streamed = agent.astream(
        {"messages": [HumanMessage("again")]}, CFG, stream_mode=["custom", "updates"]
    )
    parts: list[Any] = [part async for mode, part in streamed if mode == "custom"]
    assert built == [1]
    assert [p["type"] for p in parts if p["type"] == "data-om-status"] == ["data-om-status"]


def _request(system: SystemMessage | None) -> ModelRequest:
    return ModelRequest(
        model=FunctionChatModel(function=lambda m, i: "ok"), messages=[], system_message=system
    )


def _texts(message: SystemMessage) -> list[str]:
    return [block["text"] for block in message.content]  # type: ignore[index]


def test_an_unchanged_memory_context_sends_the_system_message_built_for_it() -> None:
    middleware = ObservationalMemoryMiddleware(ObservationalMemory(model=memory_model(), **QUIET))
    own = SystemMessage("Be brief.")
    context = MemoryContext(blocks=["<observations>a</observations>", "<hints>b</hints>"])
    first = middleware._system_message(context, _request(own))
    assert _texts(first) == [
        "Be brief.",
        "\n\n<observations>a</observations>",
        "\n\n<hints>b</hints>",
    ]
    assert middleware._system_message(context, _request(own)) is first
    # another context, or another system message of the agent's, is a message of its own
    changed = MemoryContext(blocks=["<observations>c</observations>"])
    assert _texts(middleware._system_message(changed, _request(own))) == [
        "Be brief.",
        "\n\n<observations>c</observations>",
    ]
    alone = middleware._system_message(context, _request(None))
    assert _texts(alone) == ["<observations>a</observations>", "\n\n<hints>b</hints>"]


def test_a_system_message_changed_in_place_is_built_again() -> None:
    middleware = ObservationalMemoryMiddleware(ObservationalMemory(model=memory_model(), **QUIET))
    own = SystemMessage(content=[{"type": "text", "text": "Be brief."}])
    context = MemoryContext(blocks=["<observations>a</observations>"])
    sent = middleware._system_message(context, _request(own))
    expected = _texts(sent)
    # a later middleware appends to the message it was handed: the next call is not affected
    sent.content.append({"type": "text", "text": "appended"})  # type: ignore[union-attr]
    again = middleware._system_message(context, _request(own))
    assert again is not sent and _texts(again) == expected
    again.id = "set-by-someone"
    assert _texts(middleware._system_message(context, _request(own))) == expected
    # the agent's own system message changed in place: the change is sent
    own.content.append({"type": "text", "text": "Use metric units."})  # type: ignore[union-attr]
    assert _texts(middleware._system_message(context, _request(own))) == [
        "Be brief.",
        "Use metric units.",
        "\n\n<observations>a</observations>",
    ]
    own.content = "Be very brief."
    assert _texts(middleware._system_message(context, _request(own)))[0] == "Be very brief."


def test_a_block_changed_in_place_is_built_again() -> None:
    middleware = ObservationalMemoryMiddleware(ObservationalMemory(model=memory_model(), **QUIET))
    own = SystemMessage(content=[{"type": "text", "text": "Be brief."}])
    context = MemoryContext(blocks=["<observations>a</observations>"])
    sent = middleware._system_message(context, _request(own))
    sent.content[-1]["cache_control"] = {"type": "ephemeral"}  # type: ignore[index]
    again = middleware._system_message(context, _request(own))
    assert "cache_control" not in again.content[-1]
    own.content[0]["text"] = "Be very brief."  # type: ignore[index]
    assert _texts(middleware._system_message(context, _request(own)))[0] == "Be very brief."
