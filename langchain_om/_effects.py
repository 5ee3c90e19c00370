"""Effects: the I/O requests a turn plan yields, and the two drivers that carry them out.

A turn is a generator that yields effects (call a model, run store ops, call a hook) and
receives their results (or has their exception thrown into it). :func:`run_sync` and
:func:`run_async` are the only places where sync and async differ.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
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


Effect = ModelCall | StoreBatch | HookCall
Plan = Generator[Effect, Any, T]


class Executor:
    """Carries out effects. The engine provides model calls; the store is injected."""

    def __init__(
        self,
        *,
        store: BaseStore,
        call_model: Callable[[ModelCall], Any],
        acall_model: Callable[[ModelCall], Awaitable[Any]],
    ) -> None:
        self.store = store
        self._call_model = call_model
        self._acall_model = acall_model

    def execute(self, effect: Effect) -> Any:
        if isinstance(effect, ModelCall):
            return self._call_model(effect)
        if isinstance(effect, StoreBatch):
            return self.store.batch(list(effect.ops)) if effect.ops else []
        return _call_hook_sync(effect)

    async def aexecute(self, effect: Effect) -> Any:
        if isinstance(effect, ModelCall):
            return await self._acall_model(effect)
        if isinstance(effect, StoreBatch):
            return await self.store.abatch(list(effect.ops)) if effect.ops else []
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
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, wrap()).result()
