"""The same memory on real PostgreSQL (PostgresSaver + PostgresStore)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import FunctionChatModel, memory_model
from tests.helpers import archived

pytestmark = pytest.mark.postgres


def test_agent_on_postgres_resumes_with_memory(postgres: tuple[Any, Any]) -> None:
    saver, store = postgres
    options: dict[str, Any] = {
        "model": memory_model(),
        "observation": {"message_tokens": 400, "buffer_tokens": False},
        "reflection": {"observation_tokens": 600},
    }
    thread = f"pg-{uuid.uuid4().hex[:8]}"
    cfg = {"configurable": {"thread_id": thread}}

    def build() -> tuple[ObservationalMemory, Any, FunctionChatModel]:
        memory = ObservationalMemory(store=store, checkpointer=saver, **options)
        actor = FunctionChatModel(function=lambda m, i: f"Answer {i.index}: " + "ok " * 20)
        agent = create_agent(
            actor,
            [],
            middleware=[ObservationalMemoryMiddleware(memory)],
            checkpointer=saver,
            store=store,
        )
        return memory, agent, actor

    memory, agent, _ = build()
    for i in range(40):
        agent.invoke({"messages": [HumanMessage(f"Turn {i}: " + "words " * 25)]}, cfg)
    state = agent.get_state(cfg).values
    record = state["om_record"]
    assert record["observed_message_count"] > 0
    stored = archived(memory, thread)
    assert len(stored) == record["observed_message_count"]
    assert len(stored) + len(state["messages"]) == 80
    assert stored[0].text.startswith("Turn 0:")

    # A fresh engine on the same database continues the thread with its memory.
    _, agent2, actor2 = build()
    agent2.invoke({"messages": [HumanMessage("And now?")]}, cfg)
    assert "<observations>" in actor2.last_call.text
    saver.delete_thread(thread)
