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
    ReflectionLadder,
    apply_reflection,
    build_reflector_messages,
    churn_guard_after,
    compression_start_level,
)
from langchain_om._core.tokens import TokenCounter
from langchain_om._core.truncation import truncate_observations
from langchain_om._core.types import OM_META_KEY, OMRecord
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
from langchain_om.storage import observed_ops, reflected_ops

Trigger = Literal["manual", "turn-sync", "async-buffer"]


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
    timezone: str = "UTC"


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
    base = config.observation.message_tokens
    if config.share_token_budget:
        total = base + config.reflection.observation_tokens
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
            threshold=env.config.reflection.observation_tokens,
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


def observe_plan(
    env: TurnEnv, inp: TurnInput, record: OMRecord, batch: list[BaseMessage]
) -> Plan[OMRecord]:
    """Observe ``batch``: call the Observer, archive the messages, append the observations.

    Raises:
        CycleFailedError: the Observer failed; ``record`` is unchanged and nothing was archived.
    """
    cfg = env.config
    trigger = inp.trigger
    now = env.now()
    cycle_id = new_id()
    started = time.monotonic()
    tokens_in = env.counter.count_messages(batch)
    _emit(
        env,
        inp,
        ObservationStartEvent(
            cycle_id=cycle_id,
            operation_type="observation",
            started_at=iso(now),
            tokens_to_observe=tokens_in,
            record_id=record["record_id"],
            thread_id=record["thread_id"],
            trigger=trigger,
            config=_config_snapshot(cfg),
        ),
    )
    yield from _hook(env, "on_observation_start", _hook_payload(inp, trigger, cycle_id=cycle_id))
    usage: dict[str, Any] | None = None
    provider_meta: dict[str, Any] | None = None
    try:
        history = format_messages_for_observer(
            batch,
            timezone=record["timezone"],
            tool_result_max_tokens=cfg.observation.tool_result_max_tokens,
            count=env.counter.count_text,
            now=now,
            observe_attachments=cfg.observation.observe_attachments,
        )
        budget = cfg.observation.previous_observer_tokens
        previous_text = log_text(record["groups"])
        previous = (
            truncate_observations(
                previous_text, None if budget is False else int(budget), env.counter.count_text
            )
            if previous_text
            else None
        )
        prompt = build_observer_messages(
            history=history,
            previous=previous,
            prior_hints={k: str(v) for k, v in record["hints"].items()},
            instruction=cfg.observation.instruction,
            thread_title=cfg.observation.thread_title,
        )
        prompt_tokens = env.counter.count_messages(prompt)
        parsed = None
        for attempt in range(2):
            result = yield ModelCall(
                role="observer",
                messages=prompt,
                input_tokens=prompt_tokens,
                thread_id=inp.thread_id,
                resource_id=inp.resource_id,
            )
            usage, provider_meta = _usage(result)
            parsed = parse_observer_output(_text(result))
            if not parsed.degenerate:
                break
            if attempt == 0:
                _emit(
                    env,
                    inp,
                    _failed(
                        env,
                        record,
                        cycle_id,
                        "observation",
                        started,
                        tokens_in,
                        "degenerate repetition in Observer output; retrying",
                        trigger,
                        retrying=True,
                    ),
                )
        assert parsed is not None
        if parsed.degenerate:
            raise ObserverOutputError(
                "The Observer produced degenerate (repeating) output twice; nothing was observed.",
                raw=parsed.raw,
            )
        text = parsed.observations.strip()
        group = make_group(
            text=text,
            tokens=env.counter.count_text(text) if text else 0,
            message_ids=[m.id or "" for m in batch],
            observed_at=iso(now),
            group_id=stable_id(
                record["record_id"], "obs", record["observed_message_count"], batch[0].id
            ),
        )
        new = append_observations(
            record,
            group=group,
            observed_ids=[m.id or "" for m in batch],
            observed_tokens=tokens_in,
            hints={
                "current_task": parsed.current_task,
                "suggested_response": parsed.suggested_response,
                "thread_title": parsed.thread_title,
            },
            extracted=parsed.extracted,
            thread_title=cfg.observation.thread_title,
            now=iso(now),
        )
        # Archive first: the messages leave the window only after they are stored.
        yield StoreBatch(observed_ops(batch, before=record, after=new, vector=env.vector))
    except Exception as exc:
        _emit(
            env,
            inp,
            _failed(
                env,
                record,
                cycle_id,
                "observation",
                started,
                tokens_in,
                f"{type(exc).__name__}: {exc}",
                trigger,
            ),
        )
        yield from _hook(
            env,
            "on_observation_end",
            _hook_payload(
                inp,
                trigger,
                cycle_id=cycle_id,
                error=exc,
                usage=usage,
                provider_metadata=provider_meta,
            ),
        )
        raise CycleFailedError(
            f"Observation failed for thread {record['thread_id']!r}: {exc}. Nothing was removed "
            "from context. Set observation.failure_policy='continue' to go on without observing.",
            operation="observation",
            thread_id=record["thread_id"],
        ) from exc
    _emit(
        env,
        inp,
        ObservationEndEvent(
            cycle_id=cycle_id,
            operation_type="observation",
            completed_at=iso(env.now()),
            duration_ms=int((time.monotonic() - started) * 1000),
            tokens_observed=tokens_in,
            observation_tokens=group["tokens"],
            observations=text,
            current_task=parsed.current_task,
            suggested_response=parsed.suggested_response,
            extracted_values=dict(parsed.extracted),
            record_id=record["record_id"],
            thread_id=record["thread_id"],
            trigger=trigger,
        ),
    )
    if new.get("title") and new.get("title") != record.get("title"):
        _emit(
            env,
            inp,
            ThreadUpdateEvent(
                cycle_id=cycle_id,
                thread_id=record["thread_id"],
                old_title=record.get("title"),
                new_title=str(new["title"]),
                timestamp=iso(env.now()),
            ),
        )
    yield from _hook(
        env,
        "on_observation_end",
        _hook_payload(
            inp,
            trigger,
            cycle_id=cycle_id,
            error=None,
            usage=usage,
            provider_metadata=provider_meta,
            observations=text,
        ),
    )
    return new


def reflect_plan(env: TurnEnv, inp: TurnInput, record: OMRecord) -> Plan[OMRecord]:
    """Condense the whole log into a new generation (compression ladder).

    Raises:
        CycleFailedError: no usable reflection; ``record`` is unchanged.
    """
    cfg = env.config
    trigger = inp.trigger
    groups = record["groups"]
    if not groups:
        return record
    cycle_id = new_id()
    started = time.monotonic()
    now = env.now()
    threshold = cfg.reflection.observation_tokens
    input_tokens = record["observation_tokens"]
    _emit(
        env,
        inp,
        ObservationStartEvent(
            cycle_id=cycle_id,
            operation_type="reflection",
            started_at=iso(now),
            tokens_to_observe=input_tokens,
            record_id=record["record_id"],
            thread_id=record["thread_id"],
            trigger=trigger,
            config=_config_snapshot(cfg),
        ),
    )
    yield from _hook(env, "on_reflection_start", _hook_payload(inp, trigger, cycle_id=cycle_id))
    usage: dict[str, Any] | None = None
    provider_meta: dict[str, Any] | None = None
    covered = [g["id"] for g in groups]
    text_in = log_text(groups)
    try:
        ladder = ReflectionLadder(
            start_level=compression_start_level(env.model_id("reflector", input_tokens)),
            target_tokens=threshold,
            input_tokens=input_tokens,
        )
        while (level := ladder.next_level()) is not None:
            prompt = build_reflector_messages(
                observations=text_in,
                level=level,
                instruction=cfg.reflection.instruction,
                target_tokens=threshold,
            )
            result = yield ModelCall(
                role="reflector",
                messages=prompt,
                input_tokens=env.counter.count_messages(prompt),
                thread_id=inp.thread_id,
                resource_id=inp.resource_id,
            )
            usage, provider_meta = _usage(result)
            parsed = parse_observer_output(_text(result))
            out = parsed.observations.strip()
            verdict = ladder.record(level, parsed, env.counter.count_text(out) if out else 0)
            if verdict != "fits" and ladder.next_level() is not None:
                _emit(
                    env,
                    inp,
                    _failed(
                        env,
                        record,
                        cycle_id,
                        "reflection",
                        started,
                        input_tokens,
                        f"reflection attempt {verdict}; retrying",
                        trigger,
                        retrying=True,
                    ),
                )
        best = ladder.result()
        new = apply_reflection(
            record,
            text=best.text,
            tokens=best.tokens,
            covered_group_ids=covered,
            now=iso(env.now()),
            new_group_id=stable_id(record["record_id"], "ref", record["generation"] + 1, *covered),
            suggested_response=best.output.suggested_response if best.output else None,
        )
        new["reflection_suppressed_at_tokens"] = churn_guard_after(
            best.tokens, threshold, new["observation_tokens"]
        )
        index = reflected_ops(record, new, vector=env.vector)
        if index:
            yield StoreBatch(index)
    except Exception as exc:
        _emit(
            env,
            inp,
            _failed(
                env,
                record,
                cycle_id,
                "reflection",
                started,
                input_tokens,
                f"{type(exc).__name__}: {exc}",
                trigger,
            ),
        )
        yield from _hook(
            env,
            "on_reflection_end",
            _hook_payload(
                inp,
                trigger,
                cycle_id=cycle_id,
                error=exc,
                usage=usage,
                provider_metadata=provider_meta,
            ),
        )
        raise CycleFailedError(
            f"Reflection failed for thread {record['thread_id']!r}: {exc}. The observation log "
            "is unchanged.",
            operation="reflection",
            thread_id=record["thread_id"],
        ) from exc
    _emit(
        env,
        inp,
        ObservationEndEvent(
            cycle_id=cycle_id,
            operation_type="reflection",
            completed_at=iso(env.now()),
            duration_ms=int((time.monotonic() - started) * 1000),
            tokens_observed=input_tokens,
            observation_tokens=new["observation_tokens"],
            observations=best.text,
            suggested_response=best.output.suggested_response if best.output else None,
            record_id=record["record_id"],
            thread_id=record["thread_id"],
            trigger=trigger,
        ),
    )
    yield from _hook(
        env,
        "on_reflection_end",
        _hook_payload(
            inp,
            trigger,
            cycle_id=cycle_id,
            error=None,
            usage=usage,
            provider_metadata=provider_meta,
            observations=best.text,
            generation=new["generation"],
        ),
    )
    return new


def _failed(
    env: TurnEnv,
    record: OMRecord,
    cycle_id: str,
    operation: Literal["observation", "reflection"],
    started: float,
    tokens: int,
    error: str,
    trigger: Trigger,
    *,
    retrying: bool = False,
) -> ObservationFailedEvent:
    return ObservationFailedEvent(
        cycle_id=cycle_id,
        operation_type=operation,
        failed_at=iso(env.now()),
        duration_ms=int((time.monotonic() - started) * 1000),
        tokens_attempted=tokens,
        error=error,
        retrying=retrying,
        record_id=record["record_id"],
        thread_id=record["thread_id"],
        trigger=trigger,
    )


def _config_snapshot(cfg: ObservationalMemoryConfig) -> dict[str, Any]:
    return {
        "message_tokens": cfg.observation.message_tokens,
        "observation_tokens": cfg.reflection.observation_tokens,
        "scope": cfg.scope,
    }
