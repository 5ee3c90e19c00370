"""The cycle frame: what every observation or reflection cycle shares.

:class:`Cycle` holds a cycle's ids, timing and model usage; :func:`run_cycle` wraps the work of
every cycle, synchronous or background, with its start/end/failed events, hooks and failure;
:func:`status_event` builds ``data-om-status``. The cycles themselves are in
:mod:`~langchain_om._plans.observation` and :mod:`~langchain_om._plans.reflection`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage

from langchain_om._core.dates import iso
from langchain_om._core.receipts import savings
from langchain_om._core.record import new_id
from langchain_om._core.redact import error_summary, redacted_logger
from langchain_om._core.stream_reader import STREAM_KEY
from langchain_om._core.types import OMRecord
from langchain_om._plans.effects import HookCall, Plan
from langchain_om._plans.types import Trigger, TurnEnv, TurnInput, emit_event
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import CycleFailedError
from langchain_om.events import (
    ArchiveStatus,
    BufferingEndEvent,
    BufferingFailedEvent,
    BufferingStartEvent,
    ObservationEndEvent,
    ObservationFailedEvent,
    ObservationStartEvent,
    OMEvent,
    SpendStatus,
    StatusEvent,
    ThreadUpdateEvent,
)

logger = redacted_logger("langchain_om")


def failure_reason(exc: BaseException) -> str:
    """The reason code of a failed cycle: the rejection's own, else ``model-error``."""
    reason = getattr(exc, "reason", None)
    return reason if isinstance(reason, str) and reason else "model-error"


def status_event(
    env: TurnEnv,
    record: OMRecord,
    window_tokens: int,
    step_number: int,
    *,
    chunks: Sequence[Mapping[str, Any]] = (),
    buffering: bool = False,
    projected_removal: int = 0,
    reflection: Mapping[str, Any] | None = None,
    reflecting: bool = False,
    spend: SpendStatus | None = None,
) -> StatusEvent:
    """``data-om-status`` for a record, its window and the buffered work."""
    obs_status = "running" if buffering else ("complete" if chunks else "idle")
    ref_status = "running" if reflecting else ("complete" if reflection else "idle")
    found = savings(record)
    # One validation of the whole event (its parts as dicts): built before every model call.
    return StatusEvent.model_validate(
        {
            "messages": {"tokens": window_tokens, "threshold": env.message_threshold(record)},
            "observations": {
                "tokens": record["observation_tokens"],
                "threshold": env.config.reflection.observation_tokens_abs,
            },
            "buffered_observations": {
                "chunks": len(chunks),
                "message_tokens": sum(int(c["message_tokens"]) for c in chunks),
                "projected_message_removal": projected_removal,
                "observation_tokens": sum(int(c["tokens"]) for c in chunks),
                "status": obs_status,
            },
            "buffered_reflection": {
                "input_observation_tokens": int(reflection["input_tokens"]) if reflection else 0,
                "observation_tokens": int(reflection["tokens"]) if reflection else 0,
                "status": ref_status,
            },
            "record_id": record["record_id"],
            "thread_id": record["thread_id"],
            "step_number": step_number,
            "generation_count": record["generation"],
            "savings": {
                "observed_tokens": found.observed_tokens,
                "context_tokens": found.context_tokens,
                "tokens_saved": found.tokens_saved,
            },
            "archive": _archive_status(env, record),
            "spend": spend,
        }
    )


def _archive_status(env: TurnEnv, record: OMRecord) -> ArchiveStatus | None:
    cfg = env.config.observation.archive
    if cfg is None:
        return None
    state = record.get("archive") or {}
    return ArchiveStatus(
        archives=int(state.get("count") or 0),
        catalog_tokens=int(state.get("catalog_tokens") or 0),
        after_tokens=cfg.after_tokens,
        keep_tokens=cfg.keep_tokens,
        max_catalog_tokens=cfg.max_catalog_tokens,
    )


def _hook(env: TurnEnv, name: str, payload: dict[str, Any]) -> Plan[None]:
    hook = getattr(env.config.hooks, name, None) if env.config.hooks is not None else None
    if hook is not None:
        yield HookCall(name=name, hook=hook, payload=payload)


def _hook_payload(inp: TurnInput, trigger: Trigger, **extra: Any) -> dict[str, Any]:
    return {
        "thread_id": inp.thread_id,
        "resource_id": inp.resource_id,
        "trigger": trigger,
        **extra,
    }


def _usage(result: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    message = getattr(result, "message", None)
    usage: Any = getattr(result, "usage", None)
    if hasattr(usage, "_asdict"):
        usage = usage._asdict()
    if usage is None and isinstance(message, AIMessage) and message.usage_metadata:
        usage = dict(message.usage_metadata)
    meta = getattr(result, "provider_metadata", None)
    if meta is None and isinstance(message, AIMessage):
        meta = dict(message.response_metadata)
    return (dict(usage) if usage else None), (dict(meta) if meta else None)


def _output_tokens(usage: Mapping[str, Any] | None, meta: Mapping[str, Any] | None) -> int:
    if usage and isinstance(usage.get("output_tokens"), int):
        return int(usage["output_tokens"])
    streamed = (meta or {}).get(STREAM_KEY)
    if isinstance(streamed, Mapping) and isinstance(streamed.get("output_tokens"), int):
        return int(streamed["output_tokens"])
    return 0


@dataclass
class Cycle:
    """One observation or reflection cycle: its ids, timing and what the model reported."""

    env: TurnEnv
    inp: TurnInput
    record: OMRecord
    operation: Literal["observation", "reflection"]
    tokens: int
    """Input tokens (messages to observe, or observations to reflect)."""
    trigger: Trigger
    cycle_id: str = field(default_factory=new_id)
    announced: bool = False
    """The start was already announced (by the step that scheduled this background job)."""
    started: float = field(default_factory=time.monotonic)
    usage: dict[str, Any] | None = None
    provider_metadata: dict[str, Any] | None = None
    seen: list[BaseMessage] | None = None
    """The messages the Observer was shown (after ``hooks.before_observation``)."""
    outcome: Literal["accepted", "salvaged"] = "accepted"
    """How the reply that ended the cycle was taken: whole, or the lines before a cut."""
    calls: int = 0
    """Model calls the cycle made (retries and ladder steps included)."""
    output_tokens: int = 0
    """Output tokens of those calls (the provider's count, else the stream's estimate)."""
    title_pinned: bool = False
    """The thread's title is pinned (``rename_thread``): the Observer's does not show."""

    def context(self) -> dict[str, Any]:
        """The ``ctx`` argument of the transform hooks."""
        return _hook_payload(
            self.inp,
            self.trigger,
            cycle_id=self.cycle_id,
            operation=self.operation,
            actor_model=self.inp.actor_model,
            memory=self.env.memory,
            configurable=dict(self.inp.configurable or {}),
        )

    @property
    def duration_ms(self) -> int:
        """Milliseconds since the cycle started."""
        return int((time.monotonic() - self.started) * 1000)

    def emit(self, event: OMEvent) -> None:
        """Send ``event`` to the engine's and the step's listeners."""
        emit_event(self.env, self.inp, event)

    def note(self, result: Any) -> None:
        """Keep the usage and provider metadata of a model result; add up what it cost."""
        self.usage, self.provider_metadata = _usage(result)
        self.calls += 1
        self.output_tokens += _output_tokens(self.usage, self.provider_metadata)

    def hook(self, when: Literal["start", "end"], **extra: Any) -> Plan[None]:
        """Call the user's ``on_<operation>_<when>`` hook, if set."""
        name = f"on_{self.operation}_{when}"
        payload = _hook_payload(self.inp, self.trigger, cycle_id=self.cycle_id, **extra)
        if when == "end":
            payload.setdefault("usage", self.usage)
            payload.setdefault("provider_metadata", self.provider_metadata)
            payload.setdefault("model_calls", self.calls)
            payload.setdefault("output_tokens", self.output_tokens)
            if payload.get("error") is None:
                payload.setdefault("outcome", self.outcome)
        yield from _hook(self.env, name, payload)

    def failed(
        self,
        error: str,
        *,
        retrying: bool = False,
        reason: str | None = None,
        retention: float | None = None,
    ) -> ObservationFailedEvent:
        """The ``data-om-observation-failed`` event of this cycle."""
        return ObservationFailedEvent(
            **_ids(self),
            failed_at=iso(self.env.now()),
            duration_ms=self.duration_ms,
            tokens_attempted=self.tokens,
            error=error,
            retrying=retrying,
            trigger=self.trigger,
            reason=reason,
            retention=retention,
            model_calls=self.calls,
            output_tokens=self.output_tokens,
        )


CycleBody = Callable[[Cycle], Plan[tuple[OMRecord, dict[str, Any]]]]
"""The work of a cycle: returns the new record (background work: the record unchanged) and the
end event's fields."""


def run_cycle(cycle: Cycle, body: CycleBody) -> Plan[OMRecord]:
    """Run ``body`` with start/end/failed events and hooks around it.

    A synchronous cycle reports ``data-om-observation-*`` events; a background one
    (``trigger="async-buffer"``) reports ``data-om-buffering-*`` events and never raises: on
    failure it returns the record unchanged and the synchronous path takes over later.

    Raises:
        CycleFailedError: a synchronous ``body`` failed; the record is unchanged (nothing was
            written).
    """
    background = cycle.trigger == "async-buffer"
    if not cycle.announced:
        cycle.emit(buffering_start(cycle) if background else _start_event(cycle))
    yield from cycle.hook("start")
    try:
        new, done = yield from body(cycle)
    except Exception as exc:
        summary = error_summary(exc)
        error = summary.text()
        reason = failure_reason(exc)
        retention = getattr(exc, "retention", None)
        logger.warning(
            "langchain-om %s%s cycle %s failed: reason=%s (%s)",
            "background " if background else "",
            cycle.operation,
            cycle.cycle_id,
            reason,
            type(exc).__name__,
            exc_info=(type(exc), exc, None),  # the full error for the logger, never for events
        )
        cycle.emit(
            _buffering_failed(cycle, error, reason, retention)
            if background
            else cycle.failed(error, reason=reason, retention=retention)
        )
        yield from cycle.hook(
            "end",
            error=exc,
            reason=reason,
            retention=retention,
            error_type=summary.type,
            status_code=summary.status_code,
            error_message=summary.message,
        )
        if background:
            return cycle.record
        raise _cycle_error(cycle, exc) from exc
    retention = done.get("retention")
    if background:
        cycle.emit(_buffering_end(cycle, done))
        yield from cycle.hook(
            "end", error=None, reason=None, observations=done["observations"], retention=retention
        )
        return new
    cycle.emit(_end_event(cycle, done))
    record = cycle.record
    if new.get("title") and new.get("title") != record.get("title") and not cycle.title_pinned:
        cycle.emit(
            ThreadUpdateEvent(
                cycle_id=cycle.cycle_id,
                thread_id=record["thread_id"],
                old_title=record.get("title"),
                new_title=str(new["title"]),
                timestamp=iso(cycle.env.now()),
            )
        )
    yield from cycle.hook(
        "end",
        error=None,
        reason=None,
        observations=done["observations"],
        generation=new["generation"],
        retention=retention,
    )
    return new


def _cycle_error(cycle: Cycle, exc: Exception) -> CycleFailedError:
    """The error raised to the caller: a redacted summary (the cause keeps the full error)."""
    thread_id = cycle.record["thread_id"]
    reason = error_summary(exc).text().rstrip().rstrip(".")
    if cycle.operation == "observation":
        message = (
            f"Observation failed for thread {thread_id!r}: {reason}. Nothing was "
            "removed from context. Set observation.failure_policy='continue' to go on "
            "without observing."
        )
    else:
        message = (
            f"Reflection failed for thread {thread_id!r}: {reason}. "
            "The observation log is unchanged."
        )
    return CycleFailedError(message, operation=cycle.operation, thread_id=thread_id)


def _ids(cycle: Cycle) -> dict[str, Any]:
    """The fields every event of a cycle carries."""
    return {
        "cycle_id": cycle.cycle_id,
        "operation_type": cycle.operation,
        "record_id": cycle.record["record_id"],
        "thread_id": cycle.record["thread_id"],
    }


def _start_event(cycle: Cycle) -> ObservationStartEvent:
    return ObservationStartEvent(
        **_ids(cycle),
        started_at=iso(cycle.env.now()),
        tokens_to_observe=cycle.tokens,
        trigger=cycle.trigger,
        config=_config_snapshot(cycle.env.config),
    )


def _spent(cycle: Cycle) -> dict[str, int]:
    return {"model_calls": cycle.calls, "output_tokens": cycle.output_tokens}


def _end_event(cycle: Cycle, done: dict[str, Any]) -> ObservationEndEvent:
    return ObservationEndEvent(
        **_ids(cycle),
        **_spent(cycle),
        completed_at=iso(cycle.env.now()),
        duration_ms=cycle.duration_ms,
        tokens_observed=cycle.tokens,
        trigger=cycle.trigger,
        **done,
    )


def buffering_start(cycle: Cycle, thread_ids: Sequence[str] = ()) -> BufferingStartEvent:
    """The ``data-om-buffering-start`` event of a background cycle (of ``thread_ids``)."""
    return BufferingStartEvent(
        **_ids(cycle),
        started_at=iso(cycle.env.now()),
        tokens_to_buffer=cycle.tokens,
        thread_ids=list(thread_ids),
    )


def _buffering_failed(
    cycle: Cycle, error: str, reason: str, retention: float | None
) -> BufferingFailedEvent:
    return BufferingFailedEvent(
        **_ids(cycle),
        failed_at=iso(cycle.env.now()),
        duration_ms=cycle.duration_ms,
        tokens_attempted=cycle.tokens,
        error=error,
        reason=reason,
        retention=retention,
        **_spent(cycle),
    )


def _buffering_end(cycle: Cycle, done: dict[str, Any]) -> BufferingEndEvent:
    return BufferingEndEvent(
        **_ids(cycle),
        **_spent(cycle),
        completed_at=iso(cycle.env.now()),
        duration_ms=cycle.duration_ms,
        tokens_buffered=cycle.tokens,
        **done,
    )


def _config_snapshot(cfg: ObservationalMemoryConfig) -> dict[str, Any]:
    return {
        "message_tokens": cfg.observation.message_tokens,
        "observation_tokens": cfg.reflection.observation_tokens,
        "scope": cfg.scope,
    }
