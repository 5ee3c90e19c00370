"""Recall code mode: the agent reads its memory with one short program instead of many calls.

With ``retrieval={"code_mode": True}`` the agent gets ``execute_memory_recall`` in place of
``recall``: it passes a program (a small, side-effect-free subset of Python run by memory's
own interpreter) that calls ``recall(...)`` as often as it needs and returns only what it
computed, so paging through a long archive costs one tool call and little context.

    python examples/recall_code_mode.py
"""

from __future__ import annotations

import json

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model

PROGRAM = """
totals = {}
page = recall(mode="messages", anchor="start", limit=100, detail="high")
for message in page["messages"]:
    if message["role"] != "human":
        continue
    for part in message["parts"]:
        text = part["text"]
        if "spent" in text:
            item = text.split("on ")[1].split()[0]
            amount = int(text.split("spent ")[1].split()[0])
            totals[item] = totals.get(item, 0) + amount
return {"totals": totals, "messages_read": page["count"]}
"""


def scripted_agent(messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
    """Writes the program when asked for totals, else acknowledges."""
    last = messages[-1]
    if isinstance(last, HumanMessage) and "totals" in last.text:
        call = {"name": "execute_memory_recall", "args": {"code": PROGRAM}, "id": "prog-1"}
        return AIMessage("", tool_calls=[call])
    if isinstance(last, ToolMessage):
        return AIMessage(f"Here are your totals: {last.text}")
    return AIMessage("Noted.")


memory = ObservationalMemory(
    model=memory_model(),  # the Observer (scripted here)
    observation={"message_tokens": 300, "buffer_tokens": False},
    retrieval={"code_mode": {"timeout": 5, "max_calls": 10}},
)
agent = create_agent(
    FunctionChatModel(function=scripted_agent),
    [],  # the middleware adds execute_memory_recall
    middleware=[ObservationalMemoryMiddleware(memory)],
    checkpointer=memory.checkpointer,
    store=memory.store,
)
config = {"configurable": {"thread_id": "budget"}}
for i, (amount, item) in enumerate([(12, "lunch"), (40, "books"), (9, "lunch"), (25, "books")]):
    note = f"Expense {i}: I spent {amount} euros on {item} today. " + "context " * 30
    agent.invoke({"messages": [HumanMessage(note)]}, config)
state = agent.invoke({"messages": [HumanMessage("What are my totals?")]}, config)
answer = next(m for m in reversed(state["messages"]) if isinstance(m, ToolMessage))
result = json.loads(answer.text)
print("tools the agent had:", [t.name for t in memory.tools])
print("program result:", result["result"], f"({result['calls']} recall call)")
print("agent:", state["messages"][-1].text)
memory.close()
