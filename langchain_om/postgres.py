"""PostgreSQL storage: ``PostgresSaver`` + ``PostgresStore`` on one connection pool.

:meth:`ObservationalMemory.from_postgres` (sync) and :meth:`ObservationalMemory.afrom_postgres`
(async, built inside the running loop) open the checkpointer and the store from a connection
string or a pool you own, run their ``setup()`` migrations once (under an advisory lock, so
workers starting together do not race), and close only what they opened. Needs the
``postgres`` extra (``pip install "langchain-om[postgres]"``).

The sync saver gets async methods that run its sync code on a worker thread (``PostgresStore``
already does that for ``abatch``), so a memory from ``from_postgres`` serves ``invoke`` and
``ainvoke`` alike; ``afrom_postgres`` uses the native async classes on an
``AsyncConnectionPool`` for an async-only service.

Semantic recall (``embeddings=``) needs the pgvector extension in the database; without it
construction raises :class:`~langchain_om.errors.OMConfigError` naming the fix.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.store.base import BaseStore, IndexConfig
from langgraph.store.postgres import AsyncPostgresStore, PostgresStore
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from langchain_om._storage.threaded import ThreadedAsyncSaver
from langchain_om.errors import OMConfigError

_Pool = TypeVar("_Pool", ConnectionPool[Any], AsyncConnectionPool[Any])

__all__ = [
    "AsyncPostgresStorage",
    "CONNECTION_KWARGS",
    "POOL_DEFAULTS",
    "PostgresMemorySaver",
    "PostgresStorage",
    "aopen_postgres",
    "open_postgres",
]

CONNECTION_KWARGS: dict[str, Any] = {
    "autocommit": True,
    "prepare_threshold": 0,
    "row_factory": dict_row,
}
"""What the saver and the store need of every connection (a pool you pass must match)."""

POOL_DEFAULTS: dict[str, Any] = {"min_size": 1, "max_size": 10, "timeout": 30.0}
"""The pool ``from_postgres`` opens for a connection string: at most 10 connections, a
request waits at most 30 s for one. Override with ``pool={"max_size": ...}``."""

_SETUP_LOCK = 0x6C636F6D  # "lcom": the advisory lock held while migrations run
_VECTOR_HELP = (
    "Install pgvector in the PostgreSQL server (Debian/Ubuntu: the postgresql-<version>-pgvector "
    "package; or a server image that ships it, e.g. pgvector/pgvector) and let the user create "
    "extensions (CREATE EXTENSION vector), or drop embeddings= / retrieval={'vector': True}."
)


class PostgresMemorySaver(ThreadedAsyncSaver, PostgresSaver):
    """``PostgresSaver`` whose async methods run the sync ones on a worker thread."""


@dataclass(frozen=True)
class PostgresStorage:
    """The checkpointer and store ``open_postgres`` opened, and how to close them."""

    checkpointer: BaseCheckpointSaver[Any]
    store: BaseStore
    conninfo: str | None
    """The connection string (``None`` when the pool computes it)."""
    close: Callable[[], None]


@dataclass(frozen=True)
class AsyncPostgresStorage:
    """The async checkpointer and store ``aopen_postgres`` opened, and how to close them."""

    checkpointer: BaseCheckpointSaver[Any]
    store: BaseStore
    conninfo: str | None
    """The connection string (``None`` when the pool computes it)."""
    aclose: Callable[[], Awaitable[None]]


def _pool_options(pool: dict[str, Any] | None) -> dict[str, Any]:
    options = {**POOL_DEFAULTS, **(pool or {})}
    options["kwargs"] = {**CONNECTION_KWARGS, **options.get("kwargs", {})}
    if options["max_size"] < 2:
        raise OMConfigError(
            f"pool max_size must be at least 2 (the saver and the store each take a connection "
            f"while migrations run), got {options['max_size']}."
        )
    return options


def _check_pool(pool: ConnectionPool[Any] | AsyncConnectionPool[Any]) -> None:
    kwargs = pool.kwargs if isinstance(pool.kwargs, dict) else {}
    if not kwargs.get("autocommit") or kwargs.get("row_factory") is not dict_row:
        raise OMConfigError(
            "The pool passed to from_postgres must open connections with autocommit=True and "
            "row_factory=dict_row (the saver's and the store's requirements): build it with "
            "ConnectionPool(url, kwargs=langchain_om.postgres.CONNECTION_KWARGS), or pass the "
            "connection string and let from_postgres open the pool."
        )


def _take_pool(
    url_or_pool: str | _Pool, pool: dict[str, Any] | None, open_pool: Callable[..., _Pool]
) -> tuple[_Pool, bool]:
    """The pool to use and whether memory opened it (a caller's pool is checked, not owned)."""
    if isinstance(url_or_pool, str):
        return open_pool(url_or_pool, **_pool_options(pool)), True
    _check_pool(url_or_pool)
    return url_or_pool, False


def _conninfo(pool: ConnectionPool[Any] | AsyncConnectionPool[Any]) -> str | None:
    return pool.conninfo if isinstance(pool.conninfo, str) else None


def _has_vector_sql() -> str:
    return "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"


def open_postgres(
    url_or_pool: str | ConnectionPool[Any],
    *,
    index: IndexConfig | None = None,
    pool: dict[str, Any] | None = None,
    setup: bool = True,
) -> PostgresStorage:
    """Open the saver and the store on ``url_or_pool`` (a pool you pass stays yours to close).

    Args:
        url_or_pool: a connection string, or a ``psycopg_pool.ConnectionPool`` opened with
            :data:`CONNECTION_KWARGS`.
        index: the store's vector index (``{"embed": ..., "dims": ..., "fields": [...]}``).
        pool: options of the pool opened for a connection string (see :data:`POOL_DEFAULTS`).
        setup: run the saver's and the store's migrations (idempotent; under an advisory lock).
    """
    conn_pool, owned = _take_pool(url_or_pool, pool, partial(ConnectionPool[Any], open=True))
    try:
        saver = PostgresMemorySaver(conn_pool)
        store = PostgresStore(conn_pool, index=index)  # type: ignore[arg-type]
        if setup:
            _setup(conn_pool, saver, store, vector=index is not None)
    except BaseException:
        if owned:
            conn_pool.close()
        raise

    def close() -> None:
        if owned:
            conn_pool.close()

    return PostgresStorage(saver, store, _conninfo(conn_pool), close)


def _setup(
    conn_pool: ConnectionPool[Any], saver: PostgresSaver, store: PostgresStore, *, vector: bool
) -> None:
    with conn_pool.connection() as conn:
        if vector and conn.execute(_has_vector_sql()).fetchone() is None:
            raise OMConfigError(f"embeddings= needs the pgvector extension: {_VECTOR_HELP}")
        conn.execute("SELECT pg_advisory_lock(%s)", (_SETUP_LOCK,))
        try:
            saver.setup()
            store.setup()
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))


async def aopen_postgres(
    url_or_pool: str | AsyncConnectionPool[Any],
    *,
    index: IndexConfig | None = None,
    pool: dict[str, Any] | None = None,
    setup: bool = True,
) -> AsyncPostgresStorage:
    """Async twin of :func:`open_postgres` (``AsyncPostgresSaver`` + ``AsyncPostgresStore``).

    Call it inside the event loop that will use the memory.
    """
    conn_pool, owned = _take_pool(url_or_pool, pool, partial(AsyncConnectionPool[Any], open=False))
    if owned:
        await conn_pool.open()
    try:
        saver = AsyncPostgresSaver(conn_pool)
        store = AsyncPostgresStore(conn_pool, index=index)  # type: ignore[arg-type]
        if setup:
            await _asetup(conn_pool, saver, store, vector=index is not None)
    except BaseException:
        if owned:
            await conn_pool.close()
        raise

    async def aclose() -> None:
        if owned:
            await conn_pool.close()

    return AsyncPostgresStorage(saver, store, _conninfo(conn_pool), aclose)


async def _asetup(
    conn_pool: AsyncConnectionPool[Any],
    saver: AsyncPostgresSaver,
    store: AsyncPostgresStore,
    *,
    vector: bool,
) -> None:
    async with conn_pool.connection() as conn:
        if vector and await (await conn.execute(_has_vector_sql())).fetchone() is None:
            raise OMConfigError(f"embeddings= needs the pgvector extension: {_VECTOR_HELP}")
        await conn.execute("SELECT pg_advisory_lock(%s)", (_SETUP_LOCK,))
        try:
            await saver.setup()
            await store.setup()
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))
