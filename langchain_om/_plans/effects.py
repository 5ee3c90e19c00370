"""Effects: the I/O requests a plan yields, and the one pair of drivers that carries them out.

A plan is a generator that yields effects (call a model, run store ops, call a hook, wait for
a background job, sleep) and receives their results, or has their exception thrown into it.
:func:`run_sync` and :func:`run_async` are the only places where sync and async differ: they
hand each effect to a handler's ``execute`` or ``aexecute``. :class:`Executor` handles the
effects of memory's plans; the retry loop of :mod:`langchain_om.retry` brings its own handler.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import copy
import inspect
from collections.abc import Awaitable, Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Self, TypeVar

from langchain_core.messages import BaseMessage
from langgraph.store.base import BaseStore, GetOp, Op, PutOp, SearchOp

from langchain_om._core.redact import redacted_logger
from langchain_om._core.sanitize import has_unstorable, sanitize_text, sanitize_value

logger = redacted_logger("langchain_om")

T = TypeVar("T")
E_contra = TypeVar("E_contra", contravariant=True)


@dataclass(frozen=True)
class ModelCall:
    """Call the Observer or Reflector model with ``messages``."""

    role: Literal["observer", "reflector"]
    messages: Sequence[BaseMessage]
    input_tokens: int
    thread_id: str
    resource_id: str | None
    cycle_id: str | None = None
    """The cycle the call belongs to (traced as run metadata)."""
    trigger: str | None = None
    """What started the cycle (``threshold``, ``async-buffer``, ...; traced as run metadata)."""
    temperature: float | None = None
    """Overrides the role's sampling temperature (the retry after a looping reply)."""
    output_budget: int | None = None
    """Tokens the reply may take (bound as the provider's output limit; ``None``: none)."""
    source: str | None = None
    """The text the reply is written from: repetition it supports is not a loop."""


def reply_text(result: Any) -> str:
    """The text of a :class:`ModelCall`'s result (a model result or a message)."""
    message = getattr(result, "message", result)
    if isinstance(message, BaseMessage):
        return message.text if isinstance(message.text, str) else str(message.text)
    return str(message)


class WaitBudget:
    """Seconds a synchronous step may still spend waiting between retries of model calls.

    The engine opens one for each plan it runs for a caller who waits (:func:`waiting_at_most`);
    every retry of the step's Observer, Reflector and extractor calls takes its delay from it,
    and a retry whose delay no longer fits is not made (the call fails, the cycle's backoff
    takes over). Background jobs run with none: they wait as the retry policy says.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = max(0.0, seconds)

    def take(self, delay: float) -> bool:
        """Spend ``delay`` seconds if they fit; ``False`` (nothing spent) when they do not."""
        if delay > self.seconds:
            return False
        self.seconds -= delay
        return True


SYNC_WAIT: contextvars.ContextVar[WaitBudget | None] = contextvars.ContextVar(
    "langchain_om_sync_wait", default=None
)
"""The wait budget of the synchronous step running in this context (``None``: no bound)."""


@contextmanager
def waiting_at_most(seconds: float | None) -> Iterator[None]:
    """Run the block under a wait budget of ``seconds`` (an enclosing one is kept)."""
    if seconds is None or SYNC_WAIT.get() is not None:
        yield
        return
    token = SYNC_WAIT.set(WaitBudget(seconds))
    try:
        yield
    finally:
        SYNC_WAIT.reset(token)


def unbounded(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` with no wait budget (a background job in a copy of its caller's context)."""
    SYNC_WAIT.set(None)
    return fn(*args)


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


@dataclass(frozen=True)
class Call:
    """Call a user function whose result the plan needs (a transform hook, an extractor call).

    Unlike :class:`HookCall`, the result is sent back to the plan and an error is thrown into
    it. ``fn`` may be sync or async; the async driver prefers ``afn`` when given.
    """

    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    afn: Callable[..., Awaitable[Any]] | None = None


Effect = ModelCall | StoreBatch | HookCall | AwaitBackground | Call
Plan = Generator[Effect, Any, T]


class Handler(Protocol[E_contra]):
    """Carries out the effects of one kind of plan, blocking or async."""

    def execute(self, effect: E_contra) -> Any:
        """Carry out ``effect`` and return its result (or raise its error)."""
        ...

    def aexecute(self, effect: E_contra) -> Awaitable[Any]:
        """Async twin of :meth:`execute`."""
        ...


class Waiter(Protocol):
    """Waits for background jobs (see :class:`~langchain_om._plans.background.Background`)."""

    def wait(self, key: str, timeout: float | None) -> None:
        """Block until the job ``key`` finishes (or ``timeout``)."""
        ...

    def await_key(self, key: str, timeout: float | None) -> Awaitable[None]:
        """Async twin of :meth:`wait`."""
        ...


class Executor:
    """Carries out memory's effects: the engine provides model calls; the store is injected."""

    def __init__(
        self,
        *,
        store: BaseStore,
        call_model: Callable[[ModelCall], Any],
        acall_model: Callable[[ModelCall], Awaitable[Any]],
        background: Waiter | None = None,
    ) -> None:
        self.store = store
        self._call_model = call_model
        self._acall_model = acall_model
        self.background = background

    def with_store(self, store: BaseStore) -> Self:
        """The same executor (subclass and all) on another store (a graph run's store)."""
        clone = copy.copy(self)
        clone.store = store
        return clone

    def _waiter(self, effect: AwaitBackground) -> Waiter:
        if self.background is None:
            raise RuntimeError(f"no background runner to wait for job {effect.key!r}")
        return self.background

    def execute(self, effect: Effect) -> Any:
        """Carry out ``effect`` with blocking I/O."""
        if isinstance(effect, ModelCall):
            return self._call_model(effect)
        if isinstance(effect, StoreBatch):
            return self.store.batch(storable(effect.ops)) if effect.ops else []
        if isinstance(effect, AwaitBackground):
            return self._waiter(effect).wait(effect.key, effect.timeout)
        if isinstance(effect, Call):
            return _call_sync(effect)
        return _call_hook_sync(effect)

    async def aexecute(self, effect: Effect) -> Any:
        """Carry out ``effect`` with async I/O."""
        if isinstance(effect, ModelCall):
            return await self._acall_model(effect)
        if isinstance(effect, StoreBatch):
            return await self.store.abatch(storable(effect.ops)) if effect.ops else []
        if isinstance(effect, AwaitBackground):
            return await self._waiter(effect).await_key(effect.key, effect.timeout)
        if isinstance(effect, Call):
            return await _call_async(effect)
        return await _call_hook_async(effect)


def storable(ops: Sequence[Op]) -> list[Op]:
    """``ops`` with NUL and lone surrogates replaced by visible markers.

    PostgreSQL rejects NUL (``U+0000``) and no UTF-8 store can hold a lone surrogate; replacing
    them here (:mod:`~langchain_om._core.sanitize`) lets every store accept the same messages
    and ids. Put values and keys, get keys and search filters are all replaced the same way,
    so a key or filter names what was stored (namespaces are label-encoded already).
    """
    if _clean_gets(ops):
        return list(ops)
    out: list[Op] = []
    for op in ops:
        if isinstance(op, PutOp):
            value, changed = sanitize_value(op.value) if op.value is not None else (None, False)
            key = sanitize_text(op.key)
            if changed or key != op.key:
                op = op._replace(key=key, value=value)
        elif isinstance(op, GetOp):
            key = sanitize_text(op.key)
            if key != op.key:
                op = op._replace(key=key)
        elif isinstance(op, SearchOp) and op.filter:
            flt, changed = sanitize_value(op.filter)
            if changed:
                op = op._replace(filter=flt)
        out.append(op)
    return out


def _clean_gets(ops: Sequence[Op]) -> bool:
    """Whether ``ops`` are all ``GetOp`` with storable keys (a step's reads: one check)."""
    keys: list[str] = []
    for op in ops:
        if type(op) is not GetOp:
            return False
        keys.append(op.key)
    return not has_unstorable("".join(keys))


def run_sync(plan: Generator[E_contra, Any, T], handler: Handler[E_contra]) -> T:
    """Drive ``plan`` to completion with blocking I/O."""
    send: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                effect = plan.throw(error) if error is not None else plan.send(send)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            send, error = None, None
            try:
                send = handler.execute(effect)
            except Exception as exc:
                error = exc
    finally:
        plan.close()


async def run_async(plan: Generator[E_contra, Any, T], handler: Handler[E_contra]) -> T:
    """Drive ``plan`` to completion with async I/O."""
    send: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                effect = plan.throw(error) if error is not None else plan.send(send)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            send, error = None, None
            try:
                send = await handler.aexecute(effect)
            except Exception as exc:
                error = exc
    finally:
        plan.close()


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


def _call_sync(effect: Call) -> Any:
    result = effect.fn(*effect.args)
    return _run_coroutine_blocking(result) if inspect.isawaitable(result) else result


async def _call_async(effect: Call) -> Any:
    result = (effect.afn or effect.fn)(*effect.args)
    return await result if inspect.isawaitable(result) else result


def _run_coroutine_blocking(awaitable: Awaitable[Any]) -> Any:
    """Run an async hook from the sync path (in a fresh loop, on a worker thread if needed)."""

    async def wrap() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wrap())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, wrap()).result()
