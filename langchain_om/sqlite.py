"""The embedded default storage: one SQLite file holding the checkpointer and the store.

``SqliteSaver`` and ``SqliteStore`` are sync-only (their async methods raise). Memory must work
under ``graph.ainvoke`` too, and ``AsyncSqliteSaver`` has to be built inside a running loop, so
the two classes here add async methods that run the same sync code on a worker thread
(``asyncio.to_thread``). The event loop never blocks on SQLite, and sync and async share one
implementation. Both objects use their own connection to the same file (WAL mode), each
guarded by the library's own lock.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterable

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import IndexConfig, Op, Result
from langgraph.store.sqlite import SqliteStore

from langchain_om._storage.threaded import ThreadedAsyncSaver
from langchain_om.errors import OMConfigError

__all__ = ["SqliteMemorySaver", "SqliteMemoryStore", "open_sqlite"]


class SqliteMemorySaver(ThreadedAsyncSaver, SqliteSaver):
    """``SqliteSaver`` whose async methods run the sync ones on a worker thread."""


class SqliteMemoryStore(SqliteStore):
    """``SqliteStore`` whose ``abatch`` runs ``batch`` on a worker thread."""

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async ``batch`` (runs on a worker thread)."""
        return await asyncio.to_thread(self.batch, list(ops))


def _connect(path: str, *, autocommit: bool = False) -> sqlite3.Connection:
    # The store manages its own BEGIN/COMMIT and expects autocommit mode, as its
    # ``from_conn_string`` sets it; the saver expects the default mode.
    if autocommit:
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    else:
        conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA busy_timeout=10000")
    return conn


def open_sqlite(
    path: str, *, index: IndexConfig | None = None
) -> tuple[SqliteMemorySaver, SqliteMemoryStore, Callable[[], None]]:
    """Open (or create) ``path`` and return ``(checkpointer, store, close)``.

    ``index`` is the store's vector index (sqlite-vec; needs ``sqlite3`` extension loading).
    """
    saver_conn = _connect(path)
    store_conn = _connect(path, autocommit=True)
    try:
        saver = SqliteMemorySaver(saver_conn)
        saver.setup()
        store = SqliteMemoryStore(store_conn, index=index)
        _setup_store(store)
    except BaseException:
        saver_conn.close()
        store_conn.close()
        raise

    def close() -> None:
        saver_conn.close()
        store_conn.close()

    return saver, store, close


def _setup_store(store: SqliteMemoryStore) -> None:
    if store.index_config and not hasattr(store.conn, "enable_load_extension"):
        raise OMConfigError(
            "embeddings= on SQLite needs the sqlite-vec extension, and this Python's sqlite3 "
            "cannot load extensions (built without enable_load_extension). Use a Python built "
            "with loadable SQLite extensions (e.g. python.org or Homebrew builds, or pysqlite3), "
            "or PostgreSQL with pgvector (from_postgres(..., embeddings=...))."
        )
    store.setup()
