"""Per-turn cost of one thread as the store fills up with other threads.

A turn's store reads must use known keys, so its cost does not grow with the number of
threads in the store. This script runs ``ObservationalMemory.step`` turns (default
buffering, ``background="manual"``: each turn's background work runs right after it and is
counted with it) on a fresh thread while the store holds 100, 1 000 and 5 000 other threads
(one store per size, the turns interleaved; the other threads are copies of what one real
thread of the same length wrote: archive, message index, buffered
chunks, registry entry), on ``InMemoryStore``, on SQLite (``from_sqlite``, a temporary
file) and on PostgreSQL (``from_postgres`` on ``LANGCHAIN_OM_POSTGRES_URL``, default
``127.0.0.1:5432/test``; each size in its own temporary schema, dropped afterwards; skipped
with a message when the server is unreachable). It reports the median CPU ms per turn at
each size (and wall ms, which includes the database server's work) and its ratio to the
100-thread figure, and, for contrast, what one namespace search over a thread's buffer
costs at that size (the read turns used before they read by key).

Usage::

    python benchmarks/threads.py            # 100, 1 000 and 5 000 threads
    python benchmarks/threads.py --smoke    # 10 and 50 threads (for the tests)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from _common import RESULTS, history, machine, table
from langchain_core.messages import BaseMessage
from langgraph.store.base import BaseStore, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from langchain_om import ObservationalMemory
from langchain_om._plans.storage import buffer_ns, thread_label
from langchain_om.testing import memory_model

OPTIONS: dict[str, Any] = {
    "observation": {"message_tokens": 3_000},
    "reflection": {"observation_tokens": 4_000},
}
TEMPLATE = "template"
POSTGRES_URL = os.environ.get(
    "LANGCHAIN_OM_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def _postgres_down() -> str | None:
    """Why PostgreSQL cannot be measured (``None`` when it can)."""
    try:
        import psycopg

        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
    except ImportError:
        return "psycopg is not installed (the postgres extra)"
    except Exception as exc:  # any connection failure: report it and skip the backend
        return f"no PostgreSQL at {POSTGRES_URL} ({type(exc).__name__})"
    return None


@contextmanager
def _postgres_schema(size: int) -> Iterator[str]:
    """A fresh schema for one size; yields a URL whose search_path is that schema."""
    import psycopg

    schema = f"om_bench_threads_{os.getpid()}_{size}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in POSTGRES_URL else "?"
    try:
        yield f"{POSTGRES_URL}{sep}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _memory(
    store: BaseStore | None, path: str | None, url: str | None = None
) -> ObservationalMemory:
    model = memory_model(even=True)  # reflections of long one-day logs pass retention
    if url is not None:
        return ObservationalMemory.from_postgres(url, model=model, background="manual", **OPTIONS)
    if path is not None:
        return ObservationalMemory.from_sqlite(path, model=model, background="manual", **OPTIONS)
    return ObservationalMemory(model=model, store=store, background="manual", **OPTIONS)


class _Thread:
    """A conversation on one thread, a turn at a time (CPU ms of each: step + background)."""

    def __init__(self, memory: ObservationalMemory, thread_id: str, turns: int) -> None:
        self.memory, self.thread_id = memory, thread_id
        self.convo = history(turns)
        self.window: list[BaseMessage] = []
        self.record: Any = None
        self.times: list[float] = []
        self.walls: list[float] = []

    def turn(self) -> None:
        i = len(self.times)
        pair = self.convo[2 * i : 2 * i + 2]
        new = [
            m.model_copy(update={"id": f"{self.thread_id}-{2 * i + j}"}) for j, m in enumerate(pair)
        ]
        self.window = self.window + new
        start, wall = time.process_time(), time.perf_counter()
        step = self.memory.step(thread_id=self.thread_id, window=self.window, record=self.record)
        self.memory.run_background()
        self.times.append((time.process_time() - start) * 1000)
        self.walls.append((time.perf_counter() - wall) * 1000)
        self.record, self.window = step.record, step.window


def _template_items(store: BaseStore) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    """Every item the template thread wrote (namespace, key, value), read untimed."""
    label = thread_label(TEMPLATE)
    found: list[tuple[tuple[str, ...], str, dict[str, Any]]] = []
    for ns in store.list_namespaces(prefix=("langchain_om",), limit=100_000):
        for item in store.search(ns, limit=100_000):
            if label in ns or label in item.key:
                found.append((ns, item.key, item.value))
    return found


def _fill(store: BaseStore, items: list[Any], first: int, last: int) -> None:
    """Copy the template's items under thread labels ``other-first .. other-(last-1)``."""
    label = thread_label(TEMPLATE)
    ops: list[PutOp] = []
    for n in range(first, last):
        other = thread_label(f"other-{n}")
        for ns, key, value in items:
            new_ns = tuple(other if part == label else part for part in ns)
            ops.append(PutOp(new_ns, key.replace(label, other), value, index=False))
        if len(ops) >= 5_000:
            store.batch(ops)
            ops = []
    if ops:
        store.batch(ops)


def _search_ms(store: BaseStore, repeats: int = 50) -> float:
    start = time.process_time()
    for _ in range(repeats):
        store.batch([SearchOp(buffer_ns("probe"), limit=10_000)])
    return (time.process_time() - start) * 1000 / repeats


@contextmanager
def _backend(name: str, tmp: str, size: int) -> Iterator[ObservationalMemory]:
    if name == "InMemoryStore":
        yield _memory(InMemoryStore(), None)
        return
    if name == "PostgreSQL":
        with _postgres_schema(size) as url:
            memory = _memory(None, None, url)
            try:
                yield memory
            finally:
                memory.close()
        return
    memory = _memory(None, str(Path(tmp) / f"om-{size}.sqlite"))
    try:
        yield memory
    finally:
        memory.close()


def run_backend(name: str, sizes: list[int], turns: int) -> list[dict[str, Any]]:
    """Per-turn figures of one backend at each thread count (one store per count, interleaved)."""
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        memories = [stack.enter_context(_backend(name, tmp, size)) for size in sizes]
        items: list[Any] = []
        for memory, size in zip(memories, sizes, strict=True):
            template = _Thread(memory, TEMPLATE, turns)
            for _ in range(turns):
                template.turn()
            items = _template_items(memory.store)
            _fill(memory.store, items, 0, size)
        probes = [_Thread(memory, "probe", turns) for memory in memories]
        for _ in range(turns):
            for probe in probes:
                probe.turn()
        rows = [
            {
                "store": name,
                "threads": size,
                "turn_ms": statistics.median(probe.times[turns // 2 :]),
                "wall_ms": statistics.median(probe.walls[turns // 2 :]),
                "search_ms": _search_ms(memory.store),
                "items_per_thread": len(items),
            }
            for memory, probe, size in zip(memories, probes, sizes, strict=True)
        ]
    base = rows[0]["turn_ms"]
    for row in rows:
        row["ratio"] = row["turn_ms"] / base
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS / "threads.md")
    args = parser.parse_args()
    sizes, turns = ([10, 50], 20) if args.smoke else ([100, 1_000, 5_000], 120)
    rows: list[dict[str, Any]] = []
    runs: list[Callable[[], list[dict[str, Any]]]] = [
        lambda: run_backend("InMemoryStore", sizes, turns),
        lambda: run_backend("SQLite", sizes, turns),
    ]
    skipped = _postgres_down()
    if skipped is None:
        runs.append(lambda: run_backend("PostgreSQL", sizes, turns))
    else:
        print(f"PostgreSQL skipped: {skipped}")
    for run in runs:
        rows += run()
    lines = [
        f"# Per-turn cost against the number of threads ({machine()})",
        "",
        f"{turns} turns on a fresh thread per store, interleaved, median CPU (and wall: it "
        "includes the database server's work) of the last half (step + its background work).",
        "",
        *table(
            ["store", "threads", "turn (ms)", "× at fewest", "wall (ms)", "buffer search (ms)"],
            [
                [
                    r["store"],
                    f"{r['threads']:,}",
                    f"{r['turn_ms']:.2f}",
                    f"{r['ratio']:.2f}×",
                    f"{r['wall_ms']:.2f}",
                    f"{r['search_ms']:.3f}",
                ]
                for r in rows
            ],
            left=1,
        ),
        *([] if skipped is None else ["", f"PostgreSQL not measured: {skipped}."]),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
