"""``read_only=True``: the memory context is shown; nothing is observed, reflected or written."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.store.base import Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

from langchain_om import ObservationalMemory, OMUsageError
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import APP_OPTIONS, FIXED, build_agent, user_turn


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
    seeded = agent.get_state(config).values["om_record"]
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
    assert state["om_record"]["groups"] == seeded["groups"]
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
