"""Effects: the I/O requests a turn plan yields, and the two drivers that carry them out.

A turn is a generator that yields effects (call a model, run store ops, call a hook) and
receives their results (or has their exception thrown into it). :func:`run_sync` and
:func:`run_async` are the only places where sync and async differ.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from langchain_core.messages import BaseMessage
from langgraph.store.base import BaseStore, Op

logger = logging.getLogger("langchain_om")

T = TypeVar("T")


@dataclass(frozen=True)
class ModelCall:
    """Call the Observer or Reflector model with ``messages``."""

    role: Literal["observer", "reflector"]
    messages: Sequence[BaseMessage]
    input_tokens: int
    thread_id: str
    resource_id: str | None


@dataclass(frozen=True)
class StoreBatch:
    """Run ``ops`` on the store; the result is the list of op results."""

    ops: Sequence[Op]


@dataclass(frozen=True)
class HookCall:
    """Call a user hook; failures are logged and ignored."""

    name: str
    hook: Callable[[dict[str, Any]], Any]
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AwaitBackground:
    """Wait (at most ``timeout`` seconds) for the background job ``key`` to finish."""

    key: str
    timeout: float


Effect = ModelCall | StoreBatch | HookCall | AwaitBackground
Plan = Generator[Effect, Any, T]


class Executor:
    """Carries out effects. The engine provides model calls; the store is injected."""

    def __init__(
        self,
        *,
        store: BaseStore,
        call_model: Callable[[ModelCall], Any],
        acall_model: Callable[[ModelCall], Awaitable[Any]],
        background: Background | None = None,
    ) -> None:
        self.store = store
        self._call_model = call_model
        self._acall_model = acall_model
        self.background = background or Background()

    def execute(self, effect: Effect) -> Any:
        if isinstance(effect, ModelCall):
            return self._call_model(effect)
        if isinstance(effect, StoreBatch):
            return self.store.batch(list(effect.ops)) if effect.ops else []
        if isinstance(effect, AwaitBackground):
            return self.background.wait(effect.key, effect.timeout)
        return _call_hook_sync(effect)

    async def aexecute(self, effect: Effect) -> Any:
        if isinstance(effect, ModelCall):
            return await self._acall_model(effect)
        if isinstance(effect, StoreBatch):
            return await self.store.abatch(list(effect.ops)) if effect.ops else []
        if isinstance(effect, AwaitBackground):
            return await self.background.await_key(effect.key, effect.timeout)
        return await _call_hook_async(effect)


def run_sync(plan: Plan[T], executor: Executor) -> T:
    """Drive ``plan`` to completion with blocking I/O."""
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = plan.throw(error) if error is not None else plan.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send, error = None, None
        try:
            send = executor.execute(effect)
        except Exception as exc:
            error = exc


async def run_async(plan: Plan[T], executor: Executor) -> T:
    """Drive ``plan`` to completion with async I/O."""
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = plan.throw(error) if error is not None else plan.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send, error = None, None
        try:
            send = await executor.aexecute(effect)
        except Exception as exc:
            error = exc


def _call_hook_sync(effect: HookCall) -> None:
    try:
        result = effect.hook(effect.payload)
        if inspect.isawaitable(result):
            _run_coroutine_blocking(result)
    except Exception:
        logger.exception("langchain-om hook %s raised; ignored", effect.name)


async def _call_hook_async(effect: HookCall) -> None:
    try:
        result = effect.hook(effect.payload)
        if inspect.isawaitable(result):
            await result
    except Exception:
        logger.exception("langchain-om hook %s raised; ignored", effect.name)


def _run_coroutine_blocking(awaitable: Awaitable[Any]) -> None:
    """Run an async hook from the sync path (in a fresh loop, on a worker thread if needed)."""

    async def wrap() -> None:
        await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(wrap())
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, wrap()).result()


class Background:
    """In-flight background jobs (buffers, background reflections), at most one per key.

    Sync front doors run a job's plan on a worker thread with :func:`run_sync`; async front
    doors run it as a task on the running loop with :func:`run_async`. A job whose loop has
    ended is gone (at most that buffer is lost; messages and the log never are).
    """

    def __init__(self, max_workers: int = 4, *, manual: bool = False) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, concurrent.futures.Future[Any] | asyncio.Task[Any]] = {}
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._max_workers = max_workers
        self.manual = manual
        """Queue jobs instead of running them (deterministic tests): see :meth:`run_pending`."""
        self.pending: dict[str, tuple[Plan[Any], Executor, bool]] = {}

    def running(self, key: str) -> bool:
        """True while the job ``key`` has not finished."""
        with self._lock:
            if key in self.pending:
                return True
            job = self._jobs.get(key)
        return job is not None and not job.done()

    def _queue(self, key: str, plan: Plan[Any], executor: Executor, use_async: bool) -> bool:
        with self._lock:
            if key in self.pending:
                plan.close()
                return False
            self.pending[key] = (plan, executor, use_async)
            return True

    def run_pending(self, key: str | None = None) -> None:
        """Manual mode: run the queued job ``key`` (or all of them) now, on this thread."""
        with self._lock:
            keys = [key] if key is not None else list(self.pending)
            jobs = [(k, self.pending.pop(k)) for k in keys if k in self.pending]
        for _, (plan, executor, _use_async) in jobs:
            run_sync(plan, executor)

    def drop_pending(self, key: str | None = None) -> None:
        """Manual mode: forget queued jobs, as if the process died while they ran."""
        with self._lock:
            keys = [key] if key is not None else list(self.pending)
            for k in keys:
                job = self.pending.pop(k, None)
                if job is not None:
                    job[0].close()

    def start_thread(self, key: str, plan: Plan[Any], executor: Executor) -> bool:
        """Run ``plan`` on a worker thread unless ``key`` is already running."""
        if self.manual:
            return self._queue(key, plan, executor, False)
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and not job.done():
                plan.close()
                return False
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self._max_workers, thread_name_prefix="langchain-om"
                )
            self._jobs[key] = self._pool.submit(run_sync, plan, executor)
            return True

    def start_task(self, key: str, plan: Plan[Any], executor: Executor) -> bool:
        """Run ``plan`` as a task on the running loop unless ``key`` is already running."""
        if self.manual:
            return self._queue(key, plan, executor, True)
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and not job.done():
                plan.close()
                return False
            self._jobs[key] = asyncio.get_running_loop().create_task(run_async(plan, executor))
            return True

    def wait(self, key: str, timeout: float | None) -> None:
        """Block until ``key`` finishes (or ``timeout``); never raises for the job's error."""
        with self._lock:
            job = self._jobs.get(key)
        if isinstance(job, concurrent.futures.Future):
            try:
                job.result(timeout)
            except Exception:
                logger.debug("background job %s ended with an error", key, exc_info=True)

    async def await_key(self, key: str, timeout: float | None) -> None:
        """Async twin of :meth:`wait` (also waits for jobs running as tasks)."""
        with self._lock:
            job = self._jobs.get(key)
        if job is None or job.done():
            return
        waitable: Any = (
            asyncio.wrap_future(job) if isinstance(job, concurrent.futures.Future) else job
        )
        if isinstance(job, asyncio.Task) and job.get_loop() is not asyncio.get_running_loop():
            return
        try:
            await asyncio.wait_for(asyncio.shield(waitable), timeout)
        except Exception:
            logger.debug("background job %s ended with an error", key, exc_info=True)

    def keys(self) -> list[str]:
        """Keys of the jobs that have not finished."""
        with self._lock:
            return [k for k, j in self._jobs.items() if not j.done()] + list(self.pending)

    def shutdown(self) -> None:
        """Stop the worker threads after their current jobs."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
