"""The background job runner: buffers and background reflections, at most one per key."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
from collections.abc import Callable
from typing import Any

from langchain_om._core.redact import redacted_logger
from langchain_om._plans.effects import Executor, Plan, run_async, run_sync, unbounded

logger = redacted_logger("langchain_om")


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
        self.pending: dict[str, tuple[Plan[Any], Executor]] = {}

    def running(self, key: str) -> bool:
        """True while the job ``key`` has not finished."""
        with self._lock:
            if key in self.pending:
                return True
            job = self._jobs.get(key)
        return job is not None and not job.done()

    def _queue(self, key: str, plan: Plan[Any], executor: Executor) -> bool:
        with self._lock:
            if key in self.pending:
                plan.close()
                return False
            self.pending[key] = (plan, executor)
            return True

    def run_pending(self, key: str | None = None) -> None:
        """Manual mode: run the queued job ``key`` (or all of them) now, on this thread."""
        with self._lock:
            keys = [key] if key is not None else list(self.pending)
            jobs = [(k, self.pending.pop(k)) for k in keys if k in self.pending]
        for _, (plan, executor) in jobs:
            contextvars.copy_context().run(unbounded, run_sync, plan, executor)

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

        def launch() -> concurrent.futures.Future[Any]:
            # The job runs in a copy of the caller's context: LangChain's callbacks (tracing)
            # travel in a context variable, so the job's model calls nest under the caller's run.
            context = contextvars.copy_context()
            return self._thread_pool().submit(context.run, unbounded, run_sync, plan, executor)

        return self._start(key, plan, executor, launch)

    def start_task(self, key: str, plan: Plan[Any], executor: Executor) -> bool:
        """Run ``plan`` as a task on the running loop unless ``key`` is already running."""

        async def job() -> Any:
            return await unbounded(run_async, plan, executor)

        def launch() -> asyncio.Task[Any]:
            return asyncio.get_running_loop().create_task(job())

        return self._start(key, plan, executor, launch)

    def _start(
        self,
        key: str,
        plan: Plan[Any],
        executor: Executor,
        launch: Callable[[], concurrent.futures.Future[Any] | asyncio.Task[Any]],
    ) -> bool:
        if self.manual:
            return self._queue(key, plan, executor)
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and not job.done():
                plan.close()
                return False
            job = self._jobs[key] = launch()
        job.add_done_callback(functools.partial(_log_failure, key))
        return True

    def _thread_pool(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=self._max_workers, thread_name_prefix="langchain-om"
            )
        return self._pool

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


def _log_failure(key: str, job: concurrent.futures.Future[Any] | asyncio.Task[Any]) -> None:
    """Log a background job that ended with an error (cycles report their own failures)."""
    if job.cancelled():
        return
    error = job.exception()
    if error is not None:
        logger.warning(
            "background job %s failed: %s (nothing was removed; the next step retries)",
            key,
            type(error).__name__,
        )
