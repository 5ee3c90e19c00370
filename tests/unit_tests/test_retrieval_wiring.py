"""Retrieval wired through the engine: index writes, the middleware's tool, vector search."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.memory import InMemoryStore

from langchain_om import ObservationalMemory
from langchain_om._plans.storage import msgindex_ns, search_ns
from langchain_om.testing import FunctionChatModel, HashEmbeddings, RecordedCall
from tests.helpers import build_agent, make_memory


def vector_memory(**retrieval: Any) -> ObservationalMemory:
    """A memory whose store has a vector index over ``HashEmbeddings`` (64 dimensions)."""
    store = InMemoryStore(index={"embed": HashEmbeddings(dims=64), "dims": 64, "fields": ["text"]})
    return make_memory(
        store=store,
        observation={"message_tokens": 300, "buffer_tokens": False},
        retrieval={"vector": True, **retrieval},
    )


def test_observation_writes_the_message_index_and_search_documents() -> None:
    memory = vector_memory()
    msgs = [HumanMessage("My flight is TP1351 to Lisbon", id="m1"), AIMessage("Noted", id="m2")]
    memory.observe(thread_id="t", messages=msgs, resource_id="u")
    index = {i.key: i.value for i in memory.store.search(msgindex_ns("t"), limit=10)}
    assert index["m1"] == {"seq": 0, "branch": ""} and index["m2"] == {"seq": 1, "branch": ""}
    hits = memory.store.search(search_ns("u"), query="flight TP1351 Lisbon", limit=3)
    assert hits and hits[0].value["thread_id"] == "t"
    kinds = {h.value["kind"] for h in memory.store.search(search_ns("u"), limit=10)}
    assert kinds == {"message", "observation"}


def test_agent_gets_the_recall_tool_and_reads_the_archive() -> None:
    memory = vector_memory(scope="thread")
    assert [t.name for t in memory.tools] == ["recall"]

    def actor(messages: list[BaseMessage], info: RecordedCall) -> AIMessage | str:
        last = messages[-1]
        if isinstance(last, HumanMessage) and last.text.startswith("What was my flight"):
            call = {"name": "recall", "args": {"mode": "messages", "limit": 5}, "id": "r1"}
            return AIMessage("", tool_calls=[call])
        if isinstance(last, ToolMessage):
            found = json.loads(last.text)
            texts = " ".join(p["text"] for m in found["messages"] for p in m["parts"])
            return "It was TP1351." if "TP1351" in texts else "I do not know."
        return "Noted. " + "ok " * 30

    model = FunctionChatModel(function=actor)
    agent = build_agent(memory, model, tools=[])
    cfg: RunnableConfig = {"configurable": {"thread_id": "t1", "resource_id": "u1"}}
    agent.invoke({"messages": [HumanMessage("My flight is TP1351 to Lisbon. " * 5)]}, cfg)
    for i in range(8):
        agent.invoke({"messages": [HumanMessage(f"Chat {i}: " + "more words " * 20)]}, cfg)
    state = agent.get_state(cfg).values
    assert state["om_record"]["observed_message_count"] > 2
    out = agent.invoke({"messages": [HumanMessage("What was my flight number?")]}, cfg)
    assert out["messages"][-1].text == "It was TP1351."
    # memory (with the recall guidance) is injected per model call, never stored in state
    assert all(m.type != "system" for m in out["messages"])
    system = model.last_call.messages[0]
    assert system.type == "system" and "recall" in system.text and "_range" in system.text
