"""Recall page reads cost the same at 1 000 and 100 000 archived messages.

Fills a store directly with the archive writes the engine makes (``storage.archive_ops`` plus
the recall id index ``tools.index_ops`` and a thread-registry entry), then times the recall
tool reading a page of 20 messages from random cursors (and from the end of the thread) and
prints the median per read for both sizes and their ratio (≈1 when reads are O(page)).

Backends: ``InMemoryStore`` and the embedded SQLite store (``SqliteMemoryStore`` on a temp
file).

Usage::

    python benchmarks/recall.py              # 1k and 100k, memory and SQLite
    python benchmarks/recall.py --quick      # 1k and 10k
    python benchmarks/recall.py --no-sqlite
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from langchain_om import ObservationalMemory
from langchain_om._core.tokens import TokenCounter
from langchain_om._plans.storage import archive_ops, index_ops, threads_ns
from langchain_om.testing import FunctionChatModel
from langchain_om.tools import create_recall_tool

THREAD = "bench-thread"
RESOURCE = "bench-user"
CHUNK = 5_000
WORDS = (
    "garden tomato basil flight lisbon invoice meeting budget report python cello salmon "
    "winter tyres wedding sister venue deadline review draft weather oslo snow"
).split()


def messages(start: int, count: int, rng: random.Random) -> Iterator[BaseMessage]:
    for i in range(start, start + count):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40)))
        cls = HumanMessage if i % 2 == 0 else AIMessage
        yield cls(f"#{i} {text}", id=f"msg-{i}")


def fill(store: BaseStore, size: int) -> None:
    rng = random.Random(size)
    for start in range(0, size, CHUNK):
        batch = list(messages(start, min(CHUNK, size - start), rng))
        ops: list[PutOp] = archive_ops(
            batch, thread_id=THREAD, resource_id=RESOURCE, first_seq=start
        )
        ops += index_ops(batch, THREAD, start)
        store.batch(ops)
    registry = {
        "thread_id": THREAD,
        "resource_id": RESOURCE,
        "title": "benchmark",
        "created_at": "2026-11-30T00:00:00+00:00",
        "updated_at": "2026-11-30T00:00:00+00:00",
        "archived_messages": size,
        "window_messages": 0,
        "generation": 0,
    }
    store.batch([PutOp(threads_ns(RESOURCE), THREAD, registry)])


def time_reads(store: BaseStore, size: int, reads: int) -> list[float]:
    memory = ObservationalMemory(
        model=FunctionChatModel(function=lambda m, i: ""),
        store=store,
        retrieval=True,
        token_counter=TokenCounter(source="heuristic"),
    )
    tool = create_recall_tool(memory, thread_id=THREAD, resource_id=RESOURCE)
    rng = random.Random(7)
    calls: list[dict[str, Any]] = [{"anchor": "end", "limit": 20}]
    calls += [
        {"cursor": f"msg-{rng.randrange(size)}", "limit": 20, "page": rng.choice([1, 2, -1])}
        for _ in range(reads)
    ]
    tool.invoke(calls[0])  # warm-up (imports, first encoder use)
    timings = []
    for args in calls:
        started = time.perf_counter()
        tool.invoke(args)
        timings.append(time.perf_counter() - started)
    return timings


def in_memory() -> Iterator[BaseStore]:
    yield InMemoryStore()


def sqlite() -> Iterator[BaseStore]:
    from langchain_om.sqlite import open_sqlite

    with tempfile.TemporaryDirectory() as folder:
        _, store, close = open_sqlite(str(Path(folder) / "recall-bench.db"))
        try:
            yield store
        finally:
            close()


def run(
    name: str, backend: Callable[[], Iterator[BaseStore]], sizes: list[int], reads: int
) -> None:
    medians: list[float] = []
    for size in sizes:
        for store in backend():
            started = time.perf_counter()
            fill(store, size)
            filled = time.perf_counter() - started
            timings = time_reads(store, size, reads)
        median = statistics.median(timings) * 1000
        p90 = statistics.quantiles(timings, n=10)[-1] * 1000
        medians.append(median)
        print(
            f"{name:<8} {size:>9,} archived  fill {filled:6.1f}s  "
            f"page read median {median:6.2f} ms  p90 {p90:6.2f} ms"
        )
    print(f"{name:<8} ratio {sizes[-1]:,} / {sizes[0]:,}: {medians[-1] / medians[0]:.2f}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k messages")
    parser.add_argument("--no-sqlite", action="store_true", help="skip the SQLite store")
    parser.add_argument("--reads", type=int, default=200, help="page reads per size")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [1_000, 100_000]
    print(f"recall page reads (limit 20, {args.reads} random cursors + the end of the thread)\n")
    run("memory", in_memory, sizes, args.reads)
    if not args.no_sqlite:
        run("sqlite", sqlite, sizes, args.reads)


if __name__ == "__main__":
    main()
