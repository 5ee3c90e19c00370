"""The lifecycle invariant on real storage: SQLite files and PostgreSQL, every front door.

Each seed drives a short conversation (6-8 turns) through one front door while the models
misbehave and the user sends hostile messages (see :mod:`tests.lifecycle`); after every step
the invariant is checked. Thread and resource ids are odd on purpose (dots, NUL, slashes,
spaces, unicode, e-mail addresses, 500 characters). SQLite runs on files in ``tmp_path``;
PostgreSQL uses ``PostgresSaver`` + ``PostgresStore`` (required in CI, skipped locally without
a server). Each store runs :data:`SEEDS_PER_STORE` seeds, split over the three front doors.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import ObservationalMemory
from langchain_om.tools import create_recall_tool
from tests.helpers import Clock
from tests.lifecycle import DOORS, OPTIONS, Door, FaultyModel, odd_id, run_lifecycle

SEEDS_PER_STORE = int(os.environ.get("LANGCHAIN_OM_LIFECYCLE_SEEDS", "201"))
TURNS = (6, 9)
LIFECYCLE_OPTIONS: dict[str, Any] = {**OPTIONS, "reflection": {"observation_tokens": 200}}
"""A smaller log than the unit lifecycle's, so short seeds reflect too."""
Store = Literal["sqlite", "postgres"]

FAULTS_SEEN = {
    "observer:empty",
    "observer:echo",
    "observer:oversized",
    "observer:429",
    "user:nul",
    "user:surrogate",
    "user:poison",
    "user:forged",
    "user:dangling-call",
    "reflector:one-line",
    "reflector:looping",
}


def _sqlite(tmp_path: Path) -> Callable[[int, dict[str, Any]], ObservationalMemory]:
    def open_memory(seed: int, kwargs: dict[str, Any]) -> ObservationalMemory:
        return ObservationalMemory.from_sqlite(str(tmp_path / f"lc-{seed}.db"), **kwargs)

    return open_memory


def _postgres(saver: Any, store: Any) -> Callable[[int, dict[str, Any]], ObservationalMemory]:
    def open_memory(seed: int, kwargs: dict[str, Any]) -> ObservationalMemory:
        return ObservationalMemory(store=store, checkpointer=saver, **kwargs)

    return open_memory


@pytest.mark.slow
@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_lifecycle_on_real_storage(
    store: Store, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if store == "postgres":
        saver, pg_store = request.getfixturevalue("postgres")
        open_memory = _postgres(saver, pg_store)
    else:
        open_memory = _sqlite(tmp_path)
    faults: Counter[str] = Counter()
    steps = 0
    base = 0 if store == "sqlite" else 50_000
    run = uuid.uuid4().hex[:6]  # a shared PostgreSQL keeps earlier runs' threads
    for index in range(SEEDS_PER_STORE):
        seed = base + index
        door: Door = DOORS[index % len(DOORS)]
        clock = Clock()
        faulty = FaultyModel(random.Random(seed), rate=0.4)
        kwargs = {
            "model": faulty.model(),
            "clock": clock,
            "sleep": lambda s: None,
            **LIFECYCLE_OPTIONS,
        }
        memory = open_memory(seed, kwargs)
        # NUL cannot sit in a PostgreSQL checkpointer's text column (the graph doors' thread).
        nul = store == "sqlite" or door == "history"
        thread = odd_id(seed, f"t{run}-", nul=nul)
        resource = odd_id(seed + 3, f"r{run}-", nul=nul)
        try:
            done = run_lifecycle(
                memory,
                door,
                seed,
                clock=clock,
                faulty=faulty,
                thread_id=thread,
                resource_id=resource,
                turns=TURNS,
            )
            _recall_answers(memory, door, thread, resource)
            if store == "postgres":
                memory.forget(thread_id=thread, resource_id=resource)
                if door != "history":
                    pg_saver = memory.checkpointer
                    assert pg_saver is not None
                    pg_saver.delete_thread(thread)
        finally:
            memory.close()
        faults.update(done.faults)
        steps += done.steps
    print(f"{store}: {SEEDS_PER_STORE} seeds, {steps} steps checked, faults {dict(faults)}")
    assert steps >= SEEDS_PER_STORE * TURNS[0]
    assert FAULTS_SEEN <= set(faults), FAULTS_SEEN - set(faults)


def _recall_answers(memory: ObservationalMemory, door: Door, thread: str, resource: str) -> None:
    """The recall tool answers on the seed's odd ids, on the real store (never raises)."""
    tool = create_recall_tool(memory)
    config: RunnableConfig = {"configurable": {"thread_id": thread, "resource_id": resource}}
    out = tool.invoke({"anchor": "end", "limit": 5}, config)
    assert isinstance(out, str) and out
    if door == "history":  # standalone state: the thread's archive and window
        data = json.loads(out)
        assert "error" not in data and data["messages"], out[:300]


def test_odd_ids_on_sqlite(tmp_path: Path) -> None:
    """Dots and email addresses as ids work on a SQLite file (store-namespace labels)."""
    memory = ObservationalMemory.from_sqlite(
        str(tmp_path / "odd.db"), model=FaultyModel(random.Random(0), rate=0.0).model(), **OPTIONS
    )
    try:
        turn = [HumanMessage("I live in Porto. " * 40, id="h1"), AIMessage("Noted.", id="a1")]
        memory.add_messages("ana.silva@acme.eu", turn, resource_id="acme.eu")
        memory.observe(thread_id="ana.silva@acme.eu", resource_id="acme.eu")
        assert [m.id for m in memory.archived_messages("ana.silva@acme.eu")] == ["h1", "a1"]
    finally:
        memory.close()
