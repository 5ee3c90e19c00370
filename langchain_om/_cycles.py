"""Synchronous OM cycles as plans: observe a batch, reflect the log.

The plans here are generators (see :mod:`langchain_om._effects`); the engine runs them with a
sync or an async driver, so there is exactly one implementation of every cycle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage

from langchain_om._core.observer import (
    ObserverOutput,
    build_observer_messages,
    format_messages_for_observer,
    parse_observer_output,
)
from langchain_om._core.record import (
    append_observations,
    log_text,
    make_group,
    new_id,
    stable_id,
)
from langchain_om._core.reflector import (
    LadderResult,
    ReflectionLadder,
    apply_reflection,
    build_reflector_messages,
    churn_guard_after,
    compression_start_level,
)
from langchain_om._core.tokens import TokenCounter
from langchain_om._core.truncation import TruncatedObservations, truncate_observations
from langchain_om._core.types import OM_META_KEY, ObservationGroup, OMRecord
from langchain_om._effects import HookCall, ModelCall, Plan, StoreBatch
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import CycleFailedError, ObserverOutputError
from langchain_om.events import (
    BufferedObservationsStatus,
    BufferedReflectionStatus,
    ObservationEndEvent,
    ObservationFailedEvent,
    ObservationStartEvent,
    OMEvent,
    StatusEvent,
    ThreadUpdateEvent,
    WindowUsage,
)
from langchain_om.extractors import Extractor, persist, prior_values, run_extractors
from langchain_om.storage import observed_ops, reflected_ops

Trigger = Literal["manual", "turn-sync", "async-buffer"]
BUFFERED_MARKER = "--- BUFFERED (pending activation) ---"


@dataclass
class TurnEnv:
    """What a plan needs from the engine: options, counting, time, events and model ids."""

    config: ObservationalMemoryConfig
    counter: TokenCounter
    now: Callable[[], datetime]
    emit: Callable[[OMEvent], None]
    model_id: Callable[[str, int], str | None]
    """``(role, input_tokens) -> "provider/model"`` of the model a role would use."""
    running: Callable[[str], bool] = lambda key: False
    """Whether the background job ``key`` is in flight."""
    vector: bool = False
    """Write vector-search documents (``retrieval.vector``)."""
    extractors: Sequence[Extractor] = ()
    """``observation.extract``, validated."""
    timezone: str = "UTC"
    cache_retention: str | None = None
    """OpenAI ``prompt_cache_retention`` of the agent's model (the ``"auto"`` idle TTL)."""


@dataclass
class TurnInput:
    """The state a turn starts from."""

    thread_id: str
    resource_id: str | None
    record: OMRecord | None
    window: list[BaseMessage]
    trigger: Trigger = "turn-sync"
    force_observe: bool = False
    force_reflect: bool = False
    step_number: int = 0
    emit: Callable[[OMEvent], None] | None = None
    allow_observe: bool = True
    allow_reflect: bool = True
    actor_model: str | None = None
    """``provider/model`` of the agent's model for this step, when the front door knows it."""
    idle: bool = False
    """The turn has ended (``buffer_on_idle``)."""
    sync_cycles: bool = True
    """Run synchronous Observer/Reflector calls (graph gates leave them to their nodes)."""
    emit_status: bool = True
    """Emit ``data-om-status`` (once per model call: the graph's cycle nodes do not)."""


@dataclass
class BackgroundJob:
    """A plan to run in the background, at most one per ``key`` at a time."""

    key: str
    plan: Plan[None]


@dataclass
class TurnOutcome:
    """The state a turn ends with."""

    record: OMRecord
    window: list[BaseMessage]
    removed: list[BaseMessage] = field(default_factory=list)
    stamped: list[BaseMessage] = field(default_factory=list)
    observed: bool = False
    reflected: bool = False
    errors: list[BaseException] = field(default_factory=list)
    status: StatusEvent | None = None
    jobs: list[BackgroundJob] = field(default_factory=list)
    """Background work to start once the step's state is saved."""
    inserted: list[BaseMessage] = field(default_factory=list)
    """Messages OM inserted into the window (time-gap reminders); the window is reordered."""

    @property
    def removed_ids(self) -> list[str]:
        """Ids of the messages that left the window (they are in the archive)."""
        return [m.id for m in self.removed if m.id]


def iso(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat()


def stamp_messages(
    messages: Sequence[BaseMessage], now: datetime, *, earlier: str | None = None
) -> list[BaseMessage]:
    """Give every message without an OM timestamp a time; return those stamped.

    New messages get ``now``, except replies that came in before the first new user message
    (the previous turn's last answer, seen only now): they get ``earlier``, the time of the
    previous step, when known.
    """
    stamped: list[BaseMessage] = []
    seen_human = False
    for message in messages:
        meta = message.response_metadata.get(OM_META_KEY)
        if not isinstance(meta, dict):
            meta = {}
            message.response_metadata[OM_META_KEY] = meta
        if "ts" in meta:
            continue
        seen_human = seen_human or message.type == "human"
        meta["ts"] = earlier if (earlier and not seen_human) else iso(now)
        stamped.append(message)
    return stamped


def message_threshold(config: ObservationalMemoryConfig, record: OMRecord) -> int:
    """Unobserved-message tokens that trigger observation (``share_token_budget`` moves it)."""
    base = config.observation.message_tokens_abs
    if config.share_token_budget:
        total = base + config.reflection.observation_tokens_abs
        return max(total - record["observation_tokens"], base)
    return base


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
        messages=WindowUsage(tokens=window_tokens, threshold=message_threshold(env.config, record)),
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


def _emit(env: TurnEnv, inp: TurnInput, event: OMEvent) -> None:
    env.emit(event)
    if inp.emit is not None:
        inp.emit(event)


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
    started: float = field(default_factory=time.monotonic)
    usage: dict[str, Any] | None = None
    provider_metadata: dict[str, Any] | None = None

    @property
    def duration_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def emit(self, event: OMEvent) -> None:
        _emit(self.env, self.inp, event)

    def note(self, result: Any) -> None:
        """Keep the usage and provider metadata of a model result."""
        self.usage, self.provider_metadata = _usage(result)

    def hook(self, when: Literal["start", "end"], **extra: Any) -> Plan[None]:
        name = f"on_{self.operation}_{when}"
        payload = _hook_payload(self.inp, self.trigger, cycle_id=self.cycle_id, **extra)
        if when == "end":
            payload.setdefault("usage", self.usage)
            payload.setdefault("provider_metadata", self.provider_metadata)
        yield from _hook(self.env, name, payload)

    def failed(self, error: str, *, retrying: bool = False) -> ObservationFailedEvent:
        return ObservationFailedEvent(
            cycle_id=self.cycle_id,
            operation_type=self.operation,
            failed_at=iso(self.env.now()),
            duration_ms=self.duration_ms,
            tokens_attempted=self.tokens,
            error=error,
            retrying=retrying,
            record_id=self.record["record_id"],
            thread_id=self.record["thread_id"],
            trigger=self.trigger,
        )


CycleBody = Callable[[Cycle], Plan[tuple[OMRecord, dict[str, Any]]]]
"""The work of a synchronous cycle: returns the new record and the end event's fields."""


def sync_cycle(
    env: TurnEnv,
    inp: TurnInput,
    record: OMRecord,
    *,
    operation: Literal["observation", "reflection"],
    tokens: int,
    body: CycleBody,
) -> Plan[OMRecord]:
    """Run ``body`` with start/end/failed events and hooks around it.

    Raises:
        CycleFailedError: ``body`` failed; ``record`` is unchanged (nothing was written).
    """
    cycle = Cycle(env, inp, record, operation, tokens, inp.trigger)
    cycle.emit(
        ObservationStartEvent(
            cycle_id=cycle.cycle_id,
            operation_type=operation,
            started_at=iso(env.now()),
            tokens_to_observe=tokens,
            record_id=record["record_id"],
            thread_id=record["thread_id"],
            trigger=inp.trigger,
            config=_config_snapshot(env.config),
        )
    )
    yield from cycle.hook("start")
    try:
        new, done = yield from body(cycle)
    except Exception as exc:
        cycle.emit(cycle.failed(f"{type(exc).__name__}: {exc}"))
        yield from cycle.hook("end", error=exc)
        if operation == "observation":
            message = (
                f"Observation failed for thread {record['thread_id']!r}: {exc}. Nothing was "
                "removed from context. Set observation.failure_policy='continue' to go on "
                "without observing."
            )
        else:
            message = (
                f"Reflection failed for thread {record['thread_id']!r}: {exc}. The observation "
                "log is unchanged."
            )
        raise CycleFailedError(message, operation=operation, thread_id=record["thread_id"]) from exc
    cycle.emit(
        ObservationEndEvent(
            cycle_id=cycle.cycle_id,
            operation_type=operation,
            completed_at=iso(env.now()),
            duration_ms=cycle.duration_ms,
            tokens_observed=tokens,
            record_id=record["record_id"],
            thread_id=record["thread_id"],
            trigger=inp.trigger,
            **done,
        )
    )
    if new.get("title") and new.get("title") != record.get("title"):
        cycle.emit(
            ThreadUpdateEvent(
                cycle_id=cycle.cycle_id,
                thread_id=record["thread_id"],
                old_title=record.get("title"),
                new_title=str(new["title"]),
                timestamp=iso(env.now()),
            )
        )
    yield from cycle.hook(
        "end", error=None, observations=done["observations"], generation=new["generation"]
    )
    return new


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


def call_observer(
    cycle: Cycle, batch: Sequence[BaseMessage], *, pending_texts: Sequence[str] = ()
) -> Plan[ObserverOutput]:
    """Ask the Observer about ``batch``; a degenerate answer is retried once, then rejected."""
    env, record = cycle.env, cycle.record
    cfg = env.config
    history = format_messages_for_observer(
        batch,
        timezone=record["timezone"],
        tool_result_max_tokens=cfg.observation.tool_result_max_tokens,
        count=env.counter.count_text,
        now=env.now(),
        observe_attachments=cfg.observation.observe_attachments,
    )
    extractors = env.extractors
    context = {"thread_id": record["thread_id"], "resource_id": record["resource_id"]}
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
    prompt_tokens = env.counter.count_messages(prompt)
    parsed: ObserverOutput | None = None
    for attempt in range(2):
        result = yield ModelCall(
            role="observer",
            messages=prompt,
            input_tokens=prompt_tokens,
            thread_id=record["thread_id"],
            resource_id=record["resource_id"],
        )
        cycle.note(result)
        parsed = parse_observer_output(_text(result), extractor_slugs=[e.slug for e in extractors])
        if not parsed.degenerate:
            return parsed
        if attempt == 0 and cycle.trigger != "async-buffer":
            cycle.emit(cycle.failed("degenerate Observer output; retrying", retrying=True))
    raise ObserverOutputError(
        "The Observer produced degenerate (repeating) output twice; nothing was observed.",
        raw=parsed.raw if parsed is not None else "",
    )


def call_reflector(
    cycle: Cycle,
    groups: Sequence[ObservationGroup],
    *,
    target: int,
    skip_continuation_hints: bool = False,
) -> Plan[LadderResult]:
    """Condense ``groups`` with the compression ladder (escalating until it fits)."""
    env = cycle.env
    text_in = log_text(groups)
    ladder = ReflectionLadder(
        start_level=compression_start_level(env.model_id("reflector", cycle.tokens)),
        target_tokens=max(1, target),
        input_tokens=cycle.tokens,
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
        )
        cycle.note(result)
        parsed = parse_observer_output(_text(result))
        out = parsed.observations.strip()
        verdict = ladder.record(level, parsed, env.counter.count_text(out) if out else 0)
        if verdict != "fits" and not ladder.done and cycle.trigger != "async-buffer":
            cycle.emit(cycle.failed(f"reflection attempt {verdict}; retrying", retrying=True))
    return ladder.result()


def observe_plan(
    env: TurnEnv, inp: TurnInput, record: OMRecord, batch: list[BaseMessage]
) -> Plan[OMRecord]:
    """Observe ``batch``: call the Observer, archive the messages, append the observations.

    Raises:
        CycleFailedError: the Observer failed; ``record`` is unchanged and nothing was archived.
    """
    cfg = env.config

    def body(cycle: Cycle) -> Plan[tuple[OMRecord, dict[str, Any]]]:
        parsed = yield from call_observer(cycle, batch)
        found = run_extractors(
            env.extractors, parsed.extracted, record["extracted"], thread_id=record["thread_id"]
        )
        now = iso(env.now())
        text = parsed.observations.strip()
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
        yield StoreBatch(observed_ops(batch, before=record, after=new, vector=env.vector))
        return new, {
            "observation_tokens": group["tokens"],
            "observations": text,
            "current_task": parsed.current_task,
            "suggested_response": parsed.suggested_response,
            "extracted_values": found.values,
            "extraction_failures": found.failures,
        }

    tokens = env.counter.count_messages(batch)
    return (
        yield from sync_cycle(env, inp, record, operation="observation", tokens=tokens, body=body)
    )


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
        index = reflected_ops(record, new, vector=env.vector)
        if index:
            yield StoreBatch(index)
        return new, {
            "observation_tokens": new["observation_tokens"],
            "observations": best.text,
            "suggested_response": best.output.suggested_response,
        }

    tokens = record["observation_tokens"]
    return (
        yield from sync_cycle(env, inp, record, operation="reflection", tokens=tokens, body=body)
    )


def _config_snapshot(cfg: ObservationalMemoryConfig) -> dict[str, Any]:
    return {
        "message_tokens": cfg.observation.message_tokens,
        "observation_tokens": cfg.reflection.observation_tokens,
        "scope": cfg.scope,
    }
