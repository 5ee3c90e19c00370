"""Recall from a plain chain: the model reads the exact words behind an observation.

Runs offline in about a second with scripted models:

1. An Observer condenses a short conversation into one observation; the raw messages go to
   the archive and leave the context.
2. A later question needs an exact detail the observation dropped (a flight number). The
   "actor" model reads the observation group's ``_range`` from its context, calls the
   ``recall`` tool with a cursor, and answers from the recalled message.

    python examples/recall_chain.py
"""

from __future__ import annotations

import json
import re

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import ObservationalMemory
from langchain_om.testing import FunctionChatModel
from langchain_om.tools import create_recall_tool

OBSERVATION = """<observations>
Date: Nov 30, 2026
* 🔴 (10:00) User's sister Ana is getting married in Lisbon in June 2027; user booked a flight
</observations>
<current-task>Help the user plan the Lisbon trip</current-task>"""

CONVERSATION: list[BaseMessage] = [
    HumanMessage("My sister Ana is getting married in Lisbon on 14 June 2027!", id="msg-1"),
    AIMessage("Congratulations! Do you need help with travel?", id="msg-2"),
    HumanMessage("I booked flight TP1351, leaving at 09:40 from Geneva.", id="msg-3"),
    AIMessage("Great, TP1351 lands in Lisbon at 11:15 local time.", id="msg-4"),
]


def actor(messages: list[BaseMessage], info: object) -> str | AIMessage:
    """A scripted agent: recall when the answer needs exact words, then answer from them."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        recalled = json.loads(str(last.content))
        for message in recalled["messages"]:
            for part in message["parts"]:
                found = re.search(r"\b[A-Z]{2}\d{3,4}\b", part["text"])
                if found and message["role"] == "human":
                    return f"You said you booked flight {found.group()} (message {message['id']})."
        return "I could not find the flight number."
    context = "\n".join(m.text for m in messages if m.type == "system")
    start = re.search(r"_range: `([^:`]+):([^`]+)`", context)
    if start is None:
        return "I have no memory of a flight."
    args = {"cursor": start.group(1), "detail": "high", "limit": 10}
    return AIMessage("", tool_calls=[{"name": "recall", "args": args, "id": "call-1"}])


def main() -> None:
    observer = FunctionChatModel(function=lambda messages, info: OBSERVATION)
    memory = ObservationalMemory(model=observer, retrieval=True)
    memory.observe(thread_id="trip", messages=CONVERSATION, resource_id="me")

    recall = create_recall_tool(memory)
    config: RunnableConfig = {"configurable": {"thread_id": "trip", "resource_id": "me"}}
    model = FunctionChatModel(function=actor).bind_tools([recall])

    question = HumanMessage("What was my flight number again?")
    messages = [*memory.get_context(thread_id="trip"), question]
    blocks = messages[0].content[1:]  # skip the usage preamble
    print("Memory the model sees (after the preamble):")
    print("\n".join(b["text"] for b in blocks if isinstance(b, dict)) + "\n")
    reply = model.invoke(messages)
    while isinstance(reply, AIMessage) and reply.tool_calls:
        messages.append(reply)
        for tool_call in reply.tool_calls:
            print(f"recall({tool_call['args']})")
            result = recall.invoke({**tool_call, "type": "tool_call"}, config)
            for message in result.artifact["messages"]:
                text = " ".join(p["text"] for p in message["parts"])
                print(f"  [{message['id']}] {message['role']}: {text}")
            messages.append(result)
        reply = model.invoke(messages)
    print("\nAnswer:", reply.text)


if __name__ == "__main__":
    main()
