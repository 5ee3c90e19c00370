"""The edit lifecycle on real storage: SQLite files and PostgreSQL, agent and graph doors.

Each seed (see :mod:`tests.lifecycle_edits`) has the agent delete and correct log lines and
update its working memory while buffered reflections and chunks from before the edit are
stored or still queued, try oversized and markup-laden tool text, and write a second thread
named exactly like the first thread's store label; the models misbehave at times. After every
step: every message is in the window or the archive exactly once, no deleted line is back, no
tool text forged a header or a section, and the label-named thread holds nothing of the first.
Each store runs :data:`SEEDS_PER_STORE` seeds (``LANGCHAIN_OM_LIFECYCLE_SEEDS``).
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from langchain_om import ObservationalMemory
from langchain_om._core.labels import encode_label
from tests.helpers import Clock
from tests.lifecycle import FaultyModel
from tests.lifecycle_edits import (
    EDIT_DOORS,
    EDIT_OPTIONS,
    LABEL_IDS,
    EditLifecycle,
    run_edit_lifecycle,
    summary,
)

SEEDS_PER_STORE = int(os.environ.get("LANGCHAIN_OM_LIFECYCLE_SEEDS", "201"))
TURNS = (6, 10)
Store = Literal["sqlite", "postgres"]

KINDS_SEEN = {
    "tool:delete",
    "tool:correct",
    "tool:correct:refused",
    "tool:wm-update",
    "tool:wm-update:refused",
    "tool:wm-markup",
    "race:reflection-stored",
    "race:ref-in-flight",
    "race:chunk-stored",
    "race:obs-in-flight",
    "thread:label-twin",
    "observer:429",
    "reflector:one-line",
}


def _opener(
    store: Store, tmp_path: Path, request: pytest.FixtureRequest
) -> Callable[[int, dict[str, Any]], ObservationalMemory]:
    if store == "postgres":
        saver, pg_store = request.getfixturevalue("postgres")
        return lambda seed, kwargs: ObservationalMemory(
            store=pg_store, checkpointer=saver, **kwargs
        )
    return lambda seed, kwargs: ObservationalMemory.from_sqlite(
        str(tmp_path / f"edits-{seed}.db"), **kwargs
    )


@pytest.mark.slow
@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_edit_lifecycle_on_real_storage(
    store: Store, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    open_memory = _opener(store, tmp_path, request)
    run = uuid.uuid4().hex[:6]  # a shared PostgreSQL keeps earlier runs' threads
    results: list[EditLifecycle] = []
    base = 0 if store == "sqlite" else 70_000
    for index in range(SEEDS_PER_STORE):
        seed = base + index
        clock = Clock()
        faulty = FaultyModel(random.Random(seed), rate=0.25)
        kwargs = {"model": faulty.model(), "clock": clock, "sleep": lambda s: None, **EDIT_OPTIONS}
        memory = open_memory(seed, kwargs)
        thread = f"{LABEL_IDS[seed % len(LABEL_IDS)]}:{run}.{seed}"
        try:
            results.append(
                run_edit_lifecycle(
                    memory,
                    EDIT_DOORS[index % len(EDIT_DOORS)],
                    seed,
                    clock=clock,
                    faulty=faulty,
                    thread_id=thread,
                    turns=TURNS,
                )
            )
            if store == "postgres":
                for name in (thread, encode_label(thread)):
                    memory.forget(thread_id=name)
                    memory.checkpointer.delete_thread(name)
        finally:
            memory.close()
    counts = summary(results)
    steps = sum(r.steps for r in results)
    print(f"{store}: {SEEDS_PER_STORE} seeds, {steps} steps checked, {counts}")
    assert steps >= SEEDS_PER_STORE * TURNS[0]
    assert KINDS_SEEN <= set(counts), KINDS_SEEN - set(counts)
