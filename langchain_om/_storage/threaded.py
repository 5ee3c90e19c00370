"""Async methods for sync-only checkpointers: the sync method on a worker thread.

``SqliteSaver`` and ``PostgresSaver`` implement only the sync half of ``BaseCheckpointSaver``
(their async methods raise). Memory must work under ``graph.ainvoke`` too, so the savers
langchain-om opens add async methods that run the same sync code with ``asyncio.to_thread``:
the event loop never blocks on the database, and sync and async share one implementation.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

__all__ = ["ThreadedAsyncSaver"]


class ThreadedAsyncSaver(BaseCheckpointSaver[Any]):
    """Mixin for a sync-only saver: ``class S(ThreadedAsyncSaver, SqliteSaver)``."""

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
