"""Worker processes for the multi-process tests: each appends its own turns to shared threads.

Run as ``python -m tests.mp_workers <json spec>``; prints ``ready`` once the memory is open and
``done`` at the end. Message ids name the process and turn, so the parent can check that every
message is stored exactly once.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from langchain_om import ObservationalChatMessageHistory, ObservationalMemory
from langchain_om.testing import FunctionChatModel, memory_model
from tests.helpers import build_agent

OPTIONS: dict[str, Any] = {
    "model": memory_model(),
    "observation": {"message_tokens": 400, "buffer_tokens": False},
    "reflection": {"observation_tokens": 100_000},
    "sleep": lambda s: None,
}


def open_memory(spec: dict[str, Any], **overrides: Any) -> ObservationalMemory:
    """The memory a worker (or the checking parent) uses for ``spec``; ``overrides`` replace
    options of :data:`OPTIONS`."""
    options = {**OPTIONS, **overrides}
    if spec["backend"] == "sqlite":
        return ObservationalMemory.from_sqlite(spec["path"], **options)
    # One pool, migrations under an advisory lock, a PostgresThreadLock on the same database.
    return ObservationalMemory.from_postgres(spec["url"], **options)


def turn_text(proc: int, turn: int) -> str:
    return f"p{proc} turn {turn}: " + "words " * 30


def run(spec: dict[str, Any], ready: Any = None) -> None:
    """Append the spec's turns; ``ready`` (an event) is set once the memory is open."""
    memory = open_memory(spec)
    proc = spec["proc"]
    print("ready", flush=True)
    if ready is not None:
        ready.set()
    if spec["door"] == "agent":
        actor = FunctionChatModel(function=lambda m, i: AIMessage(f"ok {m[-1].text[:16]}"))
        agent = build_agent(memory, actor)
        for turn in range(spec["start"], spec["turns"]):
            for thread in spec["threads"]:
                cfg = {"configurable": {"thread_id": thread}}
                message = HumanMessage(turn_text(proc, turn), id=f"{thread}-p{proc}-t{turn}-h")
                with memory.thread_lock(thread):
                    agent.invoke({"messages": [message]}, cfg)
    else:
        for turn in range(spec["start"], spec["turns"]):
            for thread in spec["threads"]:
                history = ObservationalChatMessageHistory(memory, thread_id=thread, resource_id="u")
                base = f"{thread}-p{proc}-t{turn}"
                history.add_messages(
                    [
                        HumanMessage(turn_text(proc, turn), id=f"{base}-h"),
                        AIMessage("ok", id=f"{base}-a"),
                    ]
                )
    memory.close()
    print("done", flush=True)


if __name__ == "__main__":
    run(json.loads(sys.argv[1]))
