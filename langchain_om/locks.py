"""Per-thread locks that hold across processes, from the storage backend.

The standalone engine and the chat-history adapter read a thread's record and window, run the
step and write them back. Two processes doing that on one thread at once would each write over
the other's messages, so :class:`~langchain_om.ObservationalMemory` runs every standalone call
on a thread (``add_messages``, ``observe``, ``reflect``, ``forget``) under a thread lock:

* :class:`PostgresThreadLock`: a PostgreSQL session advisory lock per thread
  (``pg_advisory_lock``) on a connection of its own. A process that dies releases its locks
  with its session.
* :class:`SqliteThreadLock`: an SQLite write transaction (``BEGIN IMMEDIATE``) on a small lock
  file next to the database, one per bucket of thread ids. The operating system releases it
  when the process dies. :meth:`ObservationalMemory.from_sqlite` sets it up.
* :class:`LocalThreadLock` (the default with other stores): one process only.

LangGraph itself does not serialise runs of one thread: two workers invoking the same
``thread_id`` at once both start from the same checkpoint and the later write wins. For
multi-worker deployments, wrap each run in :meth:`ObservationalMemory.thread_lock`
(``with memory.thread_lock(thread_id): agent.invoke(...)``). After a crash mid-run, resume the
thread with ``agent.invoke(None, config)`` first, so the interrupted run finishes before a
new one starts.

Why not ``filelock`` or ``fcntl``: ``filelock`` is not a dependency of the package and
``fcntl`` is POSIX only, while SQLite is already required and its write lock works wherever the
database itself does and is released by the operating system when the process dies, with a
wait timeout of SQLite's own; PostgreSQL's advisory locks serve deployments where no file is
shared.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from typing import Protocol

__all__ = [
    "LocalThreadLock",
    "PostgresThreadLock",
    "SqliteThreadLock",
    "ThreadLock",
    "hold_async",
]


class ThreadLock(Protocol):
    """A lock per thread id, held for the duration of a ``with`` block."""

    def hold(self, thread_id: str) -> AbstractContextManager[None]:
        """Hold the lock of ``thread_id`` (blocking until it is free; re-entrant per thread)."""
        ...


def _key(thread_id: str) -> int:
    """A signed 64-bit key for ``thread_id`` (PostgreSQL advisory locks take a bigint)."""
    digest = hashlib.blake2b(thread_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class _Reentrant:
    """Per-process part of every lock: one holder per thread id, re-entrant."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.RLock] = {}

    def get(self, thread_id: str) -> threading.RLock:
        with self._guard:
            return self._locks.setdefault(thread_id, threading.RLock())


class LocalThreadLock:
    """Serialises a thread's calls within this process only."""

    def __init__(self) -> None:
        self._local = _Reentrant()

    @contextmanager
    def hold(self, thread_id: str) -> Iterator[None]:
        """Hold ``thread_id``'s lock in this process."""
        with self._local.get(thread_id):
            yield


class PostgresThreadLock:
    """PostgreSQL session advisory locks, one per thread id.

    Args:
        conninfo: the connection string (its own connection is opened for the locks).
    """

    def __init__(self, conninfo: str) -> None:
        import psycopg  # noqa: PLC0415  optional dependency (the "postgres" extra)

        self._conn = psycopg.connect(conninfo, autocommit=True)
        self._conn_guard = threading.Lock()
        self._local = _Reentrant()
        self._depth: dict[str, int] = {}

    def _call(self, sql: str, key: int) -> None:
        with self._conn_guard:
            self._conn.execute(sql, (key,))

    @contextmanager
    def hold(self, thread_id: str) -> Iterator[None]:
        """Hold ``thread_id``'s advisory lock (other processes wait)."""
        with self._local.get(thread_id):
            depth = self._depth.get(thread_id, 0)
            if depth == 0:
                key = _key(thread_id)
                while True:  # try-lock and poll: a blocking call would hold the connection
                    with self._conn_guard:
                        row = self._conn.execute(
                            "SELECT pg_try_advisory_lock(%s)", (key,)
                        ).fetchone()
                    if row is not None and row[0]:
                        break
                    time.sleep(0.005)
            self._depth[thread_id] = depth + 1
            try:
                yield
            finally:
                self._depth[thread_id] -= 1
                if self._depth[thread_id] == 0:
                    del self._depth[thread_id]
                    self._call("SELECT pg_advisory_unlock(%s)", _key(thread_id))

    def close(self) -> None:
        """Close the lock connection (releasing any lock still held)."""
        self._conn.close()


class SqliteThreadLock:
    """SQLite write transactions on lock files next to the database.

    Args:
        path: the database file; the locks live in ``<path>-om-locks/``.
        buckets: lock files; thread ids share one by hash (more: less waiting).
        timeout: seconds to wait for a lock before raising ``sqlite3.OperationalError``.
    """

    def __init__(self, path: str, *, buckets: int = 16, timeout: float = 600.0) -> None:
        self._dir = f"{path}-om-locks"
        os.makedirs(self._dir, exist_ok=True)
        self._buckets = buckets
        self._timeout = timeout
        self._local = _Reentrant()
        self._held: dict[int, tuple[sqlite3.Connection, int]] = {}
        self._guard = threading.Lock()

    def _bucket(self, thread_id: str) -> int:
        return _key(thread_id) % self._buckets

    @contextmanager
    def hold(self, thread_id: str) -> Iterator[None]:
        """Hold the write lock of ``thread_id``'s bucket (other processes wait)."""
        bucket = self._bucket(thread_id)
        with self._local.get(f"bucket:{bucket}"):
            with self._guard:
                held = self._held.get(bucket)
            if held is None:
                conn = sqlite3.connect(
                    os.path.join(self._dir, f"{bucket}.db"),
                    timeout=self._timeout,
                    isolation_level=None,
                    check_same_thread=False,
                )
                conn.execute("BEGIN IMMEDIATE")
                held = (conn, 0)
            conn, depth = held
            with self._guard:
                self._held[bucket] = (conn, depth + 1)
            try:
                yield
            finally:
                with self._guard:
                    conn, depth = self._held[bucket]
                    if depth == 1:
                        del self._held[bucket]
                    else:
                        self._held[bucket] = (conn, depth - 1)
                if depth == 1:
                    conn.execute("ROLLBACK")
                    conn.close()


@asynccontextmanager
async def hold_async(lock: ThreadLock, thread_id: str) -> AsyncIterator[None]:
    """Hold ``lock`` for ``thread_id`` from async code without blocking the event loop.

    A helper thread enters and leaves the lock (locks are released by the thread that took
    them), so the holder may not nest another hold of the same thread id.
    """
    acquired, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def holder() -> None:
        try:
            with lock.hold(thread_id):
                acquired.set()
                release.wait()
        except BaseException as exc:  # reported to the awaiting task
            errors.append(exc)
            acquired.set()

    worker = threading.Thread(target=holder, name="langchain_om-lock", daemon=True)
    worker.start()
    await asyncio.to_thread(acquired.wait)
    if errors:
        raise errors[0]
    try:
        yield
    finally:
        release.set()
        await asyncio.to_thread(worker.join)
