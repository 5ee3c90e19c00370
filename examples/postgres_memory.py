"""Observational memory on PostgreSQL: ``ObservationalMemory.from_postgres``.

One connection pool holds the checkpointer and the store; their migrations run on first use.
Runs offline with scripted models against the PostgreSQL in ``LANGCHAIN_OM_POSTGRES_URL``
(default ``postgresql://postgres@127.0.0.1:5432/test``). Needs ``pip install
"langchain-om[postgres]"``; with real models write e.g. ``create_agent("openai:gpt-5-mini",
...)`` and ``model="google/gemini-2.5-flash"``.

    python examples/postgres_memory.py
"""

from __future__ import annotations

import os
import uuid

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import FunctionChatModel, memory_model

url = os.environ.get("LANGCHAIN_OM_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
config = {"configurable": {"thread_id": f"example-{uuid.uuid4().hex[:8]}"}}

with ObservationalMemory.from_postgres(
    url,
    model=memory_model(),  # the Observer and Reflector (scripted here)
    observation={"message_tokens": 200},  # small so the demo observes quickly
) as memory:
    agent = create_agent(
        FunctionChatModel(function=lambda messages, info: f"Noted ({info.index})."),
        [],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )
    for day in ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]:
        text = f"On {day} I'm working from the café near the river, as usual. " * 2
        agent.invoke({"messages": [HumanMessage(text)]}, config)
    memory.wait_for_background()
    record = memory.read_state(agent.get_state(config).values)  # the log, from the store
    archived = memory.archived_messages(config["configurable"]["thread_id"])
    print(f"{record['observed_message_count']} observed, {len(archived)} archived in PostgreSQL")
    print("\n".join(group["text"] for group in record["groups"]))
    memory.checkpointer.delete_thread(config["configurable"]["thread_id"])
