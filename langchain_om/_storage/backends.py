"""The storage ``from_sqlite`` (``afrom_sqlite``), ``from_postgres`` and ``afrom_postgres`` open.

Each opener returns an :class:`OpenedStorage`: the checkpointer, the store (indexed over the
``embeddings`` given), the thread lock that fits the backend, and how to close what was opened
(a pool the caller passed is never closed). The engine's classmethods build the memory on it.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Self

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from langchain_om._storage.store_index import EmbeddingsSpec, store_index
from langchain_om.errors import OMConfigError
from langchain_om.locks import PostgresThreadLock, SqliteThreadLock, ThreadLock

__all__ = [
    "OpenedStorage",
    "OpensStorage",
    "aopen_postgres_storage",
    "open_postgres_storage",
    "open_sqlite_storage",
]


async def _nothing() -> None:
    return None


@dataclass
class OpenedStorage:
    """Storage memory opened itself, and how to close it."""

    checkpointer: BaseCheckpointSaver[Any]
    store: BaseStore
    thread_lock: ThreadLock | None = None
    close: Callable[[], None] = lambda: None
    """Closes sync storage (and the lock memory opened)."""
    aclose: Callable[[], Awaitable[None]] = _nothing
    """Closes async storage (``afrom_postgres``)."""
    is_async: bool = False
    extra_closers: list[Callable[[], None]] = field(default_factory=list)

    def close_all(self) -> None:
        """Close the sync parts (the async ones need :attr:`aclose`)."""
        for close in reversed(self.extra_closers):
            close()
        self.extra_closers.clear()
        self.close()


def open_sqlite_storage(path: str, embeddings: EmbeddingsSpec | None) -> OpenedStorage:
    """One SQLite file: ``SqliteSaver`` + ``SqliteStore`` (and file locks for a real file)."""
    # SQLite storage pulls in sqlite-vec and numpy: imported here, not with the package.
    from langchain_om.sqlite import open_sqlite  # noqa: PLC0415 - heavy, optional

    index = store_index(embeddings) if embeddings is not None else None
    checkpointer, store, close = open_sqlite(path, index=index)
    lock = None
    if path != ":memory:" and not path.startswith("file:"):  # a file other processes open
        lock = SqliteThreadLock(path)
    return OpenedStorage(checkpointer, store, lock, close)


def _postgres() -> Any:
    """The ``langchain_om.postgres`` module (the optional ``postgres`` extra)."""
    try:
        from langchain_om import postgres  # noqa: PLC0415 — optional extra: psycopg, pgvector
    except ImportError as exc:
        raise OMConfigError(
            f'from_postgres needs the postgres extra ({exc}): pip install "langchain-om[postgres]"'
        ) from None
    return postgres


def open_postgres_storage(
    url_or_pool: Any,
    embeddings: EmbeddingsSpec | None,
    *,
    pool: dict[str, Any] | None,
    setup: bool,
    lock: bool,
) -> OpenedStorage:
    """``PostgresSaver`` + ``PostgresStore`` on one pool (``lock``: a ``PostgresThreadLock``)."""
    index = store_index(embeddings) if embeddings is not None else None
    opened = _postgres().open_postgres(url_or_pool, index=index, pool=pool, setup=setup)
    storage = OpenedStorage(opened.checkpointer, opened.store, close=opened.close)
    if lock and opened.conninfo:
        try:
            thread_lock = PostgresThreadLock(opened.conninfo)
        except BaseException:
            opened.close()
            raise
        storage.thread_lock = thread_lock
        storage.extra_closers.append(thread_lock.close)
    return storage


async def aopen_postgres_storage(
    url_or_pool: Any,
    embeddings: EmbeddingsSpec | None,
    *,
    pool: dict[str, Any] | None,
    setup: bool,
    lock: bool,
) -> OpenedStorage:
    """``AsyncPostgresSaver`` + ``AsyncPostgresStore`` on one async pool.

    ``lock``: also a ``PostgresThreadLock`` (opened on a worker thread).
    """
    index = store_index(embeddings) if embeddings is not None else None
    opened = await _postgres().aopen_postgres(url_or_pool, index=index, pool=pool, setup=setup)
    storage = OpenedStorage(opened.checkpointer, opened.store, aclose=opened.aclose, is_async=True)
    if lock and opened.conninfo:
        try:
            thread_lock = await asyncio.to_thread(PostgresThreadLock, opened.conninfo)
        except BaseException:
            await opened.aclose()
            raise
        storage.thread_lock = thread_lock
        storage.extra_closers.append(thread_lock.close)
    return storage


class OpensStorage:
    """The constructors of :class:`~langchain_om.ObservationalMemory` that open its storage."""

    _opened: list[OpenedStorage]

    def __init__(
        self, *, store: BaseStore, checkpointer: BaseCheckpointSaver[Any], **kwargs: Any
    ) -> None:
        """Declared for the constructors below; ``ObservationalMemory.__init__`` replaces it."""
        raise NotImplementedError

    @classmethod
    def from_sqlite(
        cls, path: str, /, *, embeddings: EmbeddingsSpec | None = None, **kwargs: Any
    ) -> Self:
        """The embedded default: one SQLite file holding the checkpointer and the store.

        Both work from sync and async code (async calls run the SQLite work on a worker
        thread). A new process opening the same file continues every thread with its memory.

        Args:
            path: the SQLite file (created if missing).
            embeddings: index the store for semantic recall (an ``Embeddings`` object or
                ``"provider:model"``); needs a ``sqlite3`` that loads extensions (sqlite-vec).
            **kwargs: options and engine arguments, as for :class:`ObservationalMemory`.
        """
        return cls._on(open_sqlite_storage(path, embeddings), kwargs)

    @classmethod
    async def afrom_sqlite(
        cls, path: str, /, *, embeddings: EmbeddingsSpec | None = None, **kwargs: Any
    ) -> Self:
        """Async twin of :meth:`from_sqlite`: the same memory, built off the event loop.

        Opening the file, running its migrations and building the memory block, so they run
        on a worker thread (servers such as ``langgraph dev`` forbid blocking calls in their
        loop). The memory serves sync and async code alike; close it with ``memory.close()``,
        ``await memory.aclose()`` or ``async with memory:``.

        Args:
            path: the SQLite file (created if missing).
            embeddings: as for :meth:`from_sqlite`.
            **kwargs: options and engine arguments, as for :class:`ObservationalMemory`.
        """
        return await asyncio.to_thread(
            functools.partial(cls.from_sqlite, path, embeddings=embeddings, **kwargs)
        )

    @classmethod
    def from_postgres(
        cls,
        url_or_pool: Any,
        /,
        *,
        embeddings: EmbeddingsSpec | None = None,
        pool: dict[str, Any] | None = None,
        setup: bool = True,
        **kwargs: Any,
    ) -> Self:
        """PostgreSQL: ``PostgresSaver`` + ``PostgresStore`` on one connection pool.

        Serves sync and async code (the saver's async methods run on a worker thread). Needs
        the ``postgres`` extra. :meth:`close` closes the pool only when memory opened it.

        Args:
            url_or_pool: a connection string (memory opens a pool, see
                ``langchain_om.postgres.POOL_DEFAULTS``) or your ``psycopg_pool.ConnectionPool``
                built with ``kwargs=langchain_om.postgres.CONNECTION_KWARGS``.
            embeddings: index the store for semantic recall (``retrieval={"vector": True}``):
                an ``Embeddings`` object or ``"provider:model"``; needs pgvector.
            pool: options of the pool memory opens (``max_size``, ``timeout``, ...).
            setup: run the saver's and store's migrations (idempotent, under an advisory lock).
            **kwargs: options and engine arguments, as for :class:`ObservationalMemory`
                (default ``thread_lock``: a ``PostgresThreadLock`` on the same database).
        """
        lock = "thread_lock" not in kwargs
        storage = open_postgres_storage(url_or_pool, embeddings, pool=pool, setup=setup, lock=lock)
        return cls._on(storage, kwargs)

    @classmethod
    async def afrom_postgres(
        cls,
        url_or_pool: Any,
        /,
        *,
        embeddings: EmbeddingsSpec | None = None,
        pool: dict[str, Any] | None = None,
        setup: bool = True,
        **kwargs: Any,
    ) -> Self:
        """Async twin of :meth:`from_postgres`: ``AsyncPostgresSaver`` + ``AsyncPostgresStore``.

        Await it inside the event loop that runs your graphs (a connection string or an
        ``AsyncConnectionPool``); close with ``await memory.aclose()`` or ``async with memory``.
        The default ``thread_lock`` is a ``PostgresThreadLock`` on the same database, as for
        :meth:`from_postgres`.
        """
        lock = "thread_lock" not in kwargs
        storage = await aopen_postgres_storage(
            url_or_pool, embeddings, pool=pool, setup=setup, lock=lock
        )
        try:
            return cls._on(storage, kwargs, close_on_error=False)
        except BaseException:
            await storage.aclose()
            storage.close_all()
            raise

    @classmethod
    def _on(
        cls, storage: OpenedStorage, kwargs: dict[str, Any], *, close_on_error: bool = True
    ) -> Self:
        """The memory on storage it opened (closed again when the options are refused)."""
        if storage.thread_lock is not None:
            kwargs.setdefault("thread_lock", storage.thread_lock)
        try:
            memory = cls(store=storage.store, checkpointer=storage.checkpointer, **kwargs)
        except BaseException:
            if close_on_error:
                storage.close_all()
            raise
        memory._opened.append(storage)
        return memory
