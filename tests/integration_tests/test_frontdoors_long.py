"""Agents and graphs with memory over hundreds of turns, on SQLite files and in a second process."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from langchain_om import ObservationalMemory
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import (
    APP_OPTIONS,
    ROOT,
    actor_reply,
    build_agent,
    build_graph,
    check_invariants,
    expected_messages,
    user_turn,
)
from tests.helpers import FACT_NAMES as _NAMES
from tests.helpers import FACT_PLACES as _PLACES
from tests.helpers import FACT_THINGS as _THINGS
from tests.helpers import FACT_VERBS as _VERBS


@pytest.mark.slow
@pytest.mark.parametrize("door", ["agent", "graph"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_two_hundred_turns_on_sqlite(tmp_path: Path, door: str, mode: str) -> None:
    db = tmp_path / "om.db"
    memory = ObservationalMemory.from_sqlite(str(db), model=memory_model(), **APP_OPTIONS)
    actor = FunctionChatModel(function=actor_reply)
    app = build_agent(memory, actor) if door == "agent" else build_graph(memory, actor)
    cfg = {"configurable": {"thread_id": "t1"}}
    turns = 200

    async def run_async() -> None:
        for i in range(turns):
            await app.ainvoke({"messages": [HumanMessage(user_turn(i))]}, cfg)

    if mode == "sync":
        for i in range(turns):
            app.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
    else:
        asyncio.run(run_async())
    state = app.get_state(cfg).values
    record = state["om_record"]
    assert record["observed_message_count"] > 0
    assert record["generation"] >= 1
    assert check_invariants(memory, "t1", state["messages"]) == expected_messages(turns)
    # The model saw memory: a system block with observations on its latest call.
    assert "<observations>" in actor.last_call.text
    memory.close()

    # A second process opens the same file and continues the thread with its memory.
    script = textwrap.dedent(
        f"""
        import json
        from langchain_core.messages import BaseMessage, HumanMessage
        from langchain_om import ObservationalMemory
        from langchain_om.testing import FunctionChatModel, memory_model
        import tests.helpers as t
        memory = ObservationalMemory.from_sqlite({str(db)!r}, model=memory_model(), **t.APP_OPTIONS)
        actor = FunctionChatModel(function=t.actor_reply)
        app = t.build_agent(memory, actor) if {door!r} == "agent" else t.build_graph(memory, actor)
        cfg = {{"configurable": {{"thread_id": "t1"}}}}
        before = app.get_state(cfg).values["om_record"]
        app.invoke({{"messages": [HumanMessage("Turn 200: and now?")]}}, cfg)
        saw = "<observations>" in actor.last_call.text
        print(json.dumps({{"record": before, "saw_memory": saw}}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    resumed = json.loads(out.stdout.strip().splitlines()[-1])
    assert resumed["record"] == json.loads(json.dumps(record))
    assert resumed["saw_memory"] is True


def _state_size(app: Any, cfg: RunnableConfig) -> int:
    saver = app.checkpointer
    checkpoint = saver.get_tuple(cfg).checkpoint
    return sum(len(saver.serde.dumps_typed(v)[1]) for v in checkpoint["channel_values"].values())


def _fact_turn(i: int) -> str:
    """User turn ``i``: one distinct fact (a name, a place, a price), about 17 tokens."""
    rng = random.Random(i)
    return (
        f"Turn {i}: {rng.choice(_NAMES)} {rng.choice(_VERBS)} a {rng.choice(_THINGS)} "
        f"in {rng.choice(_PLACES)} for {rng.randrange(10, 990)} euros."
    )


def _fact_answer(messages: list[BaseMessage], info: RecordedCall) -> str:
    """Answer ``info.index``: another distinct fact, about 15 tokens."""
    rng = random.Random(-1 - info.index)
    return (
        f"Answer {info.index}: {rng.choice(_NAMES)} keeps the {rng.choice(_THINGS)} "
        f"in {rng.choice(_PLACES)} until {rng.randrange(1, 12)} pm."
    )


@pytest.mark.slow
def test_checkpoint_size_is_bounded() -> None:
    memory = ObservationalMemory(model=memory_model(), checkpointer=InMemorySaver(), **APP_OPTIONS)
    actor = FunctionChatModel(function=_fact_answer)
    with_memory = build_agent(memory, actor, tools=[])
    plain = create_agent(
        FunctionChatModel(function=_fact_answer),
        [],
        checkpointer=InMemorySaver(),
    )
    cfg: RunnableConfig = {"configurable": {"thread_id": "t"}}
    sizes: dict[str, dict[int, int]] = {"memory": {}, "plain": {}}
    for i in range(1, 2001):
        msg: Any = {"messages": [HumanMessage(_fact_turn(i))]}
        with_memory.invoke(msg, cfg, durability="exit")
        if i <= 400:
            plain.invoke(msg, cfg, durability="exit")
        if i in (200, 400, 2000):
            sizes["memory"][i] = _state_size(with_memory, cfg)
            if i <= 400:
                sizes["plain"][i] = _state_size(plain, cfg)
    print(f"checkpoint bytes with memory: {sizes['memory']}, plain agent: {sizes['plain']}")
    assert sizes["memory"][2000] <= 1.5 * sizes["memory"][200]
    assert sizes["plain"][400] > 1.8 * sizes["plain"][200]
