"""Inside a graph run, memory keeps its archive in the store the graph runs with.

The graphs here are built the way LangGraph Platform loads them: exported without a
checkpointer or store, the memory built without storage, and the server's checkpointer and
store attached to the compiled graph at run time (``graph.copy(update=...)``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from langchain_om import (
    ObservationalMemory,
    ObservationalMemoryMiddleware,
)
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import (
    APP_OPTIONS,
    actor_reply,
    build_graph,
    expected_messages,
    lookup,
    thread_observer_reply,
    user_turn,
)

BUFFERED: dict[str, Any] = {
    "observation": {"message_tokens": 600, "buffer_tokens": 0.25},
    "reflection": {"observation_tokens": 500},
}


def platform_agent(memory: ObservationalMemory, actor: FunctionChatModel) -> Any:
    """A ``create_agent`` agent exported for the platform: no checkpointer, no store."""
    return create_agent(
        actor, [lookup, *memory.tools], middleware=[ObservationalMemoryMiddleware(memory)]
    )


def platform_graph(memory: ObservationalMemory, actor: FunctionChatModel) -> Any:
    """A ``StateGraph`` with memory, compiled without a checkpointer or store."""
    return build_graph(memory, actor, storage=False)


def served(graph: Any, store: InMemoryStore, saver: InMemorySaver) -> Any:
    """The compiled graph with the server's storage attached, as the platform runs it."""
    return graph.copy(update={"checkpointer": saver, "store": store})


def archive_in(store: InMemoryStore, thread_id: str) -> list[BaseMessage]:
    return ObservationalMemory(model=memory_model(), store=store).archived_messages(thread_id)


@pytest.mark.parametrize("door", ["agent", "graph"])
@pytest.mark.parametrize("options", [APP_OPTIONS, BUFFERED], ids=["sync", "buffered"])
def test_archive_lands_in_the_run_store(door: str, options: dict[str, Any]) -> None:
    memory = ObservationalMemory(model=memory_model(), **options)
    build = platform_agent if door == "agent" else platform_graph
    store, saver = InMemoryStore(), InMemorySaver()
    graph = served(build(memory, FunctionChatModel(function=actor_reply)), store, saver)
    cfg = {"configurable": {"thread_id": "plat"}}
    turns = 24
    for i in range(turns):
        graph.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
    memory.wait_for_background()
    state = graph.get_state(cfg).values
    record = state["om_record"]
    assert record["observed_message_count"] > 0
    stored = archive_in(store, "plat")
    assert len(stored) == record["observed_message_count"]
    window = [m for m in state["messages"] if m.type != "system"]
    assert len(stored) + len(window) == expected_messages(turns)
    # Nothing went to the memory's own (private) store.
    assert memory.store.search(("langchain_om",), limit=1) == []
    assert list(memory.store.list_namespaces()) == []


def test_async_agent_with_buffering_writes_chunks_to_the_run_store() -> None:
    memory = ObservationalMemory(model=memory_model(), **BUFFERED)
    store, saver = InMemoryStore(), InMemorySaver()
    agent = served(platform_agent(memory, FunctionChatModel(function=actor_reply)), store, saver)
    cfg = {"configurable": {"thread_id": "async-plat"}}

    async def run() -> None:
        for i in range(24):
            await agent.ainvoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
        await memory.await_for_background()

    asyncio.run(run())
    record = agent.get_state(cfg).values["om_record"]
    assert record["observed_message_count"] > 0
    assert len(archive_in(store, "async-plat")) == record["observed_message_count"]
    assert list(memory.store.list_namespaces()) == []
    assert list(store.list_namespaces())


def test_a_second_server_process_resumes_from_the_platform_storage() -> None:
    store, saver = InMemoryStore(), InMemorySaver()
    cfg = {"configurable": {"thread_id": "resume"}}
    first = ObservationalMemory(model=memory_model(), **APP_OPTIONS)
    agent = served(platform_agent(first, FunctionChatModel(function=actor_reply)), store, saver)
    for i in range(24):
        agent.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
    # A new worker: new memory (its own private store is empty), same platform storage.
    second = ObservationalMemory(model=memory_model(), **APP_OPTIONS)
    actor = FunctionChatModel(function=actor_reply)
    agent2 = served(platform_agent(second, actor), store, saver)
    agent2.invoke({"messages": [HumanMessage("And now?")]}, cfg)
    assert "<observations>" in actor.last_call.text
    assert (
        len(archive_in(store, "resume"))
        == agent2.get_state(cfg).values["om_record"]["observed_message_count"]
    )


def test_recall_tool_reads_the_run_store() -> None:
    memory = ObservationalMemory(model=memory_model(), retrieval=True, **APP_OPTIONS)
    results: list[dict[str, Any]] = []

    def reply(messages: list[BaseMessage], info: RecordedCall) -> AIMessage | str:
        last = messages[-1]
        if isinstance(last, ToolMessage) and last.name == "recall":
            results.append(json.loads(last.text))
            return "recalled"
        if isinstance(last, HumanMessage) and last.text == "recall please":
            args = {"mode": "messages", "anchor": "start"}
            return AIMessage("", tool_calls=[{"name": "recall", "args": args, "id": "r1"}])
        return actor_reply(messages, info)

    store, saver = InMemoryStore(), InMemorySaver()
    agent = served(platform_agent(memory, FunctionChatModel(function=reply)), store, saver)
    cfg = {"configurable": {"thread_id": "rec"}}
    for i in range(24):
        agent.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
    agent.invoke({"messages": [HumanMessage("recall please")]}, cfg)
    assert results, "the recall tool was not called"
    assert "Turn 0" in json.dumps(results[0])
    assert list(memory.store.list_namespaces()) == []


def test_outside_a_run_memory_uses_its_own_store() -> None:
    memory = ObservationalMemory(model=memory_model(), observation={"message_tokens": 50})
    memory.observe(thread_id="solo", messages=[HumanMessage("I live in Lisbon. " * 10)])
    assert [m.text for m in memory.archived_messages("solo")][0].startswith("I live in Lisbon")


def test_resource_scope_keeps_its_shared_log_in_the_run_store() -> None:
    memory = ObservationalMemory(
        model=FunctionChatModel(function=thread_observer_reply),
        scope="resource",
        observation={"message_tokens": 250, "buffer_tokens": False},
        reflection={"observation_tokens": 100_000},
    )
    store, saver = InMemoryStore(), InMemorySaver()
    agent = served(platform_agent(memory, FunctionChatModel(function=actor_reply)), store, saver)
    for thread in ("a", "b"):
        cfg = {"configurable": {"thread_id": thread, "resource_id": "zelda"}}
        for i in range(6):
            text = f"Zelda lives in Oslo, turn {i}. " + "and more about my week " * 6
            agent.invoke({"messages": [HumanMessage(text)]}, cfg)
    assert list(memory.store.list_namespaces()) == []
    assert list(store.list_namespaces())
    assert ObservationalMemory(model=memory_model(), store=store).archived_messages("a")
