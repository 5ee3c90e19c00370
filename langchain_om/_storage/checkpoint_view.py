"""Agent and graph threads, read through the checkpointer.

A ``create_agent`` agent or a graph with memory keeps its thread's OM record (``om_record``)
and its window (``messages``) in the graph state, so the checkpoint is where they live; the
store holds only their archive. ``status()``, ``get_context()``, ``list_threads()`` and
``langchain-om inspect`` read such threads here: the latest checkpoint of the thread (the root
graph's, else the newest one of any ``checkpoint_ns`` that holds a record, as for an agent run
as a subgraph), or the checkpoint named by id. Standalone and history threads have no
checkpoint and are read from the store.

The read is one small plan of checkpointer calls (and store reads for the observation groups
the record names by key) driven by the package's sync or async driver, so both paths share one
implementation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_om._core.record import coerce_record
from langchain_om._core.sanitize import has_unstorable
from langchain_om._core.types import OMRecord
from langchain_om._plans.effects import Effect, Executor, run_async, run_sync
from langchain_om._plans.graph_state import OM_STATE_KEY, split_messages, state_record_plan

__all__ = [
    "GraphThread",
    "aread_graph_thread",
    "athread_ids",
    "read_graph_thread",
    "thread_ids",
]

SCAN_LIMIT = 200
"""Checkpoints of a thread looked through for a record when the root graph's has none."""


@dataclass(frozen=True)
class _Read:
    """One checkpointer call: ``get_tuple(config)``, or ``list(config, limit=limit)``."""

    kind: Literal["get", "list"]
    config: RunnableConfig
    limit: int | None = None


@dataclass(frozen=True)
class GraphThread:
    """A thread's memory as one checkpoint holds it."""

    checkpoint_id: str
    checkpoint_ns: str
    record: OMRecord | None
    window: list[BaseMessage]


class _Saver:
    """Carries out :class:`_Read` calls on a checkpointer, and store effects, blocking or async."""

    def __init__(self, saver: BaseCheckpointSaver[Any], store: Executor) -> None:
        self.saver = saver
        self.store = store

    def execute(self, read: _Read | Effect) -> Any:
        if not isinstance(read, _Read):
            return self.store.execute(read)
        try:
            if read.kind == "get":
                return self.saver.get_tuple(read.config)
            return list(self.saver.list(read.config, limit=read.limit))
        except Exception as exc:
            return _unheld(read, exc)

    async def aexecute(self, read: _Read | Effect) -> Any:
        if not isinstance(read, _Read):
            return await self.store.aexecute(read)
        try:
            if read.kind == "get":
                return await self.saver.aget_tuple(read.config)
            return [t async for t in self.saver.alist(read.config, limit=read.limit)]
        except Exception as exc:
            return _unheld(read, exc)


def _unheld(read: _Read, exc: Exception) -> Any:
    """No checkpoint for a thread id the checkpointer cannot hold (PostgreSQL: a NUL in it).

    Any other failure is raised again.
    """
    thread_id = str((read.config.get("configurable") or {}).get("thread_id") or "")
    if not has_unstorable(thread_id):
        raise exc
    return None if read.kind == "get" else []


def _values(found: CheckpointTuple | None) -> dict[str, Any]:
    if found is None:
        return {}
    values = found.checkpoint.get("channel_values") or {}
    return values if isinstance(values, dict) else {}


def _find_plan(
    thread_id: str, checkpoint_id: str | None
) -> Generator[_Read, Any, CheckpointTuple | None]:
    """The checkpoint holding the thread's memory (``None``: the thread has no checkpoint)."""
    thread: dict[str, Any] = {"thread_id": thread_id}
    if checkpoint_id is not None:
        by_id: RunnableConfig = {"configurable": {**thread, "checkpoint_id": checkpoint_id}}
        named: list[CheckpointTuple] = yield _Read("list", by_id, 1)  # any checkpoint_ns
        return named[0] if named else None
    root: CheckpointTuple | None = yield _Read(
        "get", {"configurable": {**thread, "checkpoint_ns": ""}}
    )
    if OM_STATE_KEY in _values(root):
        return root
    newest: list[CheckpointTuple] = yield _Read("list", {"configurable": thread}, SCAN_LIMIT)
    for found in newest:
        if OM_STATE_KEY in _values(found):
            return found
    return root if "messages" in _values(root) else None


def _thread_plan(
    thread_id: str, checkpoint_id: str | None
) -> Generator[_Read | Effect, Any, GraphThread | None]:
    found = yield from _find_plan(thread_id, checkpoint_id)
    if found is None:
        return None
    values = _values(found)
    messages = [m for m in values.get("messages") or [] if isinstance(m, BaseMessage)]
    configurable = found.config.get("configurable") or {}
    record = yield from state_record_plan(values)
    return GraphThread(
        checkpoint_id=str(configurable.get("checkpoint_id") or found.checkpoint.get("id")),
        checkpoint_ns=str(configurable.get("checkpoint_ns") or ""),
        record=coerce_record(record),
        window=split_messages(messages).window,
    )


def read_graph_thread(
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    checkpoint_id: str | None = None,
    *,
    store: Executor,
) -> GraphThread | None:
    """The thread's record and window from its latest (or the named) checkpoint.

    ``store`` runs the reads of the observation groups the record names.
    """
    return run_sync(_thread_plan(thread_id, checkpoint_id), _Saver(saver, store))


async def aread_graph_thread(
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    checkpoint_id: str | None = None,
    *,
    store: Executor,
) -> GraphThread | None:
    """Async twin of :func:`read_graph_thread`."""
    return await run_async(_thread_plan(thread_id, checkpoint_id), _Saver(saver, store))


def thread_ids(saver: BaseCheckpointSaver[Any]) -> set[str]:
    """Ids of the threads the checkpointer holds checkpoints for."""
    if isinstance(saver, InMemorySaver):
        # ``storage`` is a defaultdict: a read of an unknown thread leaves an empty entry.
        return {str(t) for t, spaces in saver.storage.items() if any(spaces.values())}
    if isinstance(saver, SqliteSaver):  # one query instead of loading every checkpoint
        with saver.cursor(transaction=False) as cur:
            cur.execute(_THREADS_SQL)
            return _thread_column(cur.fetchall())
    if (found := _postgres_thread_ids(saver)) is not None:
        return found
    return {str(t.config["configurable"]["thread_id"]) for t in saver.list(None)}


def _postgres_thread_ids(saver: BaseCheckpointSaver[Any]) -> set[str] | None:
    """One query on a sync ``PostgresSaver``'s connection or pool (``None``: another saver)."""
    conn = _postgres_conn(saver)
    if conn is None or type(conn).__name__.startswith("Async"):
        return None  # not a sync PostgreSQL saver
    if hasattr(conn, "connection"):  # a ConnectionPool lends a connection
        with conn.connection() as lent:
            return _thread_column(lent.execute(_THREADS_SQL).fetchall())
    return _thread_column(conn.execute(_THREADS_SQL).fetchall())


async def athread_ids(saver: BaseCheckpointSaver[Any]) -> set[str]:
    """Async twin of :func:`thread_ids` (sync savers' reads run on a worker thread)."""
    conn = _postgres_conn(saver)
    if conn is None or not type(conn).__name__.startswith("Async"):
        return await asyncio.to_thread(thread_ids, saver)
    if hasattr(conn, "connection"):  # an AsyncConnectionPool lends a connection
        async with conn.connection() as lent:
            rows = await (await lent.execute(_THREADS_SQL)).fetchall()
    else:
        rows = await (await conn.execute(_THREADS_SQL)).fetchall()
    return _thread_column(rows)


_THREADS_SQL = "SELECT DISTINCT thread_id FROM checkpoints"


def _postgres_conn(saver: BaseCheckpointSaver[Any]) -> Any:
    """The connection or pool of a ``PostgresSaver`` / ``AsyncPostgresSaver`` (else ``None``)."""
    postgres = "langgraph.checkpoint.postgres"
    if not any(cls.__module__.startswith(postgres) for cls in type(saver).__mro__):
        return None  # the optional extra is not imported here: classes are told by module
    return getattr(saver, "conn", None)


def _thread_column(rows: Any) -> set[str]:
    return {str(row["thread_id"] if isinstance(row, dict) else row[0]) for row in rows}
