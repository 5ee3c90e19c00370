"""Two processes, two threads of one resource, one shared log: nothing lost, nothing twice.

Each process observes every thread of the resource after each of its turns (its own window and
the other thread's stored one), so both race for the same messages on every turn; commits are
compare-and-set under the resource lock. Real processes on an SQLite file and on PostgreSQL.
"""

from __future__ import annotations

import multiprocessing
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from langchain_om._core.resource import log_text
from tests.integration_tests.test_multiprocess import _backend
from tests.resource_workers import drive, drive_standalone, resource_memory, stored_record

TURNS = 12


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_two_processes_observe_each_message_exactly_once(tmp_path: Path, kind: str) -> None:
    base = _backend(kind, tmp_path)
    tag = uuid.uuid4().hex[:6]
    threads = [f"res-{tag}-a", f"res-{tag}-b"]
    ctx = multiprocessing.get_context("spawn")
    specs: list[dict[str, Any]] = [{**base, "thread": t, "turns": TURNS} for t in threads]
    procs = [ctx.Process(target=drive, args=(spec,)) for spec in specs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0
    record = stored_record(base)
    for thread in threads:
        expected = {f"{thread}-{k}{i}" for i in range(TURNS) for k in ("h", "a")}
        ids = record["cursors"][thread]
        assert set(ids) == expected, f"lost {sorted(expected - set(ids))}"
        assert not [i for i, n in Counter(ids).items() if n > 1], "observed twice"
    text = log_text([s for s in record["sections"] if s["thread"] in threads])
    lines = [line for line in text.splitlines() if "turn" in line]
    assert len(lines) == len(set(lines)) == 2 * TURNS, (
        "a message's observation is missing or doubled"
    )
    assert record["version"] >= 2


@pytest.mark.slow
@pytest.mark.parametrize("buffer_tokens", [False, 40], ids=["sync", "buffered"])
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_two_processes_on_the_standalone_engine_lose_nothing(
    tmp_path: Path, kind: str, buffer_tokens: int | bool
) -> None:
    base = {**_backend(kind, tmp_path), "buffer_tokens": buffer_tokens}
    tag = uuid.uuid4().hex[:6]
    threads = [f"eng-{tag}-a", f"eng-{tag}-b"]
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=drive_standalone, args=({**base, "thread": t, "turns": TURNS},))
        for t in threads
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0
    record = stored_record(base)
    memory = resource_memory(base)
    try:
        for thread in threads:
            expected = [f"{thread}-{k}{i}" for i in range(TURNS) for k in ("h", "a")]
            archived = [m.id for m in memory.archived_messages(thread)]
            window = [m.id for m in memory.status(thread_id=thread).window]
            assert sorted(archived + window) == sorted(expected)  # each once: archive or window
            observed = record["cursors"].get(thread, [])
            assert len(observed) == len(set(observed)) and set(archived) <= set(observed)
    finally:
        memory.close()
    text = log_text([s for s in record["sections"] if s["thread"] in threads])
    lines = [line for line in text.splitlines() if "turn" in line]
    assert len(lines) == len(set(lines)), "a message observed twice"
    assert len(record["applied"]) == len(set(record["applied"])), "a chunk activated twice"
