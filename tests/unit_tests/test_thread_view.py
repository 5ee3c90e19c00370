"""``status()`` reads agent and graph threads from the checkpointer (any ``checkpoint_ns``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.errors import OMUsageError
from langchain_om.testing import FunctionChatModel, memory_model
from tests.helpers import APP_OPTIONS, actor_reply, build_agent, lookup, user_turn


def cfg(thread: str, **extra: Any) -> Any:
    return {"configurable": {"thread_id": thread, **extra}}


def test_status_of_an_agent_thread_comes_from_its_checkpoint() -> None:
    memory = ObservationalMemory(model=memory_model(), **APP_OPTIONS)
    agent = build_agent(memory, FunctionChatModel(function=actor_reply))
    for i in range(24):
        agent.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg("a", resource_id="u1"))
    record = agent.get_state(cfg("a")).values["om_record"]
    snap = memory.status(thread_id="a")
    assert snap.source == "checkpoint" and snap.checkpoint_id
    assert snap.record["observed_message_count"] == record["observed_message_count"] > 0
    assert snap.status.observations.tokens == record["observation_tokens"]
    with pytest.raises(OMUsageError, match="u1"):
        memory.status(thread_id="a", resource_id="someone-else")
    assert memory.list_threads() == ["a"]
    assert asyncio.run(memory.alist_threads()) == ["a"]
    # A standalone thread still comes from the store.
    memory.add_messages("solo", [("user", "hello")])
    assert memory.status(thread_id="solo").source == "store"
    assert memory.list_threads() == ["a", "solo"]


def test_an_agent_run_as_a_subgraph_is_found_in_its_checkpoint_ns() -> None:
    # memory_model() writes observation lines longer than these short turns: a log size that
    # lets its batches through the Observer's size cap (twice observation_tokens).
    options = {**APP_OPTIONS, "reflection": {"observation_tokens": 1_000}}
    memory = ObservationalMemory(model=memory_model(), **options)
    agent = create_agent(
        FunctionChatModel(function=actor_reply),
        [lookup],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=True,  # the subgraph keeps its state in the parent's checkpointer
    )
    parent = StateGraph(MessagesState)
    parent.add_node("assistant", agent)
    parent.add_edge(START, "assistant")
    app = parent.compile(checkpointer=memory.checkpointer)
    for i in range(24):
        app.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg("p"))
    snap = memory.status(thread_id="p")
    assert snap.source == "checkpoint"
    assert snap.record["observed_message_count"] > 0
