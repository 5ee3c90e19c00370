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
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import Op, Result
from langgraph.store.sqlite import SqliteStore

__all__ = ["SqliteMemorySaver", "SqliteMemoryStore", "open_sqlite"]


class SqliteMemorySaver(SqliteSaver):
    """``SqliteSaver`` whose async methods run the sync ones on a worker thread."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async ``get_tuple`` (runs on a worker thread)."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async ``list`` (runs on a worker thread)."""
        items = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in items:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async ``put`` (runs on a worker thread)."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async ``put_writes`` (runs on a worker thread)."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async ``delete_thread`` (runs on a worker thread)."""
        await asyncio.to_thread(self.delete_thread, thread_id)


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
    path: str,
) -> tuple[SqliteMemorySaver, SqliteMemoryStore, Callable[[], None]]:
    """Open (or create) ``path`` and return ``(checkpointer, store, close)``."""
    saver_conn = _connect(path)
    store_conn = _connect(path, autocommit=True)
    saver = SqliteMemorySaver(saver_conn)
    saver.setup()
    store = SqliteMemoryStore(store_conn)
    store.setup()

    def close() -> None:
        saver_conn.close()
        store_conn.close()

    return saver, store, close
