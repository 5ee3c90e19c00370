"""Resource scope survives a restart: the shared log and each thread's window are on disk."""

from __future__ import annotations

import asyncio
from pathlib import Path

from langchain_core.messages import HumanMessage

from langchain_om import ObservationalMemory
from langchain_om.testing import FunctionChatModel
from tests.helpers import FIXED, build_agent, thread_observer_reply
from tests.unit_tests.test_resource_frontdoors import FACT, FILLER, actor, cfg, system_text


def open_memory(path: Path) -> ObservationalMemory:
    return ObservationalMemory.from_sqlite(
        str(path),
        model=FunctionChatModel(function=thread_observer_reply),
        scope="resource",
        observation={"message_tokens": 250, "buffer_tokens": False},
        reflection={"observation_tokens": 100_000},
        clock=lambda: FIXED,
    )


def test_a_new_process_sees_what_thread_a_told_in_thread_b(tmp_path: Path) -> None:
    path = tmp_path / "om.db"
    with open_memory(path) as memory:
        agent = build_agent(memory, actor())
        for text in (f"{FACT}. {FILLER}", *[f"turn {i}: {FILLER}" for i in range(4)]):
            agent.invoke({"messages": [HumanMessage(text)]}, cfg("A", "u1"))
    with open_memory(path) as memory:  # a restart: nothing kept in memory
        model = actor()
        build_agent(memory, model).invoke(
            {"messages": [HumanMessage("Where does Zelda live?")]}, cfg("B", "u1")
        )
        assert FACT in system_text(model.calls[0])
        model.reset()
        build_agent(memory, model).invoke({"messages": [HumanMessage("hi")]}, cfg("C", "u2"))
        assert "Zelda" not in system_text(model.calls[0])


def test_async_agents_share_the_log_too(tmp_path: Path) -> None:
    async def go() -> str:
        with open_memory(tmp_path / "om.db") as memory:
            agent = build_agent(memory, actor())
            for text in (f"{FACT}. {FILLER}", *[f"turn {i}: {FILLER}" for i in range(4)]):
                await agent.ainvoke({"messages": [HumanMessage(text)]}, cfg("A", "u1"))
            model = actor()
            await build_agent(memory, model).ainvoke(
                {"messages": [HumanMessage("Where does Zelda live?")]}, cfg("B", "u1")
            )
            return system_text(model.calls[0])

    assert FACT in asyncio.run(go())
