"""OM cycles as plans: one cycle frame (events, hooks, failure) and the Observer/Reflector calls.

:func:`run_cycle` wraps the work of every cycle, synchronous or background; :func:`observe_plan`
and :func:`reflect_plan` are the synchronous cycles, :func:`call_observer` and
:func:`call_reflector` the model calls the background plans of :mod:`~langchain_om._plans.buffer`
share with them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage

from langchain_om._core.acceptance import (
    ObservationReason,
    instruction_text,
    judge_observation,
    with_format_reminder,
)
from langchain_om._core.dates import iso
from langchain_om._core.invented import drop_invented_tool_lines
from langchain_om._core.observer import (
    ObserverOutput,
    build_observer_messages,
    parse_observer_output,
)
from langchain_om._core.observer_input import format_messages_for_observer
from langchain_om._core.record import (
    append_observations,
    log_text,
    make_group,
    new_id,
    stable_id,
)
from langchain_om._core.redact import error_summary
from langchain_om._core.reflector import (
    LadderResult,
    ReflectionLadder,
    apply_reflection,
    build_reflector_messages,
    churn_guard_after,
    compression_start_level,
)
from langchain_om._core.truncation import TruncatedObservations, truncate_observations
from langchain_om._core.types import ObservationGroup, OMRecord
from langchain_om._core.window import split_batch
from langchain_om._plans.effects import HookCall, ModelCall, Plan, StoreBatch
from langchain_om._plans.extract import extract_plan, reflection_extractors
from langchain_om._plans.storage import observed_plan, reflected_ops
from langchain_om._plans.transforms import (
    after_observation,
    after_reflection,
    archived_messages,
    before_observation,
    before_reflection,
)
from langchain_om._plans.types import Trigger, TurnEnv, TurnInput, emit_event
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import CycleFailedError, ModelTierExceededError, ObserverOutputError
from langchain_om.events import (
    BufferedObservationsStatus,
    BufferedReflectionStatus,
    BufferingEndEvent,
    BufferingFailedEvent,
    BufferingStartEvent,
    ObservationEndEvent,
    ObservationFailedEvent,
    ObservationStartEvent,
    OMEvent,
    StatusEvent,
    ThreadUpdateEvent,
    WindowUsage,
)
from langchain_om.extractors import inline_extractors, persist, prior_values, run_extractors

logger = logging.getLogger("langchain_om")

BUFFERED_MARKER = "--- BUFFERED (pending activation) ---"

LOOP_RETRY_TEMPERATURE = 0.0
"""Sampling temperature of the retry after a looping (degenerate) Observer reply."""


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
) -> StatusEvent:
    """``data-om-status`` for a record, its window and the buffered work."""
    obs_status = "running" if buffering else ("complete" if chunks else "idle")
    ref_status = "running" if reflecting else ("complete" if reflection else "idle")
    return StatusEvent(
        messages=WindowUsage(tokens=window_tokens, threshold=env.message_threshold(record)),
        observations=WindowUsage(
            tokens=record["observation_tokens"],
            threshold=env.config.reflection.observation_tokens_abs,
        ),
        buffered_observations=BufferedObservationsStatus(
            chunks=len(chunks),
            message_tokens=sum(int(c["message_tokens"]) for c in chunks),
            projected_message_removal=projected_removal,
            observation_tokens=sum(int(c["tokens"]) for c in chunks),
            status=obs_status,
        ),
        buffered_reflection=BufferedReflectionStatus(
            input_observation_tokens=int(reflection["input_tokens"]) if reflection else 0,
            observation_tokens=int(reflection["tokens"]) if reflection else 0,
            status=ref_status,
        ),
        record_id=record["record_id"],
        thread_id=record["thread_id"],
        step_number=step_number,
        generation_count=record["generation"],
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


def _text(result: Any) -> str:
    message = getattr(result, "message", result)
    if isinstance(message, BaseMessage):
        return message.text if isinstance(message.text, str) else str(message.text)
    return str(message)


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
        """Keep the usage and provider metadata of a model result."""
        self.usage, self.provider_metadata = _usage(result)

    def hook(self, when: Literal["start", "end"], **extra: Any) -> Plan[None]:
        """Call the user's ``on_<operation>_<when>`` hook, if set."""
        name = f"on_{self.operation}_{when}"
        payload = _hook_payload(self.inp, self.trigger, cycle_id=self.cycle_id, **extra)
        if when == "end":
            payload.setdefault("usage", self.usage)
            payload.setdefault("provider_metadata", self.provider_metadata)
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
    if new.get("title") and new.get("title") != record.get("title"):
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


def _end_event(cycle: Cycle, done: dict[str, Any]) -> ObservationEndEvent:
    return ObservationEndEvent(
        **_ids(cycle),
        completed_at=iso(cycle.env.now()),
        duration_ms=cycle.duration_ms,
        tokens_observed=cycle.tokens,
        trigger=cycle.trigger,
        **done,
    )


def buffering_start(cycle: Cycle) -> BufferingStartEvent:
    """The ``data-om-buffering-start`` event of a background cycle."""
    return BufferingStartEvent(
        **_ids(cycle), started_at=iso(cycle.env.now()), tokens_to_buffer=cycle.tokens
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
    )


def _buffering_end(cycle: Cycle, done: dict[str, Any]) -> BufferingEndEvent:
    return BufferingEndEvent(
        **_ids(cycle),
        completed_at=iso(cycle.env.now()),
        duration_ms=cycle.duration_ms,
        tokens_buffered=cycle.tokens,
        **done,
    )


def previous_view(
    env: TurnEnv, record: OMRecord, pending_texts: Sequence[str] = ()
) -> TruncatedObservations | None:
    """The previous observations the Observer is shown (budgeted; buffered chunks last)."""
    text = log_text(record["groups"])
    if pending_texts:
        text = "\n\n".join(t for t in (text, BUFFERED_MARKER, *pending_texts) if t)
    if not text:
        return None
    budget = env.config.observation.previous_observer_tokens
    return truncate_observations(
        text, None if budget is False else int(budget), env.counter.count_text
    )


def observer_message_budget(env: TurnEnv) -> int:
    """Tokens one message may take in the Observer's input (longer ones keep head and tail).

    The Observer is meant to read about ``block_after`` tokens at a time; a message larger
    than that is shown cut in the middle (the raw message stays whole in the archive).
    """
    obs = env.config.observation
    return max(obs.message_tokens_abs, obs.block_after_tokens)


def call_observer(
    cycle: Cycle,
    batch: Sequence[BaseMessage],
    *,
    pending_texts: Sequence[str] = (),
    message_max_tokens: int | None = None,
) -> Plan[ObserverOutput]:
    """Ask the Observer about ``batch`` and accept only real observations.

    A rejected reply (:func:`~langchain_om._core.acceptance.judge_observation`) is retried once
    with a format reminder (a looping one also at a lower temperature), then the cycle fails.

    Raises:
        ObserverOutputError: both replies were rejected; ``reason`` holds the reason code.
    """
    env, record = cycle.env, cycle.record
    cfg = env.config
    batch = cycle.seen = yield from before_observation(env, cycle.context(), batch)
    if not batch:  # the hook withheld everything: observed, without a model call
        return ObserverOutput("", None, None, None, {}, degenerate=False, raw="")
    extractors = inline_extractors(env.extractors)
    history = format_messages_for_observer(
        batch,
        timezone=record["timezone"],
        tool_result_max_tokens=cfg.observation.tool_result_max_tokens,
        count=env.counter.count_text,
        now=env.now(),
        observe_attachments=cfg.observation.observe_attachments,
        extra_tags=[e.slug for e in extractors],
        message_max_tokens=message_max_tokens or observer_message_budget(env),
    )
    context = {**cycle.context(), "source": "observation"}
    prompt = build_observer_messages(
        history=history,
        previous=previous_view(env, record, pending_texts),
        prior_hints={
            **{k: str(v) for k, v in record["hints"].items()},
            **prior_values(extractors, record["extracted"]),
        },
        instruction=cfg.observation.instruction,
        thread_title=cfg.observation.thread_title,
        extractors=[(e.slug, e.text(context)) for e in extractors],
    )
    instructions = instruction_text(prompt)
    send: list[BaseMessage] = list(prompt)
    temperature: float | None = None
    reason: ObservationReason | None = None
    detail, raw = "", ""
    for attempt in range(2):
        result = yield ModelCall(
            role="observer",
            messages=send,
            input_tokens=env.counter.count_messages(send),
            thread_id=record["thread_id"],
            resource_id=record["resource_id"],
            temperature=temperature,
            cycle_id=cycle.cycle_id,
            trigger=cycle.trigger,
        )
        cycle.note(result)
        parsed = parse_observer_output(
            _text(result), extractor_slugs=[e.slug for e in extractors], source=history.text
        )
        verdict = judge_observation(
            parsed,
            input_tokens=cycle.tokens,
            observation_tokens=cfg.reflection.observation_tokens_abs,
            count=env.counter.count_text,
            instructions=instructions,
            source=history.text,
        )
        if verdict.accepted:
            accepted = replace(parsed, observations=verdict.observations)
            kept = _without_invented_tools(accepted, batch)
            text = yield from after_observation(env, cycle.context(), kept.observations)
            return replace(kept, observations=text)
        reason, detail, raw = verdict.reason or "unparseable", verdict.detail, parsed.raw
        if attempt == 0:
            if cycle.trigger != "async-buffer":
                cycle.emit(
                    cycle.failed(
                        f"Observer reply rejected ({reason}: {detail}); retrying",
                        retrying=True,
                        reason=reason,
                    )
                )
            send = with_format_reminder(prompt, reason)
            if reason == "degenerate":
                temperature = LOOP_RETRY_TEMPERATURE
    raise ObserverOutputError(
        f"The Observer's reply was rejected twice ({reason}: {detail}); nothing was observed.",
        raw=raw,
        reason=reason,
    )


PART_MARGIN = 0.8
"""Share of a tier's room a part aims for (the rendered input is larger than its messages)."""

MAX_SPLIT_DEPTH = 4
"""How often a part that still does not fit is split again (with a smaller budget)."""


def observe_in_parts(
    cycle: Cycle,
    batch: Sequence[BaseMessage],
    *,
    message_max_tokens: int | None = None,
    depth: int = 0,
) -> Plan[ObserverOutput]:
    """:func:`call_observer` on ``batch``; above every model tier, on parts that fit one.

    When the Observer's input is larger than the largest ``ModelByInputTokens`` tier, the
    batch is split at safe cut points (:func:`~langchain_om._core.window.split_batch`) into
    parts aiming at :data:`PART_MARGIN` of the room the tier leaves, each observed in turn (a
    part that still does not fit is split again, a single message is cut in the middle); the
    observations are joined in order and the hints of the last part win.

    Raises:
        ModelTierExceededError: even the prompt without messages is above the largest tier.
        ObserverOutputError: a part's replies were rejected.
    """
    counter = cycle.env.counter
    try:
        return (yield from call_observer(cycle, batch, message_max_tokens=message_max_tokens))
    except ModelTierExceededError as exc:
        overhead = max(0, exc.input_tokens - counter.count_messages(batch))
        budget = int((exc.largest_tier - overhead) * PART_MARGIN)
        if budget < 64 or not batch or depth >= MAX_SPLIT_DEPTH:
            raise
    ends = split_batch(batch, [counter.count_messages([m]) for m in batch], budget)
    outputs: list[ObserverOutput] = []
    start = 0
    for end in ends:
        part, start = batch[start:end], end
        clip = budget // 2 if len(ends) == 1 or len(part) == 1 else message_max_tokens
        outputs.append(
            (yield from observe_in_parts(cycle, part, message_max_tokens=clip, depth=depth + 1))
        )
    return _joined(outputs)


def _joined(outputs: Sequence[ObserverOutput]) -> ObserverOutput:
    """The outputs of consecutive parts as one (observations in order, the last hints)."""
    extracted: dict[str, str] = {}
    for out in outputs:
        extracted.update(out.extracted)
    return replace(
        outputs[-1],
        observations="\n".join(o.observations.strip() for o in outputs if o.observations.strip()),
        extracted=extracted,
        raw="\n\n".join(o.raw for o in outputs),
    )


def _without_invented_tools(parsed: ObserverOutput, batch: Sequence[BaseMessage]) -> ObserverOutput:
    """``parsed`` without lines about tool calls no message of ``batch`` contains (logged)."""
    out, dropped = drop_invented_tool_lines(parsed, batch)
    if dropped:
        logger.warning(
            "The Observer reported %d tool call(s) that no observed message contains; "
            "those lines were dropped",
            dropped,
        )
    return out


def call_reflector(
    cycle: Cycle,
    groups: Sequence[ObservationGroup],
    *,
    target: int,
    skip_continuation_hints: bool = False,
) -> Plan[LadderResult]:
    """Condense ``groups`` with the compression ladder (escalating until it fits)."""
    env = cycle.env
    text_in = yield from before_reflection(env, cycle.context(), log_text(groups))
    ladder = ReflectionLadder(
        start_level=compression_start_level(env.model_id("reflector", cycle.tokens)),
        target_tokens=max(1, target),
        input_tokens=cycle.tokens,
        input_text=text_in,
    )
    while (level := ladder.next_level()) is not None:
        prompt = build_reflector_messages(
            observations=text_in,
            level=level,
            instruction=env.config.reflection.instruction,
            target_tokens=target,
            skip_continuation_hints=skip_continuation_hints,
        )
        result = yield ModelCall(
            role="reflector",
            messages=prompt,
            input_tokens=env.counter.count_messages(prompt),
            thread_id=cycle.record["thread_id"],
            resource_id=cycle.record["resource_id"],
            cycle_id=cycle.cycle_id,
            trigger=cycle.trigger,
        )
        cycle.note(result)
        parsed = parse_observer_output(_text(result))
        out = parsed.observations.strip()
        verdict = ladder.record(level, parsed, env.counter.count_text(out) if out else 0)
        if verdict != "fits" and not ladder.done and cycle.trigger != "async-buffer":
            last = ladder.attempts[-1]
            cycle.emit(
                cycle.failed(
                    f"reflection attempt {verdict}; retrying",
                    retrying=True,
                    reason=last.reason or verdict,
                    retention=last.retention,
                )
            )
    best = ladder.result()
    text = yield from after_reflection(env, cycle.context(), best.text)
    if text == best.text:
        return best
    return replace(best, text=text, tokens=env.counter.count_text(text) if text else 0)


def observe_plan(
    env: TurnEnv, inp: TurnInput, record: OMRecord, batch: list[BaseMessage]
) -> Plan[OMRecord]:
    """Observe ``batch``: call the Observer, archive the messages, append the observations.

    Raises:
        CycleFailedError: the Observer failed; ``record`` is unchanged and nothing was archived.
    """
    cfg = env.config

    def body(cycle: Cycle) -> Plan[tuple[OMRecord, dict[str, Any]]]:
        parsed = yield from observe_in_parts(cycle, batch)
        found = run_extractors(
            env.extractors, parsed.extracted, record["extracted"], thread_id=record["thread_id"]
        )
        now = iso(env.now())
        text = parsed.observations.strip()
        ctx, extracted = cycle.context(), record["extracted"]
        found.merge(
            (yield from extract_plan(env, ctx, env.extractors, text, extracted, role="observer"))
        )
        ids = [m.id or "" for m in batch]
        group = make_group(
            text=text,
            tokens=env.counter.count_text(text) if text else 0,
            message_ids=ids,
            observed_at=now,
            group_id=stable_id(
                record["record_id"], "obs", record["observed_message_count"], ids[0]
            ),
        )
        new = append_observations(
            record,
            group=group,
            observed_ids=ids,
            observed_tokens=cycle.tokens,
            hints={
                "current_task": parsed.current_task,
                "suggested_response": parsed.suggested_response,
                "thread_title": parsed.thread_title,
            },
            extracted={},
            thread_title=cfg.observation.thread_title,
            now=now,
        )
        new["extracted"] = persist(env.extractors, record["extracted"], found.values)
        # Archive first: the messages leave the window only after they are stored.
        kept = yield from archived_messages(env, cycle.context(), batch, cycle.seen)
        new = yield from observed_plan(kept, before=record, after=new, vector=env.vector)
        return new, {
            "observation_tokens": group["tokens"],
            "observations": text,
            "current_task": parsed.current_task,
            "suggested_response": parsed.suggested_response,
            "extracted_values": found.values,
            "extraction_failures": found.failures,
        }

    cycle = Cycle(env, inp, record, "observation", env.counter.count_messages(batch), inp.trigger)
    return (yield from run_cycle(cycle, body))


def reflect_plan(env: TurnEnv, inp: TurnInput, record: OMRecord) -> Plan[OMRecord]:
    """Condense the whole log into a new generation (compression ladder).

    Raises:
        CycleFailedError: no usable reflection; ``record`` is unchanged.
    """
    groups = record["groups"]
    if not groups:
        return record
    threshold = env.config.reflection.observation_tokens_abs

    def body(cycle: Cycle) -> Plan[tuple[OMRecord, dict[str, Any]]]:
        best = yield from call_reflector(cycle, groups, target=threshold)
        covered = [g["id"] for g in groups]
        new = apply_reflection(
            record,
            text=best.text,
            tokens=best.tokens,
            covered_group_ids=covered,
            now=iso(env.now()),
            new_group_id=stable_id(record["record_id"], "ref", record["generation"] + 1, *covered),
            suggested_response=best.output.suggested_response,
        )
        new["reflection_suppressed_at_tokens"] = churn_guard_after(
            best.tokens, threshold, new["observation_tokens"]
        )
        extractors = reflection_extractors(env)
        found = yield from extract_plan(
            env, cycle.context(), extractors, best.text, record["extracted"], role="reflector"
        )
        new["extracted"] = persist(extractors, record["extracted"], found.values)
        index = reflected_ops(record, new, vector=env.vector)
        if index:
            yield StoreBatch(index)
        return new, {
            "observation_tokens": new["observation_tokens"],
            "observations": best.text,
            "suggested_response": best.output.suggested_response,
            "retention": best.retention,
            "extracted_values": found.values,
            "extraction_failures": found.failures,
        }

    cycle = Cycle(env, inp, record, "reflection", record["observation_tokens"], inp.trigger)
    return (yield from run_cycle(cycle, body))


def _config_snapshot(cfg: ObservationalMemoryConfig) -> dict[str, Any]:
    return {
        "message_tokens": cfg.observation.message_tokens,
        "observation_tokens": cfg.reflection.observation_tokens,
        "scope": cfg.scope,
    }
