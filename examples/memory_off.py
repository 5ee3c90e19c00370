"""One request without memory: ``configurable={"langchain_om": {"enabled": False}}``.

For that run memory makes no Observer or Reflector call, writes nothing to its store, leaves
the record as it was, and shows the agent no memory context at all: the model gets the
conversation as the agent's state holds it (the unobserved messages). The turn's messages stay
in that state and are observed by a later turn with memory on. The same key works for a
``StateGraph`` with ``add_observational_memory`` and for the recall and memory tools.

    python examples/memory_off.py
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import FunctionChatModel, memory_model

with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "memory.db"
    observer = memory_model()
    memory = ObservationalMemory.from_sqlite(
        str(path), model=observer, observation={"message_tokens": 150, "buffer_tokens": False}
    )
    actor = FunctionChatModel(function=lambda m, i: "Noted.")
    agent: Any = create_agent(
        actor,
        [],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )
    on: Any = {"configurable": {"thread_id": "maya"}}
    off: Any = {"configurable": {"thread_id": "maya", "langchain_om": {"enabled": False}}}
    for i in range(4):
        agent.invoke({"messages": [HumanMessage(f"Note {i}: my locker {i} holds skis. " * 4)]}, on)

    def store_items() -> int:
        with sqlite3.connect(path) as con:
            return int(con.execute("SELECT count(*) FROM store").fetchone()[0])

    calls, items = observer.call_count, store_items()
    agent.invoke({"messages": [HumanMessage("Off the record: a quick question.")]}, off)
    shown = [m for m in actor.calls[-1].messages if m.type == "system"]
    print("memory calls in the request:", observer.call_count - calls)
    print("store writes in the request:", store_items() - items)
    print("memory context shown:", bool(shown))
    agent.invoke({"messages": [HumanMessage("Back on: what is in locker 2?")]}, on)
    shown = [m for m in actor.calls[-1].messages if m.type == "system"]
    print("memory context shown again:", bool(shown))
    memory.close()
