"""Many processes on one thread, nothing lost: real processes on SQLite and PostgreSQL, and
kill -9 at random points."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig

from langchain_om.tools import create_recall_tool
from tests.helpers import POSTGRES_URL, ROOT, require_postgres
from tests.mp_workers import open_memory
from tests.mp_workers import run as run_worker

KILLS = 30
"""kill -9 per backend (60 over SQLite and PostgreSQL)."""


def _backend(kind: str, tmp_path: Path) -> dict[str, Any]:
    if kind == "sqlite":
        spec = {"backend": "sqlite", "path": str(tmp_path / "om.db")}
        open_memory(spec).close()  # create the tables once, before workers race to
        return spec
    require_postgres()
    memory = open_memory({"backend": "postgres", "url": POSTGRES_URL})
    memory.store.setup()  # type: ignore[attr-defined]
    memory.checkpointer.setup()  # type: ignore[attr-defined]
    memory.close()
    return {"backend": "postgres", "url": POSTGRES_URL}


def _start(spec: dict[str, Any]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.mp_workers", json.dumps(spec)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stored_ids(spec: dict[str, Any], thread: str, door: str) -> list[str]:
    memory = open_memory(spec)
    try:
        if door == "agent":
            cfg: RunnableConfig = {"configurable": {"thread_id": thread}}
            from langchain_om.testing import FunctionChatModel  # noqa: PLC0415
            from tests.helpers import build_agent  # noqa: PLC0415  only the agent check needs it

            app = build_agent(memory, FunctionChatModel(function=lambda m, i: "x"))
            values = app.get_state(cfg).values
            window = [m.id or "" for m in values.get("messages", []) if m.type == "human"]
            stored = memory.archived_messages(thread, record=values.get("om_record"))
            return [m.id or "" for m in stored if m.type == "human"] + window
        snap = memory.status(thread_id=thread)
        stored = memory.archived_messages(thread)
        return [m.id or "" for m in stored] + [m.id or "" for m in snap.window]
    finally:
        memory.close()


def _run_all(specs: list[dict[str, Any]]) -> None:
    procs = [_start(s) for s in specs]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize(
    ("procs", "threads", "turns", "door"),
    [(3, 1, 40, "history"), (4, 10, 4, "history"), (2, 1, 15, "agent")],
)
def test_processes_lose_nothing(
    tmp_path: Path, kind: str, procs: int, threads: int, turns: int, door: str
) -> None:
    base = _backend(kind, tmp_path)
    tag = uuid.uuid4().hex[:6]
    names = [f"mp-{tag}-{k}" for k in range(threads)]
    specs = [
        {**base, "proc": p, "threads": names, "start": 0, "turns": turns, "door": door}
        for p in range(procs)
    ]
    _run_all(specs)
    for thread in names:
        ids = _stored_ids(base, thread, door)
        per_turn = 1 if door == "agent" else 2
        assert len(ids) == procs * turns * per_turn, f"lost {procs * turns * per_turn - len(ids)}"
        assert not [i for i, n in Counter(ids).items() if n > 1], "duplicated"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_kill_9_at_random_points(tmp_path: Path, kind: str) -> None:
    base = _backend(kind, tmp_path)
    rng = random.Random(7)
    thread = f"kill-{uuid.uuid4().hex[:6]}"
    # Forked workers (the parent has everything imported) start at once, so a round is short.
    ctx = multiprocessing.get_context("fork")
    kills, rounds, deadline = 0, 0, time.monotonic() + 90
    while kills < KILLS and time.monotonic() < deadline:
        workers = []
        for p in range(3):
            spec = {
                **base,
                "proc": 10 * rounds + p,
                "threads": [thread],
                "start": 0,
                "turns": 40,
                "door": "history",
            }
            ready = ctx.Event()
            worker = ctx.Process(target=run_worker, args=(spec, ready), daemon=True)
            worker.start()
            workers.append((worker, ready))
        for _, ready in workers:
            ready.wait(60)
        time.sleep(rng.uniform(0.2, 3.0))
        for worker, _ in workers:
            if worker.pid is not None and worker.is_alive():
                os.kill(worker.pid, signal.SIGKILL)
                kills += 1
            worker.join()
        rounds += 1
    memory = open_memory(base)
    try:
        snap = memory.status(thread_id=thread)
        record = snap.record
        stored = memory.archived_messages(thread)
        ids = [m.id for m in stored] + [m.id for m in snap.window]
        assert not [i for i, n in Counter(ids).items() if n > 1], "a message is listed twice"
        assert len(stored) == record["observed_message_count"]
        recall = create_recall_tool(memory)
        cfg: RunnableConfig = {"configurable": {"thread_id": thread, "resource_id": "u"}}
        page = json.loads(recall.invoke({"anchor": "start", "limit": 5}, cfg))
        assert page.get("total_messages") == len(ids), page
        # Every turn a worker finished is stored whole (human and AI), none twice.
        humans = {i[:-2] for i in ids if i and i.endswith("-h")}
        ais = {i[:-2] for i in ids if i and i.endswith("-a")}
        assert humans == ais
    finally:
        memory.close()
    assert kills >= KILLS
    assert len(ids) >= 20, "the workers were killed before they stored anything"
    print(f"{kind}: {kills} kills over {rounds} rounds, {len(ids)} messages, 0 lost or twice")
