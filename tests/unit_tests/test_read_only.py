"""``read_only=True``: the memory context is shown; nothing is observed, reflected or written."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.store.base import Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

from langchain_om import ObservationalMemory, OMUsageError
from langchain_om._core.group_keys import GROUP_KEYS
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import APP_OPTIONS, FIXED, build_agent, build_graph, user_turn


class CountingStore(InMemoryStore):
    """An in-memory store that counts the writes it is asked to run."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def _count(self, ops: Iterable[Op]) -> list[Op]:
        listed = list(ops)
        self.writes += sum(isinstance(op, PutOp) for op in listed)
        return listed

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return super().batch(self._count(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await super().abatch(self._count(ops))


def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
    return f"Answer {info.index}: " + "noted and more " * 6


def test_fifty_read_only_turns_show_memory_and_change_nothing() -> None:
    store = CountingStore()
    writer_model = memory_model()
    common: dict[str, Any] = {"store": store, "clock": lambda: FIXED, "sleep": lambda s: None}
    writer = ObservationalMemory(model=writer_model, **APP_OPTIONS, **common)
    actor = FunctionChatModel(function=reply)
    agent = build_agent(writer, actor)
    config = {"configurable": {"thread_id": "t"}}
    for i in range(12):
        agent.invoke({"messages": [HumanMessage(f"Turn {i}: I live in Lisbon " * 4)]}, config)
    seeded = writer.read_state(agent.get_state(config).values)
    assert seeded["groups"], "the writer observed something to show"

    reader_model = memory_model()
    reader = ObservationalMemory(
        model=reader_model,
        read_only=True,
        checkpointer=writer.checkpointer,
        **APP_OPTIONS,
        **common,
    )
    reader_actor = FunctionChatModel(function=reply)
    reader_agent = build_agent(reader, reader_actor)
    writes_before = store.writes
    for i in range(50):
        reader_agent.invoke({"messages": [HumanMessage(user_turn(i))]}, config)
    reader.close()
    assert reader_model.call_count == 0
    assert store.writes == writes_before
    state = reader_agent.get_state(config).values
    assert reader.read_state(state)["groups"] == seeded["groups"]
    assert reader_actor.call_count >= 50
    first_group = seeded["groups"][0]["text"].splitlines()[-1]
    for call in (reader_actor.calls[0], reader_actor.calls[-1]):
        system = call.messages[0]
        assert system.type == "system" and first_group in system.text
    assert len([m for m in state["messages"] if m.type == "human"]) >= 50


def test_read_only_standalone_calls_write_nothing() -> None:
    store = CountingStore()
    model = memory_model()
    memory = ObservationalMemory(
        model=model, store=store, read_only=True, observation={"message_tokens": 50}
    )
    snap = memory.observe(thread_id="t", messages=[HumanMessage("I live in Lisbon " * 30)])
    memory.reflect(thread_id="t")
    assert model.call_count == 0 and store.writes == 0
    assert snap.record["observed_message_count"] == 0
    assert not memory.config.buffering_enabled
    with pytest.raises(OMUsageError, match="read_only"):
        memory.forget(thread_id="t")


def test_a_second_agent_reads_a_stored_thread_from_a_fresh_state() -> None:
    store = CountingStore()
    common: dict[str, Any] = {"store": store, "clock": lambda: FIXED, "sleep": lambda s: None}
    writer = ObservationalMemory(model=memory_model(), **APP_OPTIONS, **common)
    for i in range(8):  # the user's memory, written by standalone calls
        writer.add_messages("maya", [HumanMessage(f"Turn {i}: I live in Lisbon " * 20)])
    first = writer.status(thread_id="maya").record
    assert first["groups"], "the writer observed something to show"

    reader_model = memory_model()
    reader = ObservationalMemory(model=reader_model, read_only=True, **APP_OPTIONS, **common)
    actor = FunctionChatModel(function=reply)
    agent = build_agent(reader, actor)  # its own checkpointer: a fresh state, no record
    config = {"configurable": {"thread_id": "maya"}}
    writes = store.writes
    agent.invoke({"messages": [HumanMessage("Where do I live?")]}, config)
    assert store.writes == writes
    assert first["groups"][0]["text"].splitlines()[-1] in actor.last_call.messages[0].text
    assert reader.read_state(agent.get_state(config).values)["record_id"] == first["record_id"]

    # the user's memory grows; the reader's next turn shows the stored record, not its copy
    for i in range(8, 16):
        writer.add_messages("maya", [HumanMessage(f"Turn {i}: I moved to Porto " * 20)])
    grown = writer.status(thread_id="maya").record
    assert len(grown["groups"]) > len(first["groups"])
    assert store.writes > writes
    writes = store.writes
    agent.invoke({"messages": [HumanMessage("And now?")]}, config)
    assert grown["groups"][-1]["text"].splitlines()[-1] in actor.last_call.messages[0].text
    assert reader_model.call_count == 0 and store.writes == writes


def test_a_fresh_state_of_another_resource_is_refused() -> None:
    store = InMemoryStore()
    writer = ObservationalMemory(model=memory_model(), store=store, **APP_OPTIONS)
    writer.add_messages("maya", [HumanMessage("I live in Lisbon " * 40)], resource_id="u1")
    reader = ObservationalMemory(model=memory_model(), store=store, read_only=True, **APP_OPTIONS)
    agent = build_agent(reader, FunctionChatModel(function=reply))
    config = {"configurable": {"thread_id": "maya", "resource_id": "u2"}}
    with pytest.raises(OMUsageError, match="u1|resource"):
        agent.invoke({"messages": [HumanMessage("Where do I live?")]}, config)


@pytest.mark.parametrize("door", [build_agent, build_graph], ids=["agent", "graph"])
def test_a_reader_on_the_writers_thread_leaves_the_writers_record_as_it_is(door: Any) -> None:
    store = InMemoryStore()
    common: dict[str, Any] = {"store": store, "clock": lambda: FIXED, "sleep": lambda s: None}
    writer = ObservationalMemory(model=memory_model(), **APP_OPTIONS, **common)
    agent = door(writer, FunctionChatModel(function=reply))
    config = {"configurable": {"thread_id": "t"}}
    for i in range(12):
        agent.invoke({"messages": [HumanMessage(f"Turn {i}: I live in Lisbon " * 4)]}, config)
    written = agent.get_state(config).values["om_record"]
    assert GROUP_KEYS in written and "groups" not in written  # the log by key, in the store
    reader = ObservationalMemory(
        model=memory_model(),
        read_only=True,
        checkpointer=writer.checkpointer,
        **APP_OPTIONS,
        **common,
    )
    reader_agent = door(reader, FunctionChatModel(function=reply))
    for i in range(3):
        reader_agent.invoke({"messages": [HumanMessage(user_turn(i))]}, config)
    assert reader_agent.get_state(config).values["om_record"] == written
    # and the writer goes on from its own record
    agent.invoke({"messages": [HumanMessage("Back to the writer " * 20)]}, config)
    assert GROUP_KEYS in agent.get_state(config).values["om_record"]
    reader.close()
