"""N worker processes × M threads through the agent front door, on PostgreSQL and SQLite.

Each worker process opens its own memory on the shared database (``from_postgres`` /
``from_sqlite``), builds a ``create_agent`` agent with the memory middleware (the agent model
answers instantly; the Observer/Reflector is ``langchain_om.testing.memory_model()``), waits at
a barrier and then runs ``--turns`` turns on each of its ``--threads`` threads, round-robin.
Reported per setting: throughput (all turns over the wall time from the barrier to the last
worker's end), p50/p95 wall time of a turn, p50/p95 of the memory middleware's own hooks
(its bookkeeping, the model call excluded), and the invariants checked afterwards by a fresh
memory: every message archived or in the window exactly once, archive size equal to the
record's observed count, every turn present. Read the ratios (1 → 2 → 4 workers on the same
machine), not the absolute numbers.

Usage::

    python benchmarks/workers.py                       # 1, 2, 4 workers; SQLite and PostgreSQL
    python benchmarks/workers.py --quick               # fewer turns
    python benchmarks/workers.py --backend sqlite      # no PostgreSQL needed
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from _common import HookTimer, InstantChatModel, machine, table, time_middleware, user_text
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import memory_model

POSTGRES_URL = os.environ.get(
    "LANGCHAIN_OM_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
OPTIONS: dict[str, Any] = {
    "observation": {"message_tokens": 800, "buffer_tokens": False},
    "reflection": {"observation_tokens": 1_200},
}


def open_memory(spec: dict[str, Any]) -> ObservationalMemory:
    """The memory of one process on the setting's database."""
    if spec["backend"] == "sqlite":
        return ObservationalMemory.from_sqlite(spec["path"], model=memory_model(), **OPTIONS)
    return ObservationalMemory.from_postgres(spec["url"], model=memory_model(), **OPTIONS)


def build_agent(memory: ObservationalMemory, timer: HookTimer | None = None) -> Any:
    middleware = ObservationalMemoryMiddleware(memory)
    if timer is not None:
        time_middleware(middleware, timer)
    return create_agent(
        InstantChatModel(),
        [],
        middleware=[middleware],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )


def worker(spec: dict[str, Any], threads: list[str], barrier: Any, out: Any) -> None:
    """Run the turns of ``threads`` after the barrier; put timings on ``out``."""
    timer = HookTimer()
    memory = open_memory(spec)
    agent = build_agent(memory, timer)
    barrier.wait()
    started = time.time()
    turns: list[float] = []
    hooks: list[float] = []
    for turn in range(spec["turns"]):
        for thread in threads:
            cfg = {"configurable": {"thread_id": thread}}
            t0 = time.perf_counter()
            agent.invoke({"messages": [HumanMessage(user_text(turn))]}, cfg)
            turns.append(time.perf_counter() - t0)
            hooks.append(timer.take())
    ended = time.time()
    memory.close()
    out.put({"started": started, "ended": ended, "turns": turns, "hooks": hooks})


def check(spec: dict[str, Any], threads: list[str]) -> tuple[bool, str]:
    """Nothing lost, nothing duplicated: a fresh memory reads every thread."""
    with open_memory(spec) as memory:
        for thread in threads:
            snap = memory.status(thread_id=thread)
            archived = memory.archived_messages(thread, record=snap.record)
            ids = [m.id for m in archived] + [m.id for m in snap.window]
            if len(ids) != len(set(ids)):
                return False, f"{thread}: a message is stored twice"
            if len(ids) != 2 * spec["turns"]:
                return False, f"{thread}: {len(ids)} messages, expected {2 * spec['turns']}"
            if len(archived) != snap.record["observed_message_count"]:
                return False, f"{thread}: archive and record disagree"
            if spec["backend"] == "postgres":
                memory.checkpointer.delete_thread(thread)
    return True, "ok"


def run_setting(backend: str, workers: int, threads: int, turns: int, tmp: Path) -> dict[str, Any]:
    spec: dict[str, Any] = {"backend": backend, "turns": turns}
    if backend == "sqlite":
        spec["path"] = str(tmp / f"w{workers}-{uuid.uuid4().hex[:6]}.db")
        open_memory(spec).close()  # create the tables before the workers race to
    else:
        spec["url"] = POSTGRES_URL
    tag = uuid.uuid4().hex[:8]
    names = [[f"bench-{tag}-w{w}-t{t}" for t in range(threads)] for w in range(workers)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier, out = manager.Barrier(workers), manager.Queue()
        procs = [ctx.Process(target=worker, args=(spec, n, barrier, out)) for n in names]
        for proc in procs:
            proc.start()
        results = [out.get(timeout=1_800) for _ in procs]
        for proc in procs:
            proc.join()
    ok, why = check(spec, [t for n in names for t in n])
    all_turns = [t for r in results for t in r["turns"]]
    all_hooks = [h for r in results for h in r["hooks"]]
    wall = max(r["ended"] for r in results) - min(r["started"] for r in results)
    return {
        "backend": backend,
        "workers": workers,
        "threads": workers * threads,
        "turns": len(all_turns),
        "per_second": len(all_turns) / wall,
        "p50": _q(all_turns, 0.5),
        "p95": _q(all_turns, 0.95),
        "hooks_p50": _q(all_hooks, 0.5),
        "hooks_p95": _q(all_hooks, 0.95),
        "invariants": why if not ok else "ok",
    }


def _q(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _postgres_up() -> bool:
    try:
        import psycopg

        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
    except Exception:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--workers", default="1,2,4", help="worker counts, e.g. 1,2,4")
    parser.add_argument("--threads", type=int, default=2, help="threads per worker")
    parser.add_argument("--turns", type=int, default=40, help="turns per thread")
    parser.add_argument("--quick", action="store_true", help="10 turns per thread")
    args = parser.parse_args(argv)
    turns = 10 if args.quick else args.turns
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    if "postgres" in backends and not _postgres_up():
        print(f"no PostgreSQL at {POSTGRES_URL}: PostgreSQL rows skipped", file=sys.stderr)
        backends.remove("postgres")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for backend in backends:
            base = None
            for count in [int(w) for w in args.workers.split(",")]:
                row = run_setting(backend, count, args.threads, turns, Path(tmp))
                base = base or row["per_second"]
                row["scale"] = row["per_second"] / base
                rows.append(row)
    print(f"# Worker benchmark ({machine()}; {args.threads} threads per worker, {turns} turns)")
    print()
    headers = [
        "backend",
        "workers",
        "threads",
        "turns",
        "turns/s",
        "× 1 worker",
        "turn p50 ms",
        "turn p95 ms",
        "memory CPU p50 ms",
        "memory CPU p95 ms",
        "invariants",
    ]
    body = [
        [
            r["backend"],
            str(r["workers"]),
            str(r["threads"]),
            str(r["turns"]),
            f"{r['per_second']:.1f}",
            f"{r['scale']:.2f}",
            f"{r['p50']:.1f}",
            f"{r['p95']:.1f}",
            f"{r['hooks_p50']:.1f}",
            f"{r['hooks_p95']:.1f}",
            r["invariants"],
        ]
        for r in rows
    ]
    print("\n".join(table(headers, body)))
    return 0 if all(r["invariants"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
