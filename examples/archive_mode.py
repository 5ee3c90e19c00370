"""Archive mode: old observations retire into a catalogued archive instead of being reflected.

A long conversation on a SQLite file with ``observation.archive``: when the log reaches
``after_tokens``, its oldest groups move word for word into the archive, the newest
``keep_tokens`` of them stay, and the agent sees a short catalog of what was retired. The
``recall`` tool's ``mode="observations"`` reads any retired group back exactly.

    python examples/archive_mode.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from langchain_om.tools import create_recall_tool


def scripted_agent(messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
    """Acknowledges each message (a real agent would answer from its memory)."""
    return AIMessage(f"Noted: {messages[-1].text[:40]}")


path = Path(tempfile.mkdtemp()) / "memory.db"
memory = ObservationalMemory.from_sqlite(
    str(path),
    model=memory_model(),  # the Observer (scripted here); archive mode calls no Reflector
    observation={
        "message_tokens": 300,
        "buffer_tokens": False,
        # with real models the defaults are 40000 / 8000 / 2000: archive=True
        "archive": {"after_tokens": 500, "keep_tokens": 150, "max_catalog_tokens": 300},
    },
    retrieval=True,
)
agent = create_agent(
    FunctionChatModel(function=scripted_agent),
    [],
    middleware=[ObservationalMemoryMiddleware(memory)],
    checkpointer=memory.checkpointer,
    store=memory.store,
)
config = {"configurable": {"thread_id": "maya"}}
topics = ["the kitchen tiles", "a flight to Porto", "the dentist", "piano lessons", "a new bike"]
for day in range(30):
    text = f"Day {day}: today I sorted out {topics[day % 5]} " + "and more details " * 12
    agent.invoke({"messages": [HumanMessage(text, id=f"day-{day}")]}, config)

state = agent.get_state(config).values
status = memory.status(thread_id="maya").status
assert status.archive is not None
print(f"{status.archive.archives} archive entries; live log {status.observations.tokens} tokens")
print(f"catalog shown to the agent ({status.archive.catalog_tokens} tokens):")
context = memory.render(memory.read_state(state))
catalog = next(block for block in context.blocks if block.startswith("<archived-observations>"))
print(catalog.splitlines()[1][:150] + " …")

recall = create_recall_tool(memory)
listing = json.loads(recall.invoke({"mode": "observations", "state": state}, config))
oldest = listing["archives"][-1]
group = oldest["groups"][-1]
read = {"mode": "observations", "archive_id": oldest["archive_id"], "group_id": group["group_id"]}
found = json.loads(recall.invoke({**read, "state": state}, config))
print(f"read back {found['group_id']} ({found['summary']}):")
print(found["observations"])
print(f"its source messages start at cursor {found['source']['cursor']!r}")
memory.close()
