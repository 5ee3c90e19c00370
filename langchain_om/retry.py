"""Resilient model calls: transient-error classification, backoff, fallbacks.

:func:`invoke_model` and :func:`ainvoke_model` call the :class:`ModelAttempt`
list that :func:`~langchain_om.models.plan_attempts` builds from a model spec. Transient provider
errors (:func:`is_transient`: timeouts, 408, 425, 429, 5xx) are retried with the exponential
backoff and jitter of a :class:`RetryPolicy`, then the next model is tried; every retry and
fallback is told to ``on_retry`` as a :class:`RetryEvent`. The retry loop is a plan (a
generator that yields "call this model" and "sleep this long" steps) run by the shared drivers
of :mod:`langchain_om._plans.effects`, so sync and async behave identically.

Example:
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> from langchain_om.models import ModelWithRetries, plan_attempts
    >>> model = FakeListChatModel(responses=["🔴 User prefers tea"])
    >>> attempts = plan_attempts([ModelWithRetries(model, max_retries=1)])
    >>> result = invoke_model(attempts, "observe this", sleep=lambda _: None)
    >>> result.message.text, result.attempts
    ('🔴 User prefers tea', 1)

Why not LangChain's retry and fallback layers (langchain-core 1.8, langchain 1.5):

* ``Runnable.with_retry`` (``RunnableRetry``) retries ``invoke``/``ainvoke`` and batches only:
  its ``stream``/``astream`` are not retried, and memory streams every call so a looping reply
  is cut (:mod:`langchain_om._core.stream_reader`). Its tenacity wait ignores ``Retry-After``,
  it tells no callback about a retry (``on_retry`` feeds the failed-cycle events), and it knows
  no bound on what a synchronous step may wait in total (``max_sync_wait``).
* ``Runnable.with_fallbacks`` streams the next model only when the first chunk fails and keeps
  no record of the failed calls; :class:`ModelCallResult` counts them (``attempts``,
  ``retries``, ``errors``) for events, receipts and the spend ledger.
* ``ModelRetryMiddleware`` and ``ModelFallbackMiddleware`` wrap the *agent's* model call
  (``wrap_model_call`` in the agent graph); the Observer's and the Reflector's calls are not
  agent model calls, so no agent middleware sees them. They also sleep with ``time.sleep``
  directly (tests could not skip the waits) and jitter by a fixed 25%.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple, TypeAlias

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig

from langchain_om._core.loop_cut import StreamCut
from langchain_om._core.redact import redacted_logger, status_code
from langchain_om._core.stream_reader import StreamReader
from langchain_om._plans.damping import retry_after_of
from langchain_om._plans.effects import SYNC_WAIT, run_async, run_sync
from langchain_om.errors import ModelResolutionError, OMConfigError

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_RETRY_POLICY",
    "ModelAttempt",
    "ModelCallResult",
    "ModelUsage",
    "RetryEvent",
    "RetryPolicy",
    "ainvoke_model",
    "invoke_model",
    "is_transient",
]

logger = redacted_logger("langchain_om.retry")

DEFAULT_MAX_RETRIES = 3
"""Retries per model when a spec sets none (see :class:`~langchain_om.models.ModelWithRetries`)."""


_TRANSIENT_STATUS = frozenset({408, 425, 429})
_TRANSIENT_STATUS_NAMES = frozenset(
    {"RESOURCE_EXHAUSTED", "UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL"}
)
_TRANSIENT_NAME = re.compile(
    r"Timeout|TimedOut|DeadlineExceeded|ConnectError|ConnectionError|APIConnectionError"
    r"|RateLimit|TooManyRequests|ResourceExhausted|ServiceUnavailable|InternalServerError"
    r"|Overloaded|RemoteProtocolError|NetworkError|ServerDisconnected"
)


def _status_of(exc: BaseException) -> int | str | None:
    """The HTTP status an error carries, else a gRPC-style status name, else ``None``."""
    code = status_code(exc)
    if code is not None:
        return code
    status = getattr(exc, "status", None)
    return status if isinstance(status, str) and status.isupper() else None


def is_transient(exc: BaseException) -> bool:
    """Tell whether retrying the call that raised ``exc`` may succeed.

    Transient: timeouts, connection errors, HTTP 408/425/429 and 5xx (read from
    ``status_code``, ``status``, ``code`` or ``response.status_code``), and provider errors
    whose class names say so (``RateLimitError``, ``APITimeoutError``, ``ServiceUnavailable``,
    …), also when they are the ``__cause__`` of a wrapper. Never transient: other 4xx (auth,
    bad request), ``ValueError``/``TypeError``, ``KeyboardInterrupt`` and cancellation.

    Example:
        >>> is_transient(TimeoutError()), is_transient(ValueError("bad prompt"))
        (True, False)
    """
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 5:
        if not isinstance(current, Exception) or isinstance(current, asyncio.CancelledError):
            return False
        status = _status_of(current)
        if isinstance(status, int):
            return status in _TRANSIENT_STATUS or 500 <= status < 600
        if isinstance(status, str) and status in _TRANSIENT_STATUS_NAMES:
            return True
        if isinstance(current, TimeoutError | ConnectionError):
            return True
        if any(_TRANSIENT_NAME.search(cls.__name__) for cls in type(current).__mro__):
            return True
        if isinstance(current, ValueError | TypeError | LookupError | AttributeError):
            return False
        current = current.__cause__
        seen += 1
    return False


@dataclass(frozen=True)
class RetryPolicy:
    """How transient failures are retried: exponential backoff with jitter.

    Retry ``n`` (0-based) waits ``min(max_delay, base_delay * 2**n)``, scaled by a random
    factor in ``[1 - jitter, 1 + jitter]`` and never more than ``max_delay``; a provider's
    ``Retry-After`` header lengthens the wait (up to ``max_delay``). A step the caller waits
    for spends at most ``max_sync_wait`` seconds on these waits in total.

    Example:
        >>> policy = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=0.2, rng=lambda: 0.5)
        >>> [policy.delay(n) for n in range(4)]
        [1.0, 2.0, 4.0, 5.0]
    """

    max_retries: int = DEFAULT_MAX_RETRIES
    """Retries per model for attempts that do not set their own."""
    base_delay: float = 1.0
    max_delay: float = 60.0
    jitter: float = 0.2
    retry_on: Callable[[BaseException], bool] = field(default=is_transient, compare=False)
    """Decides whether an error is worth retrying."""
    rng: Callable[[], float] = field(default=random.random, compare=False, repr=False)
    """Uniform random numbers in ``[0, 1)`` for jitter (injectable for tests)."""
    max_sync_wait: float = 10.0
    """Most seconds a synchronous step waits between retries, all its model calls together
    (the Observer's, the Reflector's, the extractors'). A retry whose delay no longer fits is
    not made: the cycle fails and later turns back off, honouring ``Retry-After``. Background
    buffering and reflection wait as the policy says (``max_delay`` per retry)."""

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.base_delay < 0 or self.max_delay < 0:
            raise OMConfigError("RetryPolicy values must be >= 0.", option="retry_policy")
        if self.max_sync_wait < 0:
            raise OMConfigError(
                "RetryPolicy.max_sync_wait must be >= 0 (seconds a turn may wait for retries).",
                option="retry_policy",
            )
        if not 0 <= self.jitter <= 1:
            raise OMConfigError("RetryPolicy.jitter must be in [0, 1].", option="retry_policy")

    def delay(self, retry: int, error: BaseException | None = None) -> float:
        """Return the seconds to wait before retry number ``retry`` (0-based)."""
        base = min(self.max_delay, self.base_delay * 2.0 ** min(retry, 64))
        wait = base * (1.0 + self.jitter * (2.0 * self.rng() - 1.0))
        hinted = retry_after_of(error, now=datetime.now(UTC)) if error is not None else None
        if hinted is not None:
            wait = max(wait, hinted)
        return max(0.0, min(self.max_delay, wait))


DEFAULT_RETRY_POLICY = RetryPolicy()


@dataclass(frozen=True)
class RetryEvent:
    """Told to ``on_retry`` when a call failed and another try follows.

    ``delay`` is set when the same model is retried after that many seconds;
    ``next_model_id`` is set instead when the next model of the list is tried.
    """

    model_id: str
    attempt: int
    """1-based number of the failed try on this model."""
    error: Exception
    delay: float | None = None
    next_model_id: str | None = None


class ModelUsage(NamedTuple):
    """Token usage reported by the provider."""

    input_tokens: int
    output_tokens: int
    total_tokens: int


@dataclass(frozen=True)
class ModelCallResult:
    """The outcome of a successful (possibly retried) model call."""

    message: AIMessage
    model_id: str
    """Identity of the model that answered."""
    attempts: int
    """Model calls made in total, failed ones included."""
    retries: int
    """Retries of a model after a transient failure (fallbacks to the next model excluded)."""
    usage: ModelUsage | None
    provider_metadata: dict[str, Any]
    """The answer's ``response_metadata``."""
    errors: tuple[tuple[str, Exception], ...] = ()
    """``(model_id, error)`` of every failed call, in order."""

    @property
    def text(self) -> str:
        """The answer's text content."""
        return self.message.text


class ModelAttempt(NamedTuple):
    """One model to call for a role, with its retry budget.

    ``max_retries`` of ``None`` means "use the :class:`RetryPolicy`'s". ``bound`` is the
    model with settings bound (see :func:`~langchain_om.models.apply_settings`);
    :attr:`runnable` is what is called.
    """

    model: BaseChatModel
    max_retries: int | None
    model_id: str
    bound: Runnable[LanguageModelInput, BaseMessage] | None = None
    finish: Callable[[AIMessage], AIMessage] | None = None
    """Turns the model's raw reply into the answer (a structured reply rendered as text)."""

    @property
    def runnable(self) -> Runnable[LanguageModelInput, BaseMessage]:
        """The runnable to call: the bound model, else the model."""
        return self.bound if self.bound is not None else self.model


@dataclass(frozen=True)
class _Call:
    """Call ``attempt``'s model with the prompt; the result is its output."""

    attempt: ModelAttempt


@dataclass(frozen=True)
class _Sleep:
    """Wait ``seconds`` before the next try."""

    seconds: float


_Step: TypeAlias = _Call | _Sleep
_Plan: TypeAlias = Generator[_Step, Any, ModelCallResult]


@dataclass(frozen=True)
class _Caller:
    """Carries out the retry plan's steps for one prompt (for the shared drivers).

    With ``watch``, each call is streamed through a fresh :class:`StreamCut`, which stops
    the generation as soon as the reply loops or reaches its budget
    (:class:`~langchain_om._core.stream_reader.StreamReader`); without it, a plain invoke.
    """

    messages: LanguageModelInput
    config: RunnableConfig | None
    sleep: Callable[[float], Any]
    """Blocking for :meth:`execute`, a coroutine function for :meth:`aexecute`."""
    watch: Callable[[], StreamCut] | None = None

    def execute(self, step: _Step) -> Any:
        if isinstance(step, _Sleep):
            return self.sleep(step.seconds)
        runnable = step.attempt.runnable
        if self.watch is None:
            return _finished(step.attempt, runnable.invoke(self.messages, self.config))
        reader = StreamReader(self.watch())
        stream = runnable.stream(self.messages, self.config, **_stream_options(step.attempt))
        try:
            for chunk in stream:
                if reader.add(chunk):
                    break
        except Exception as exc:
            reader.ended_by(exc)
        finally:
            getattr(stream, "close", lambda: None)()
        return _finished(step.attempt, reader.message())

    async def aexecute(self, step: _Step) -> Any:
        if isinstance(step, _Sleep):
            return await self.sleep(step.seconds)
        runnable = step.attempt.runnable
        if self.watch is None:
            return _finished(step.attempt, await runnable.ainvoke(self.messages, self.config))
        reader = StreamReader(self.watch())
        stream = runnable.astream(self.messages, self.config, **_stream_options(step.attempt))
        try:
            async for chunk in stream:
                if reader.add(chunk):
                    break
        except Exception as exc:
            reader.ended_by(exc)
        finally:
            closing = getattr(stream, "aclose", None)
            if closing is not None:
                await closing()
        return _finished(step.attempt, reader.message())


def _stream_options(attempt: ModelAttempt) -> dict[str, Any]:
    """Ask for the usage of a streamed reply where the model has the standard switch.

    OpenAI-compatible clients (``ChatOpenAI`` with a ``base_url``) send no usage while
    streaming unless ``stream_usage`` is on, and memory's calls are streamed so a loop can be
    cut: without it every call's cost would be unknown. A model that sets the switch itself
    (``stream_usage=False`` for a server that refuses it) keeps its choice.
    """
    fields = getattr(type(attempt.model), "model_fields", {})
    if "stream_usage" in fields and getattr(attempt.model, "stream_usage", False) is None:
        return {"stream_usage": True}
    return {}


def _finished(attempt: ModelAttempt, output: Any) -> Any:
    if attempt.finish is not None and isinstance(output, AIMessage):
        return attempt.finish(output)
    return output


def _notify(on_retry: Callable[[RetryEvent], object] | None, event: RetryEvent) -> None:
    if on_retry is None:
        return
    try:
        on_retry(event)
    except Exception:
        logger.exception("on_retry callback failed; the model call goes on")


def _retry_plan(
    attempts: Sequence[ModelAttempt],
    policy: RetryPolicy,
    on_retry: Callable[[RetryEvent], object] | None,
) -> _Plan:
    """The retry loop, run by the shared drivers.

    Yields a :class:`_Call` (the driver sends back the output, or throws the call's error in)
    or a :class:`_Sleep`; returns the result or raises the last error.
    """
    if not attempts:
        raise ModelResolutionError("No model to call: the model spec expanded to nothing.")
    errors: list[tuple[str, Exception]] = []
    retries = 0
    for index, attempt in enumerate(attempts):
        budget = attempt.max_retries if attempt.max_retries is not None else policy.max_retries
        for tried in range(1, budget + 2):
            try:
                output = yield _Call(attempt)
            except Exception as exc:
                error = exc
            else:
                return _result(output, attempt, len(errors) + 1, retries, errors)
            errors.append((attempt.model_id, error))
            if tried > budget or not policy.retry_on(error):
                break
            delay = policy.delay(tried - 1, error)
            waiting = SYNC_WAIT.get()
            if waiting is not None and not waiting.take(delay):
                logger.info(
                    "model %s failed (%s, try %d); a retry in %.1fs would pass the %.1fs a "
                    "synchronous step may still wait: not retried now",
                    attempt.model_id,
                    type(error).__name__,
                    tried,
                    delay,
                    waiting.seconds,
                )
                break
            logger.info(
                "model %s failed (%s, try %d of %d); retrying in %.1fs",
                attempt.model_id,
                type(error).__name__,
                tried,
                budget + 1,
                delay,
            )
            _notify(on_retry, RetryEvent(attempt.model_id, tried, error, delay))
            retries += 1
            yield _Sleep(delay)
        if index + 1 < len(attempts):
            next_id = attempts[index + 1].model_id
            logger.info(
                "model %s failed (%s); falling back to %s",
                attempt.model_id,
                type(errors[-1][1]).__name__,
                next_id,
            )
            _notify(on_retry, RetryEvent(attempt.model_id, tried, errors[-1][1], None, next_id))
    last = errors[-1][1]
    logger.warning(
        "model call failed after %d attempt(s) on %s: %s",
        len(errors),
        ", ".join(dict.fromkeys(mid for mid, _ in errors)),
        type(last).__name__,
    )
    if len(errors) > 1:
        history = "; ".join(f"{mid}: {type(err).__name__}" for mid, err in errors[:-1])
        last.add_note(f"langchain-om: {len(errors)} model calls failed ({history}; then this)")
    raise last


def _result(
    output: object,
    attempt: ModelAttempt,
    calls: int,
    retries: int,
    errors: Sequence[tuple[str, Exception]],
) -> ModelCallResult:
    if not isinstance(output, AIMessage):
        raise TypeError(
            f"Model {attempt.model_id} returned {type(output).__name__}, not an AIMessage; "
            "call invoke_model with a chat model (structured output is parsed by the caller)."
        )
    meta = output.usage_metadata
    usage = (
        ModelUsage(meta["input_tokens"], meta["output_tokens"], meta["total_tokens"])
        if meta
        else None
    )
    return ModelCallResult(
        message=output,
        model_id=attempt.model_id,
        attempts=calls,
        retries=retries,
        usage=usage,
        provider_metadata=dict(output.response_metadata),
        errors=tuple(errors),
    )


def invoke_model(
    attempts: Sequence[ModelAttempt],
    messages: LanguageModelInput,
    *,
    policy: RetryPolicy = DEFAULT_RETRY_POLICY,
    config: RunnableConfig | None = None,
    sleep: Callable[[float], object] = time.sleep,
    on_retry: Callable[[RetryEvent], object] | None = None,
    watch: Callable[[], StreamCut] | None = None,
) -> ModelCallResult:
    """Call the models of ``attempts`` in order, retrying transient failures.

    Args:
        attempts: From :func:`~langchain_om.models.plan_attempts`.
        messages: The prompt (messages or a string).
        policy: Backoff and retry classification.
        config: ``RunnableConfig`` for the model call (tags, callbacks).
        sleep: Waits between retries (inject a no-op in tests).
        on_retry: Told about each retry and each fallback; its errors are logged.
        watch: Makes a fresh :class:`~langchain_om._core.loop_cut.StreamCut` for each call:
            the call is then streamed and stopped as soon as the reply loops or reaches its
            budget (the answer's ``response_metadata`` says so, see
            :mod:`langchain_om._core.stream_reader`).

    Returns:
        The answer and how it was obtained.

    Raises:
        Exception: The last model error when every attempt failed (the caller wraps it).

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> from langchain_om.models import plan_attempts
        >>> attempts = plan_attempts(FakeListChatModel(responses=["ok"]))
        >>> invoke_model(attempts, "hi").text
        'ok'
    """
    caller = _Caller(messages, config, sleep, watch)
    return run_sync(_retry_plan(attempts, policy, on_retry), caller)


async def ainvoke_model(
    attempts: Sequence[ModelAttempt],
    messages: LanguageModelInput,
    *,
    policy: RetryPolicy = DEFAULT_RETRY_POLICY,
    config: RunnableConfig | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    on_retry: Callable[[RetryEvent], object] | None = None,
    watch: Callable[[], StreamCut] | None = None,
) -> ModelCallResult:
    """Async twin of :func:`invoke_model` (same plan; ``sleep`` is awaited).

    Example:
        >>> import asyncio
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> from langchain_om.models import plan_attempts
        >>> attempts = plan_attempts(FakeListChatModel(responses=["ok"]))
        >>> asyncio.run(ainvoke_model(attempts, "hi")).text
        'ok'
    """
    caller = _Caller(messages, config, sleep, watch)
    return await run_async(_retry_plan(attempts, policy, on_retry), caller)
