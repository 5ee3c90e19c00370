"""Observational memory in your own LangGraph ``StateGraph``: ``add_observational_memory``.

The OM nodes go in front of the model node; the model node sees the memory as a system message
at the front of ``messages``. Runs offline in seconds with scripted models.

    python examples/custom_graph.py
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_om import ObservationalMemory, add_observational_memory
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model


def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
    memory_lines = [ln for m in messages if m.type == "system" for ln in m.text.splitlines()]
    remembered = sum(line.startswith("* ") for line in memory_lines)
    return f"Got it ({remembered} things remembered): {messages[-1].text[:40]}"


llm = FunctionChatModel(function=reply)
memory = ObservationalMemory(
    model=memory_model(),  # the Observer and Reflector (scripted here)
    observation={"message_tokens": 200},
    reflection={"observation_tokens": 300},
)

builder = StateGraph(MessagesState)
builder.add_node("model", lambda state: {"messages": [llm.invoke(state["messages"])]})
builder.add_edge(START, "model")
builder.add_edge("model", END)
add_observational_memory(builder, memory, before="model")
graph = builder.compile(checkpointer=memory.checkpointer, store=memory.store)

config = {"configurable": {"thread_id": "notes"}}
for i in range(1, 16):
    graph.invoke({"messages": [HumanMessage(f"Note {i}: buy item number {i * 7} today.")]}, config)
memory.close()  # waits for background observation work

state = graph.get_state(config).values
record = memory.read_state(state)  # om_record names its log by key; this reads it back
print("last answer:", state["messages"][-1].text)
print(f"{len(state['messages'])} messages in state, {record['observed_message_count']} observed,")
print(f"generation {record['generation']}; the log now:")
print("\n".join(group["text"] for group in record["groups"]))
