"""The same end-to-end run on SQLite and on PostgreSQL: agent, graph and history front doors,
sync and async, background buffering on; nothing lost, nothing duplicated, and a fresh memory
on the same database sees the same thread."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_om import ObservationalChatMessageHistory, ObservationalMemory
from langchain_om.testing import FunctionChatModel, memory_model
from tests.helpers import (
    POSTGRES_URL,
    actor_reply,
    build_agent,
    build_graph,
    check_invariants,
    expected_messages,
    require_postgres,
    user_turn,
)

TURNS = 30
BUFFERED: dict[str, Any] = {
    "observation": {"message_tokens": 600, "buffer_tokens": 0.25},
    "reflection": {"observation_tokens": 500},
}
Opener = Callable[[], ObservationalMemory]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def open_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens a memory on the backend (each call a fresh engine on the same database)."""
    opened: list[ObservationalMemory] = []

    def opener() -> ObservationalMemory:
        if request.param == "sqlite":
            memory = ObservationalMemory.from_sqlite(
                str(tmp_path / "om.db"), model=memory_model(), **BUFFERED
            )
        else:
            memory = ObservationalMemory.from_postgres(
                POSTGRES_URL, model=memory_model(), **BUFFERED
            )
        opened.append(memory)
        return memory

    if request.param == "postgres":
        require_postgres()
    yield opener
    for memory in opened:
        memory.close()


def _pair(i: int) -> list[Any]:
    return [HumanMessage(user_turn(i), id=f"h{i}"), AIMessage(f"ok {i}", id=f"a{i}")]


def _run_history(memory: ObservationalMemory, thread: str, mode: str) -> list[Any]:
    history = ObservationalChatMessageHistory(memory, thread_id=thread)

    async def arun() -> None:
        for i in range(TURNS):
            await history.aadd_messages(_pair(i))
        await memory.await_for_background()

    if mode == "sync":
        for i in range(TURNS):
            history.add_messages(_pair(i))
        memory.wait_for_background()
    else:
        asyncio.run(arun())
    return list(history.messages)


def _run_app(memory: ObservationalMemory, door: str, thread: str, mode: str) -> list[Any]:
    actor = FunctionChatModel(function=actor_reply)
    app = build_agent(memory, actor) if door == "agent" else build_graph(memory, actor)
    cfg = {"configurable": {"thread_id": thread}}

    async def arun() -> None:
        for i in range(TURNS):
            await app.ainvoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
        await memory.await_for_background()

    if mode == "sync":
        for i in range(TURNS):
            app.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
        memory.wait_for_background()
    else:
        asyncio.run(arun())
    return list(app.get_state(cfg).values["messages"])


@pytest.mark.parametrize("door", ["agent", "graph", "history"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_same_run_on_every_backend(open_memory: Opener, door: str, mode: str) -> None:
    memory = open_memory()
    thread = f"e2e-{door}-{mode}-{uuid.uuid4().hex[:8]}"
    if door == "history":
        window = _run_history(memory, thread, mode)
        total = 2 * TURNS
    else:
        window = _run_app(memory, door, thread, mode)
        total = expected_messages(TURNS)
    snap = memory.status(thread_id=thread)
    assert snap.record["observed_message_count"] > 0
    assert snap.source == ("store" if door == "history" else "checkpoint")
    assert check_invariants(memory, thread, window) == total
    # A fresh engine on the same database reads the same thread.
    again = open_memory().status(thread_id=thread)
    assert again.record == snap.record
    assert [m.id for m in again.window] == [m.id for m in snap.window]
