"""Branch-aware recall: a forked conversation recalls and searches only its own branch.

A LangGraph checkpoint fork (time travel) at message 36 of 48: the original goes on about
Lisbon, the fork about Porto. Each branch's memory, pages and semantic search hold only what
that branch said; the messages before the fork are shared.

    python examples/branch_recall.py
"""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

from langchain_om import ObservationalMemory, add_observational_memory
from langchain_om.testing import FunctionChatModel, HashEmbeddings, RecordedCall, memory_model
from langchain_om.tools import create_recall_tool


def reply(messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
    return AIMessage(f"Noted: {messages[-1].text[:30]}", id=f"{messages[-1].id}-reply")


memory = ObservationalMemory(
    model=memory_model(),  # the Observer (scripted here)
    observation={"message_tokens": 250, "buffer_tokens": False},
    retrieval={"vector": True, "min_score": 0.0},  # HashEmbeddings scores are low
    embeddings=HashEmbeddings(dims=64),  # a deterministic stand-in for a real embedder
)
model = FunctionChatModel(function=reply)
builder = StateGraph(MessagesState)
builder.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
builder.add_edge(START, "model")
add_observational_memory(builder, memory)
graph = builder.compile(checkpointer=memory.checkpointer, store=memory.store)

config = {"configurable": {"thread_id": "trip"}}


def say(text: str, message_id: str, at: dict) -> None:  # type: ignore[type-arg]
    graph.invoke({"messages": [HumanMessage(text, id=message_id)]}, at)


for i in range(18):
    say(f"Planning note {i}: pack item {i} for the trip. " + "details " * 25, f"plan-{i}", config)
fork_point = graph.get_state(config).config  # message 36
for i in range(6):
    say(f"Lisbon plan {i}: a tram ride and custard tarts. " + "details " * 25, f"lis-{i}", config)
original = graph.get_state(config).values
at = fork_point
for i in range(6):
    say(f"Porto plan {i}: a river cruise and port wine. " + "details " * 25, f"por-{i}", at)
    at = config
forked = graph.get_state(config).values

recall = create_recall_tool(memory)
for name, state in (("original", original), ("fork", forked)):
    found = json.loads(
        recall.invoke(
            {"mode": "search", "query": "plan trip city", "limit": 50, "state": state}, config
        )
    )
    kinds = sorted({r["cursor"].split("-")[0] for r in found["results"] if r["kind"] == "message"})
    page = json.loads(recall.invoke({"anchor": "end", "limit": 4, "state": state}, config))
    print(f"{name}: search finds {kinds} messages; last page {[m['id'] for m in page['messages']]}")
memory.close()
