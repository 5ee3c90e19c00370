"""One OM step as a plan (SPEC §7): activate, observe, reflect, start background work.

Per step, before the agent's model call:

1. stored chunks that no longer fit the window are dropped; the rest form a chain;
2. **activate** a prefix of the chain when the window reaches the threshold (or the idle TTL
   expired, or the actor's provider changed) — no model call;
3. beyond ``block_after`` with a buffer in flight, wait for it (bounded) and activate it;
4. **observe synchronously** when still over the threshold and no buffer is coming (or beyond
   ``block_after``, or with buffering off);
5. **reflect**: swap in a buffered reflection, reflect synchronously beyond
   ``reflection.block_after`` (or with buffering off), or start a background reflection;
6. start a **background buffer** when an interval of uncovered tokens has built up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.store.base import GetOp, PutOp, SearchOp

from langchain_om._buffer import (
    activate_reflection,
    activation_plan,
    buffer_plan,
    buffering_start,
    reflection_buffer_plan,
    reflection_is_valid,
)
from langchain_om._core.dates import message_time
from langchain_om._core.record import new_id, new_record
from langchain_om._core.reflector import select_reflection_slice, should_reflect
from langchain_om._core.temporal import gap_reminder
from langchain_om._core.thresholds import (
    auto_ttl_ms,
    choose_activation,
    chunk_chain,
    should_buffer,
)
from langchain_om._core.types import OM_META_KEY, OMRecord
from langchain_om._core.window import observation_cut, safe_cut_points
from langchain_om._cycles import (
    BackgroundJob,
    TurnEnv,
    TurnInput,
    TurnOutcome,
    _emit,
    iso,
    message_threshold,
    observe_plan,
    reflect_plan,
    stamp_messages,
    status_event,
)
from langchain_om._effects import AwaitBackground, Plan, StoreBatch
from langchain_om.errors import CycleFailedError
from langchain_om.events import TemporalGapEvent
from langchain_om.storage import buffer_ns, reflection_ns

BLOCK_WAIT_SECONDS = 60.0
"""How long a step beyond ``block_after`` waits for an in-flight buffer."""
MAX_CHUNKS = 10_000


def obs_key(thread_id: str) -> str:
    """Background-job key of a thread's observation buffer."""
    return f"obs:{thread_id}"


def ref_key(thread_id: str) -> str:
    """Background-job key of a thread's background reflection."""
    return f"ref:{thread_id}"


def _load_buffered(
    record: OMRecord, window: Sequence[BaseMessage]
) -> Plan[tuple[list[Mapping[str, Any]], Mapping[str, Any] | None]]:
    """Read stored chunks and reflection; drop the ones that no longer apply."""
    thread_id = record["thread_id"]
    items, ref_item = yield StoreBatch(
        [
            SearchOp(buffer_ns(thread_id), limit=MAX_CHUNKS),
            GetOp(reflection_ns(thread_id), "current"),
        ]
    )
    chain, stale = chunk_chain([m.id for m in window], [i.value for i in items])
    ops: list[Any] = [
        PutOp(buffer_ns(thread_id), str(c["message_ids"][0]), None)
        for c in stale
        if c.get("message_ids")
    ]
    reflection = ref_item.value if ref_item is not None else None
    if reflection is not None and not reflection_is_valid(record, reflection):
        ops.append(PutOp(reflection_ns(thread_id), "current", None))
        reflection = None
    if ops:
        yield StoreBatch(ops)
    return chain, reflection


def _idle_ms(record: OMRecord, now: datetime) -> int | None:
    last = record.get("last_activity_at")
    if not last:
        return None
    try:
        return int((now - datetime.fromisoformat(str(last))).total_seconds() * 1000)
    except ValueError:
        return None


def _ttl(setting: int | str | None, model: str | None, retention: str | None) -> int | None:
    if setting is None:
        return None
    return auto_ttl_ms(model, retention=retention) if setting == "auto" else int(setting)


Trigger = Literal["threshold", "ttl", "provider_change"]


def _early_trigger(
    env: TurnEnv, inp: TurnInput, record: OMRecord, now: datetime, *, reflection: bool
) -> Trigger | None:
    """``"ttl"`` or ``"provider_change"`` when early activation applies, else ``None``."""
    cfg = env.config
    setting = (
        cfg.reflection_activate_after_idle_ms
        if reflection
        else cfg.observation_activate_after_idle_ms
    )
    model = inp.actor_model or record.get("last_actor_model")
    ttl = _ttl(setting, model, env.cache_retention)
    idle = _idle_ms(record, now)
    if ttl is not None and idle is not None and idle >= ttl:
        return "ttl"
    on_change = (
        cfg.reflection_activate_on_provider_change
        if reflection
        else cfg.observation_activate_on_provider_change
    )
    last = record.get("last_actor_model")
    if on_change and inp.actor_model and last and inp.actor_model != last:
        return "provider_change"
    return None


def _insert_gap_reminder(env: TurnEnv, inp: TurnInput, out: TurnOutcome, now: datetime) -> None:
    """Before a new user message that follows a long pause, insert a time-gap reminder."""
    new_ids = {id(m) for m in out.stamped}
    index = next(
        (
            i
            for i in range(len(out.window) - 1, -1, -1)
            if id(out.window[i]) in new_ids and isinstance(out.window[i], HumanMessage)
        ),
        None,
    )
    if index is None:
        return
    message = out.window[index]
    if index > 0 and out.window[index - 1].id == f"__temporal_gap_{message.id}":
        return
    previous = message_time(out.window[index - 1]) if index > 0 else None
    if previous is None and out.record.get("last_activity_at"):
        previous = datetime.fromisoformat(str(out.record["last_activity_at"]))
    if previous is None or previous >= now:
        return
    reminder = gap_reminder(previous, now, timezone=out.record["timezone"], precedes=message.id)
    if reminder is None:
        return
    out.window.insert(index, reminder)
    out.inserted.append(reminder)
    meta = reminder.response_metadata[OM_META_KEY]
    _emit(
        env,
        inp,
        TemporalGapEvent(
            message=reminder.text,
            gap_text=meta["gap_text"],
            gap_ms=meta["gap_ms"],
            timestamp=meta["ts"],
            precedes_message_id=message.id,
            thread_id=inp.thread_id,
        ),
    )


def buffer_candidates(messages: Sequence[BaseMessage], *, idle: bool) -> list[BaseMessage]:
    """The longest prefix of ``messages`` a background buffer may take.

    Never across a pending tool call; the current turn (from the last human message on) is
    left alone until the turn ends (``idle``), so activation never takes the message the model
    is answering.
    """
    end = len(messages)
    if not idle:
        humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
        if humans:
            end = humans[-1]
    points = [p for p in safe_cut_points(messages) if p <= end]
    return list(messages[: points[-1]]) if points else []


def sync_observation_due(env: TurnEnv, record: OMRecord, tokens: int, thread_id: str) -> bool:
    """Whether a step would observe synchronously now (for the graph's routers)."""
    cfg = env.config
    threshold = message_threshold(cfg, record)
    if cfg.buffering_enabled and env.running(obs_key(thread_id)):
        return tokens >= cfg.observation.block_after_tokens
    return tokens >= threshold


def sync_reflection_due(env: TurnEnv, record: OMRecord) -> bool:
    """Whether a step would reflect synchronously now (for the graph's routers)."""
    cfg = env.config
    tokens = record["observation_tokens"]
    if not should_reflect(
        tokens, cfg.reflection.observation_tokens_abs, record["reflection_suppressed_at_tokens"]
    ):
        return False
    return not cfg.buffering_enabled or tokens >= cfg.reflection.block_after_tokens


def turn_plan(env: TurnEnv, inp: TurnInput) -> Plan[TurnOutcome]:
    """One step (see the module docstring)."""
    cfg = env.config
    now = env.now()
    record = inp.record or new_record(
        thread_id=inp.thread_id,
        resource_id=inp.resource_id,
        scope=cfg.scope,
        timezone=env.timezone,
        now=iso(now),
    )
    out = TurnOutcome(record=record, window=list(inp.window))
    if not cfg.enabled:  # ObservationalMemory(False): every front door passes through
        return out
    earlier = out.record.get("last_activity_at")
    out.stamped = stamp_messages(out.window, now, earlier=str(earlier) if earlier else None)
    if cfg.temporal_markers:
        _insert_gap_reminder(env, inp, out, now)
    buffering = cfg.buffering_enabled
    okey, rkey = obs_key(inp.thread_id), ref_key(inp.thread_id)
    chain: list[Mapping[str, Any]] = []
    stored_reflection: Mapping[str, Any] | None = None
    if buffering:
        chain, stored_reflection = yield from _load_buffered(out.record, out.window)
    threshold = message_threshold(cfg, out.record)
    block_after = cfg.observation.block_after_tokens if buffering else threshold
    tokens = env.counter.count_messages(out.window)

    def activate(chunks: Sequence[Mapping[str, Any]], trigger: Trigger) -> Plan[None]:
        nonlocal tokens
        if not chunks:
            return
        out.record, out.window, moved = yield from activation_plan(
            env, inp, out.record, out.window, chunks, triggered_by=trigger
        )
        out.removed.extend(moved)
        out.observed = True
        tokens = env.counter.count_messages(out.window)

    # 2. Activation.
    if inp.allow_observe and chain:
        trigger = (
            "threshold"
            if tokens >= threshold
            else _early_trigger(env, inp, out.record, now, reflection=False)
        )
        if trigger is not None:
            if trigger == "threshold" and tokens < block_after:
                choice = choose_activation(
                    [int(c["message_tokens"]) for c in chain],
                    pending=tokens,
                    floor=cfg.observation.retention_floor_tokens,
                )
                count = choice.count
            else:
                count = len(chain)
            yield from activate(chain[:count], trigger)
            chain = chain[count:]

    # 3. Beyond block_after with a buffer in flight: wait for it, then activate what exists.
    if (
        buffering
        and inp.allow_observe
        and inp.sync_cycles
        and tokens >= block_after
        and env.running(okey)
    ):
        yield AwaitBackground(okey, BLOCK_WAIT_SECONDS)
        chain, stored_reflection = yield from _load_buffered(out.record, out.window)
        yield from activate(chain, "threshold")
        chain = []

    # 4. Synchronous observation.
    sync_at = block_after if (buffering and env.running(okey)) else threshold
    if inp.allow_observe and inp.sync_cycles and (inp.force_observe or tokens >= sync_at):
        yield from activate(chain, "threshold")
        chain = []
        cut = observation_cut(out.window, keep_current_turn=not inp.force_observe)
        if cut > 0:
            batch = out.window[:cut]
            try:
                out.record = yield from observe_plan(env, inp, out.record, batch)
            except CycleFailedError as exc:
                if cfg.observation.failure_policy == "raise":
                    raise
                out.errors.append(exc)
            else:
                out.removed.extend(batch)
                out.window = out.window[cut:]
                out.observed = True
                tokens = env.counter.count_messages(out.window)

    # 5. Reflection.
    if inp.allow_reflect:
        stored_reflection = yield from _reflection_step(
            env, inp, out, stored_reflection, buffering=buffering, now=now
        )

    # 6. Background buffer.
    if buffering and inp.allow_observe and not env.running(okey):
        covered = sum(len(c["message_ids"]) for c in chain)
        candidates = buffer_candidates(out.window[covered:], idle=inp.idle)
        unbuffered = env.counter.count_messages(candidates) if candidates else 0
        interval = cfg.observation.buffer_interval_tokens or threshold
        if should_buffer(
            unbuffered=unbuffered,
            pending=tokens,
            threshold=threshold,
            interval=interval,
            idle=inp.idle,
        ):
            texts = [str(c["text"]) for c in chain]
            background = replace(inp, emit=None)
            cycle_id = new_id()
            _emit(env, inp, buffering_start(env, out.record, "observation", unbuffered, cycle_id))
            plan = buffer_plan(
                env,
                background,
                dict(out.record),  # type: ignore[arg-type]
                candidates,
                texts,
                cycle_id=cycle_id,
            )
            out.jobs.append(BackgroundJob(okey, plan))

    record_out = dict(out.record)
    record_out["last_activity_at"] = iso(now)
    if inp.actor_model:
        record_out["last_actor_model"] = inp.actor_model
    out.record = record_out  # type: ignore[assignment]
    projected = 0
    if chain:
        projected = choose_activation(
            [int(c["message_tokens"]) for c in chain],
            pending=max(tokens, threshold),
            floor=cfg.observation.retention_floor_tokens,
        ).removed_tokens
    out.status = status_event(
        env,
        out.record,
        tokens,
        inp.step_number,
        chunks=chain,
        buffering=env.running(okey) or any(j.key == okey for j in out.jobs),
        projected_removal=projected,
        reflection=stored_reflection,
        reflecting=env.running(rkey) or any(j.key == rkey for j in out.jobs),
    )
    if inp.emit_status:
        _emit(env, inp, out.status)
    return out


def _reflection_step(
    env: TurnEnv,
    inp: TurnInput,
    out: TurnOutcome,
    stored: Mapping[str, Any] | None,
    *,
    buffering: bool,
    now: datetime,
) -> Plan[Mapping[str, Any] | None]:
    """Reflect (sync, buffered swap, or start a background reflection); returns what is stored."""
    cfg = env.config
    record = out.record
    tokens = record["observation_tokens"]
    threshold = cfg.reflection.observation_tokens_abs
    rkey = ref_key(inp.thread_id)
    if not inp.force_reflect and buffering and stored is not None:
        trigger = (
            "threshold"
            if tokens >= threshold
            else _early_trigger(env, inp, record, now, reflection=True)
        )
        if trigger is not None:
            out.record = yield from activate_reflection(
                env, inp, record, stored, triggered_by=trigger
            )
            out.reflected = True
            return None
    sync = inp.force_reflect or (
        inp.sync_cycles
        and should_reflect(tokens, threshold, record["reflection_suppressed_at_tokens"])
        and (not buffering or tokens >= cfg.reflection.block_after_tokens)
    )
    if sync:
        try:
            out.record = yield from reflect_plan(env, inp, record)
            out.reflected = True
            if stored is not None:
                yield StoreBatch([PutOp(reflection_ns(inp.thread_id), "current", None)])
            return None
        except CycleFailedError as exc:
            if inp.trigger == "manual":
                raise
            out.errors.append(exc)
            suppressed = dict(out.record)
            suppressed["reflection_suppressed_at_tokens"] = record["observation_tokens"]
            out.record = suppressed  # type: ignore[assignment]
            return stored
    start_at = cfg.reflection.buffer_start_tokens
    if (
        buffering
        and stored is None
        and tokens >= start_at
        and len(record["groups"]) > 1
        and not env.running(rkey)
    ):
        ids = select_reflection_slice(record["groups"], start_at)
        if ids:
            background = replace(inp, emit=None)
            cycle_id = new_id()
            slice_tokens = sum(g["tokens"] for g in record["groups"] if g["id"] in set(ids))
            _emit(env, inp, buffering_start(env, record, "reflection", slice_tokens, cycle_id))
            plan = reflection_buffer_plan(
                env,
                background,
                dict(record),  # type: ignore[arg-type]
                ids,
                cycle_id=cycle_id,
            )
            out.jobs.append(BackgroundJob(rkey, plan))
    return stored


def idle_plan(env: TurnEnv, inp: TurnInput) -> Plan[TurnOutcome]:
    """At turn end (``buffer_on_idle``): buffer whatever is not covered yet."""
    record = inp.record
    out = TurnOutcome(
        record=record
        if record is not None
        else new_record(
            thread_id=inp.thread_id,
            resource_id=inp.resource_id,
            scope=env.config.scope,
            timezone=env.timezone,
            now=iso(env.now()),
        ),
        window=list(inp.window),
    )
    if not env.config.buffering_enabled or env.running(obs_key(inp.thread_id)):
        return out
    chain, _ = yield from _load_buffered(out.record, out.window)
    covered = sum(len(c["message_ids"]) for c in chain)
    candidates = buffer_candidates(out.window[covered:], idle=True)
    if candidates:
        texts = [str(c["text"]) for c in chain]
        plan = buffer_plan(env, replace(inp, emit=None), out.record, candidates, texts)
        out.jobs.append(BackgroundJob(obs_key(inp.thread_id), plan))
    return out
