"""One OM step as a plan: activate, observe, reflect, start background work.

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

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, NamedTuple, cast

from langchain_core.messages import BaseMessage

from langchain_om._core.backoff import BackoffState
from langchain_om._core.dates import iso, stamp_messages
from langchain_om._core.floor import floor_chunks, floor_cut
from langchain_om._core.line_edits import LOG_EDIT_KEY, same_mark
from langchain_om._core.message_ids import with_ids
from langchain_om._core.record import new_record
from langchain_om._core.reflector import select_reflection_slice, should_reflect
from langchain_om._core.thresholds import (
    choose_activation,
    chunk_chain,
    should_buffer,
)
from langchain_om._core.types import OMRecord
from langchain_om._core.usage import reported_window_tokens
from langchain_om._core.window import observation_cut
from langchain_om._plans.archive import archive_due, archive_plan
from langchain_om._plans.buffer import (
    activate_reflection,
    activation_plan,
    announce_buffering,
    backing_off,
    buffer_plan,
    reflection_buffer_plan,
    reflection_failure,
    reflection_is_valid,
)
from langchain_om._plans.cycles import Cycle, failure_reason, logger, status_event
from langchain_om._plans.damping import (
    backoff_gate,
    backoff_state,
    with_backoff,
    with_failure,
    with_success,
)
from langchain_om._plans.effects import AwaitBackground, Plan, StoreBatch
from langchain_om._plans.observation import observe_plan
from langchain_om._plans.read_only import read_only_plan
from langchain_om._plans.reflection import reflect_plan
from langchain_om._plans.resource_buffer import idle_buffer_plan
from langchain_om._plans.resource_turn import resource_turn_plan
from langchain_om._plans.spend import cadence_due, count_turn, guarded, may_start
from langchain_om._plans.storage import (
    backoff_get_op,
    backoff_put_op,
    buffer_backoff_get_op,
    buffered_read_ops,
    chunk_delete_ops,
    reflection_delete_op,
)
from langchain_om._plans.turn_rules import (
    BLOCK_WAIT_SECONDS,
    arrives_oversized,
    buffer_candidates,
    early_trigger,
    insert_gap_reminder,
    obs_key,
    ref_key,
)
from langchain_om._plans.types import (
    ActivationTrigger,
    BackgroundJob,
    TurnEnv,
    TurnInput,
    TurnOutcome,
    emit_event,
    recovers_overflow,
    report_status,
)
from langchain_om.errors import CycleFailedError, ModelTierExceededError
from langchain_om.events import ContextOverflowEvent, StatusEvent


class _Buffered(NamedTuple):
    """What a step reads of its thread's background work."""

    chain: list[Mapping[str, Any]]
    """Stored chunks forming a prefix chain of the window."""
    reflection: Mapping[str, Any] | None
    """A stored background reflection that still applies."""
    reflection_failed: BackoffState | None
    """The backoff of a failed background reflection (its marker stays until replaced)."""
    buffer_failed: BackoffState | None
    """The backoff of a failed background observation."""


def _load_buffered(record: OMRecord, window: Sequence[BaseMessage]) -> Plan[_Buffered]:
    """Read stored chunks, reflection and backoffs; drop the ones that no longer apply."""
    thread_id = record["thread_id"]
    window_ids = [m.id for m in window]
    reads = [*buffered_read_ops(thread_id, window_ids), buffer_backoff_get_op(thread_id)]
    *items, ref_item, backoff_item = yield StoreBatch(reads)
    # A chunk computed before the log's last line edit is observed again, from the edited log.
    current: list[Mapping[str, Any]] = []
    edited: list[Mapping[str, Any]] = []
    for item in items:
        if item is not None:
            chunk = item.value
            (current if same_mark(record, chunk, LOG_EDIT_KEY) else edited).append(chunk)
    chain, stale = chunk_chain(window_ids, current)
    ops: list[Any] = chunk_delete_ops(thread_id, [*stale, *edited])
    reflection = ref_item.value if ref_item is not None else None
    failed = reflection_failure(reflection)
    if failed is not None:
        reflection = None
    elif reflection is not None and not reflection_is_valid(record, reflection):
        ops.append(reflection_delete_op(thread_id))
        reflection = None
    if ops:
        yield StoreBatch(ops)
    buffer_failed = cast(BackoffState, backoff_item.value) if backoff_item is not None else None
    return _Buffered(chain, reflection, failed, buffer_failed)


@dataclass
class _Step:
    """A step in progress: its outcome so far and what the later stages need."""

    env: TurnEnv
    inp: TurnInput
    out: TurnOutcome
    now: datetime
    threshold: int = 0
    block_after: int = 0
    tokens: int = 0
    """Tokens of the current window."""
    start_tokens: int = 0
    """Tokens of the window the step started with."""
    reported: int = 0
    """Provider-reported window tokens; counts for the threshold until the window changes."""
    chain: list[Mapping[str, Any]] = field(default_factory=list)
    """Stored chunks not activated yet (a valid prefix chain of the window)."""
    reflection: Mapping[str, Any] | None = None
    """The stored background reflection, if any."""
    reflection_failed: BackoffState | None = None
    """The backoff of a failed background reflection, if one is stored."""
    buffer_failed: BackoffState | None = None
    """The backoff of a failed background observation, if one is stored."""
    counts: list[int] | None = None
    """Each message's tokens in ``counted`` (``None``: the counter counts lists otherwise)."""
    counted: list[BaseMessage] | None = None
    """The window ``counts`` are of (``out.window`` when it has not changed since)."""

    def load(self, buffered: _Buffered) -> None:
        self.chain, self.reflection = buffered.chain, buffered.reflection
        self.reflection_failed, self.buffer_failed = (
            buffered.reflection_failed,
            buffered.buffer_failed,
        )

    buffering: bool = field(init=False)
    """Whether background buffering runs (the config's, fixed for the step)."""
    obs_key: str = field(init=False)
    """The key of the thread's background observation job."""
    ref_key: str = field(init=False)
    """The key of the thread's background reflection job."""

    def __post_init__(self) -> None:
        self.buffering = self.env.config.buffering_enabled
        self.obs_key = obs_key(self.inp.thread_id)
        self.ref_key = ref_key(self.inp.thread_id)

    def recount(self) -> None:
        counter, window = self.env.counter, self.out.window
        self.counts = counter.message_counts(window)
        self.counted = window
        if self.counts is None:
            self.tokens = counter.count_messages(window)
        else:
            self.tokens = counter.total(self.counts)
        self.reported = 0

    def count_run(self, start: int, messages: Sequence[BaseMessage]) -> int:
        """Tokens of ``messages``, the window's messages from ``start`` on (counted once)."""
        if not messages:
            return 0
        counts, window = self.counts, self.out.window
        if counts is None or self.counted is not window or len(counts) != len(window):
            return self.env.counter.count_messages(messages)
        return self.env.counter.total(counts[start : start + len(messages)])

    @property
    def trigger_tokens(self) -> int:
        """The tokens compared with the threshold: the estimate, or a larger reported usage."""
        return max(self.tokens, self.reported)

    def scheduled(self, key: str) -> bool:
        """Whether the job ``key`` runs now or this step starts it."""
        return self.env.running(key) or any(j.key == key for j in self.out.jobs)


def _new_record(env: TurnEnv, inp: TurnInput, now: datetime) -> OMRecord:
    return inp.record or new_record(
        thread_id=inp.thread_id,
        resource_id=inp.resource_id,
        scope=env.config.scope,
        timezone=env.timezone,
        now=iso(now),
    )


def turn_plan(env: TurnEnv, inp: TurnInput) -> Plan[TurnOutcome]:
    """One step (see the module docstring), under its spend budget when one is set."""
    return (yield from guarded(env, inp, lambda guarded_inp: _turn(env, guarded_inp)))


def _turn(env: TurnEnv, inp: TurnInput) -> Plan[TurnOutcome]:
    if env.config.scope == "resource" and env.config.enabled:  # one log per resource
        inp = replace(inp, window=with_ids(inp.window))
        return (yield from cast("Plan[TurnOutcome]", resource_turn_plan(env, inp)))
    now = env.now()
    out = TurnOutcome(record=_new_record(env, inp, now), window=list(inp.window))
    if not env.config.enabled:  # every front door passes through
        return out
    if env.config.read_only:
        return (yield from read_only_plan(inp, out))
    out.window = with_ids(out.window)  # chunks and groups find their messages by id
    step = yield from _prepare(_Step(env, inp, out, now))
    if inp.allow_observe:
        yield from _activate_due(step)
        if step.buffering and inp.sync_cycles:
            yield from _await_buffer(step)
        if inp.sync_cycles:
            yield from _observe(step)
    if inp.allow_reflect:
        yield from _reflection_step(step)
    if step.buffering and inp.allow_observe and not env.running(step.obs_key):
        yield from _start_buffer(step)
    _close(step)
    return out


def _prepare(step: _Step) -> Plan[_Step]:
    """1. Stamp new messages, insert a time-gap reminder, load the stored chunks."""
    env, out, cfg = step.env, step.out, step.env.config
    earlier = out.record.get("last_activity_at")
    out.stamped = stamp_messages(out.window, step.now, earlier=str(earlier) if earlier else None)
    out.record = count_turn(env, out.record, out.stamped)
    if cfg.temporal_markers:
        insert_gap_reminder(env, step.inp, out, step.now)
    if step.buffering:
        step.load((yield from _load_buffered(out.record, out.window)))
    step.threshold = env.message_threshold(out.record)
    step.block_after = cfg.observation.block_after_tokens if step.buffering else step.threshold
    step.recount()
    step.start_tokens = step.tokens
    if cfg.observation.use_usage_metadata:
        step.reported = reported_window_tokens(
            out.window,
            env.counter.count_messages,
            actor_model=step.inp.actor_model,
            logged_tokens=out.record["observation_tokens"],
        )
    return step


def _activate(
    step: _Step, chunks: Sequence[Mapping[str, Any]], trigger: ActivationTrigger
) -> Plan[None]:
    keep = step.env.config.keep_last_messages
    chunks = chunks[: floor_chunks(chunks, len(step.out.window), keep)]
    if not chunks:
        return
    step.chain = step.chain[len(chunks) :]  # ``chunks`` is always a prefix of the chain
    out = step.out
    out.record, out.window, moved = yield from activation_plan(
        step.env, step.inp, out.record, out.window, chunks, triggered_by=trigger
    )
    out.removed.extend(moved)
    out.observed = True
    step.recount()


def _activate_due(step: _Step) -> Plan[None]:
    """2. Activate a prefix of the chain at the threshold (or on idle TTL / provider change)."""
    if not step.chain:
        return
    trigger = (
        "threshold"
        if step.trigger_tokens >= step.threshold
        else early_trigger(step.env, step.inp, step.out.record, step.now, reflection=False)
    )
    if trigger is None:
        return
    count = len(step.chain)
    if trigger == "threshold" and step.tokens < step.block_after:
        count = choose_activation(
            [int(c["message_tokens"]) for c in step.chain],
            pending=step.tokens,
            floor=step.env.config.observation.retention_floor_tokens,
        ).count
    yield from _activate(step, step.chain[:count], trigger)


def _await_buffer(step: _Step) -> Plan[None]:
    """3. Beyond ``block_after`` with a buffer in flight: wait for it, then activate it."""
    if step.tokens < step.block_after or not step.env.running(step.obs_key):
        return
    yield AwaitBackground(step.obs_key, BLOCK_WAIT_SECONDS)
    step.load((yield from _load_buffered(step.out.record, step.out.window)))
    yield from _activate(step, step.chain, "threshold")
    step.chain = []


def _observe(step: _Step) -> Plan[None]:
    """4. Observe synchronously when over the threshold and no buffer is coming.

    After a context overflow of the agent's call the step observes whatever its threshold, and
    reports what it freed.
    """
    yield from _observe_due(step)
    if recovers_overflow(step.env, step.inp):
        emit_event(
            step.env,
            step.inp,
            ContextOverflowEvent(
                thread_id=step.inp.thread_id,
                model=step.inp.actor_model,
                tokens_before=step.start_tokens,
                tokens_after=step.tokens,
                removed_messages=len(step.out.removed),
                timestamp=iso(step.now),
            ),
        )


def _observe_due(step: _Step) -> Plan[None]:
    """Observe when the threshold (or an overflow) asks for it.

    After a failed cycle, turns back off (:mod:`~langchain_om._plans.damping`) while the
    window grows up to ``block_after``; a manual observation or an overflow always attempts.
    """
    env, inp, out = step.env, step.inp, step.out
    sync_at = step.block_after if (step.buffering and env.running(step.obs_key)) else step.threshold
    forced = inp.force_observe or recovers_overflow(env, inp)
    if not (forced or step.trigger_tokens >= sync_at):
        return
    if not forced and not cadence_due(env, out.record):
        return  # not a turn the cadence observes on: the messages wait in the window
    block_after = env.config.observation.block_after_tokens
    # An explicit observe() reports its failure whatever the policy; a turn follows it.
    manual = inp.force_observe and inp.trigger == "manual"
    raising = manual or env.config.observation.failure_policy == "raise"
    stored = (yield from _raised_backoff(step)) if raising else None
    if not forced:
        gate_record = with_backoff(out.record, stored)
        gate = backoff_gate(gate_record, now=step.now, tokens=step.tokens, block_after=block_after)
        if gate.action == "wait":
            return
        if gate.action == "fail":
            _fail_backing_off(step, gate.reason, gate.wait_seconds)
            return
    yield from _activate(step, step.chain, "threshold")
    step.chain = []
    cut = _sync_cut(step, observe_pending=step.tokens >= block_after)
    cut = floor_cut(out.window, cut, env.config.keep_last_messages)
    if cut <= 0:
        return
    if not (yield from may_start(env, inp, "observation", explicit=manual)):
        return  # the spend budget is used up: nothing leaves the window
    batch = out.window[:cut]
    cursor = out.record["observed_message_count"]
    try:
        out.record = yield from observe_plan(env, inp, out.record, batch)
    except CycleFailedError as exc:
        reason = failure_reason(exc.__cause__ or exc)
        failed = with_failure(with_backoff(out.record, stored), exc, now=step.now, reason=reason)
        if raising and not _goes_on(inp, reason):
            # The turn raises, so its state is not saved: keep the backoff in the store.
            yield StoreBatch([backoff_put_op(inp.thread_id, backoff_state(failed))])
            raise
        out.record = failed
        out.errors.append(exc)
        return
    if stored:
        yield StoreBatch([backoff_put_op(inp.thread_id, None)])
    out.record = with_success(out.record)
    taken = out.record["observed_message_count"] - cursor  # a salvage covers a prefix
    out.removed.extend(batch[:taken])
    out.window = out.window[taken:]
    out.observed = True
    step.recount()


def _raised_backoff(step: _Step) -> Plan[Mapping[str, Any] | None]:
    """The backoff an earlier turn that raised left in the store (``failure_policy="raise"``)."""
    (item,) = yield StoreBatch([backoff_get_op(step.inp.thread_id)])
    value = item.value if item is not None else None
    return value if isinstance(value, Mapping) and value else None


def _sync_cut(step: _Step, *, observe_pending: bool) -> int:
    """How many leading messages a synchronous observation takes.

    The current turn stays in the window, unless this is a manual observation or a user
    message crosses the threshold on its own (:func:`arrives_oversized`: it is observed at
    this step).
    """
    window = step.out.window
    alone = arrives_oversized(window, step.env.counter.count_messages, step.threshold)
    keep = not (step.inp.force_observe or alone)
    return observation_cut(window, keep_current_turn=keep, observe_pending=observe_pending)


def _fail_backing_off(step: _Step, reason: str | None, wait: float) -> None:
    """The window reached ``block_after`` while backing off: apply ``failure_policy`` now."""
    env, inp, out = step.env, step.inp, step.out
    cycle = Cycle(env, inp, out.record, "observation", step.tokens, inp.trigger)
    message = (
        f"Observation is backing off for {wait:.0f} s after failed cycles (last reason: "
        f"{reason or 'unknown'}) and the window reached block_after; nothing was removed "
        "from context. It is retried after the delay."
    )
    logger.warning(
        "langchain-om observation cycle %s skipped: backing off (last reason=%s)",
        cycle.cycle_id,
        reason,
    )
    cycle.emit(cycle.failed(message, reason=reason or "model-error"))
    error = CycleFailedError(message, operation="observation", thread_id=inp.thread_id)
    if env.config.observation.failure_policy == "raise" and not _goes_on(inp, reason):
        raise error
    out.errors.append(error)


def _goes_on(inp: TurnInput, reason: str | None) -> bool:
    """Whether a turn goes on after a failed observation whatever ``failure_policy`` says.

    An input above the largest ``ModelByInputTokens`` tier (that no split could bring under
    it) is a limit of the configuration, not a passing fault: an agent's or graph's turn goes
    on with the messages in the window (the failure is reported as an event, and the
    observation is retried after its backoff); an explicit ``observe()`` still raises.
    """
    return reason == ModelTierExceededError.reason and inp.trigger != "manual"


def _buffer_job(
    env: TurnEnv,
    inp: TurnInput,
    record: OMRecord,
    chain: Sequence[Mapping[str, Any]],
    candidates: Sequence[BaseMessage],
    cycle_id: str | None = None,
    failed_before: BackoffState | None = None,
) -> BackgroundJob:
    """The background job buffering ``candidates`` (after the chunks of ``chain``)."""
    texts = [str(c["text"]) for c in chain]
    background = replace(inp, emit=None)
    plan = buffer_plan(
        env,
        background,
        dict(record),  # type: ignore[arg-type]
        candidates,
        texts,
        cycle_id=cycle_id,
        failed_before=failed_before,
    )
    return BackgroundJob(obs_key(inp.thread_id), plan)


def _covered(chain: Sequence[Mapping[str, Any]]) -> int:
    """How many leading messages of the window the chain's chunks cover."""
    return sum(len(c["message_ids"]) for c in chain)


def _uncovered(
    chain: Sequence[Mapping[str, Any]], window: Sequence[BaseMessage], *, idle: bool
) -> list[BaseMessage]:
    return buffer_candidates(window[_covered(chain) :], idle=idle)


def _start_buffer(step: _Step) -> Plan[None]:
    """6. Start a background buffer when an interval of uncovered tokens has built up."""
    env, inp, out = step.env, step.inp, step.out
    if backing_off(step.buffer_failed, step.now) or not cadence_due(env, out.record):
        return
    candidates = _uncovered(step.chain, out.window, idle=inp.idle)
    unbuffered = step.count_run(_covered(step.chain), candidates)
    interval = env.config.observation.buffer_interval_tokens or step.threshold
    if should_buffer(
        unbuffered=unbuffered,
        pending=step.tokens,
        threshold=step.threshold,
        interval=interval,
        idle=inp.idle,
    ) and (yield from may_start(env, inp, "observation", background=True)):
        cycle_id = announce_buffering(env, inp, out.record, "observation", unbuffered)
        out.jobs.append(
            _buffer_job(env, inp, out.record, step.chain, candidates, cycle_id, step.buffer_failed)
        )


def _close(step: _Step) -> None:
    """Note the activity on the record and report the step's status."""
    env, inp, out = step.env, step.inp, step.out
    # Stages that change the record make a new one: the one given means nothing changed.
    same = inp.record is not None and out.record is inp.record
    record_out = dict(out.record)
    record_out["last_activity_at"] = iso(step.now)
    if inp.actor_model:
        same = same and record_out.get("last_actor_model") == inp.actor_model
        record_out["last_actor_model"] = inp.actor_model
    out.record = record_out  # type: ignore[assignment]
    out.stamps_only = same
    out.reported_tokens = step.reported  # 0 once the window changed (see ``recount``)
    out.status_of = functools.partial(
        _status,
        env,
        out.record,
        step.tokens,
        inp.step_number,
        chunks=step.chain,
        threshold=step.threshold,
        buffering=step.scheduled(step.obs_key),
        reflection=step.reflection,
        reflecting=step.scheduled(step.ref_key),
        spend=inp.spend.status(step.now) if inp.spend is not None else None,
    )
    report_status(env, inp, out)


def _status(
    env: TurnEnv,
    record: OMRecord,
    tokens: int,
    step_number: int,
    *,
    chunks: Sequence[Mapping[str, Any]],
    threshold: int,
    **state: Any,
) -> StatusEvent:
    """The status event of a step that ended with ``record``, ``tokens`` and ``chunks``."""
    projected = 0
    if chunks:
        projected = choose_activation(
            [int(c["message_tokens"]) for c in chunks],
            pending=max(tokens, threshold),
            floor=env.config.observation.retention_floor_tokens,
        ).removed_tokens
    return status_event(
        env, record, tokens, step_number, chunks=chunks, projected_removal=projected, **state
    )


def _reflection_step(step: _Step) -> Plan[None]:
    """5. Swap in a buffered reflection, reflect synchronously, or start a background one."""
    env, inp, out = step.env, step.inp, step.out
    cfg = env.config
    record = out.record
    if cfg.observation.archive is not None:  # archive mode retires groups instead
        if inp.force_reflect or (inp.sync_cycles and archive_due(env, record)):
            out.record = yield from archive_plan(env, inp, record, force=inp.force_reflect)
            out.reflected = out.record is not record
        return
    tokens = record["observation_tokens"]
    threshold = cfg.reflection.observation_tokens_abs
    stored = step.reflection
    if not inp.force_reflect and step.buffering and stored is not None:
        trigger = (
            "threshold"
            if tokens >= threshold
            else early_trigger(env, inp, record, step.now, reflection=True)
        )
        if trigger is not None:
            out.record = yield from activate_reflection(
                env, inp, record, stored, triggered_by=trigger
            )
            out.reflected = True
            step.reflection = None
            return
    if inp.force_reflect or (
        inp.sync_cycles
        and should_reflect(tokens, threshold, record["reflection_suppressed_at_tokens"])
        and (not step.buffering or tokens >= cfg.reflection.block_after_tokens)
    ):
        yield from _reflect_now(step)
    elif step.buffering and stored is None:
        yield from _start_background_reflection(step)


def _reflect_now(step: _Step) -> Plan[None]:
    inp, out = step.inp, step.out
    record = out.record
    explicit = inp.trigger == "manual" and inp.force_reflect
    if not (yield from may_start(step.env, inp, "reflection", explicit=explicit)):
        return  # the spend budget is used up: the log stays as it is
    try:
        out.record = yield from reflect_plan(step.env, inp, record)
    except CycleFailedError as exc:
        # An explicit reflect() reports its failure; a reflection after an observation never
        # discards that observation (the previous generation simply stays).
        if inp.trigger == "manual" and inp.force_reflect and not out.observed:
            raise
        out.errors.append(exc)
        suppressed = dict(out.record)
        suppressed["reflection_suppressed_at_tokens"] = record["observation_tokens"]
        out.record = suppressed  # type: ignore[assignment]
        return
    out.reflected = True
    if step.reflection is not None or step.reflection_failed is not None:
        yield StoreBatch([reflection_delete_op(inp.thread_id)])
        step.reflection = step.reflection_failed = None


def _start_background_reflection(step: _Step) -> Plan[None]:
    env, inp, out = step.env, step.inp, step.out
    record = out.record
    start_at = env.config.reflection.buffer_start_tokens
    if (
        record["observation_tokens"] < start_at
        or len(record["groups"]) <= 1
        or env.running(step.ref_key)
        or backing_off(step.reflection_failed, step.now)
    ):
        return
    ids = select_reflection_slice(record["groups"], start_at)
    if not ids or not (yield from may_start(env, inp, "reflection", background=True)):
        return
    slice_tokens = sum(g["tokens"] for g in record["groups"] if g["id"] in set(ids))
    cycle_id = announce_buffering(env, inp, record, "reflection", slice_tokens)
    plan = reflection_buffer_plan(
        env,
        replace(inp, emit=None),
        dict(record),  # type: ignore[arg-type]
        ids,
        cycle_id=cycle_id,
        failed_before=step.reflection_failed,
    )
    out.jobs.append(BackgroundJob(step.ref_key, plan))


def idle_plan(env: TurnEnv, inp: TurnInput) -> Plan[TurnOutcome]:
    """At turn end (``buffer_on_idle``): buffer whatever is not covered yet."""
    return (yield from guarded(env, inp, lambda guarded_inp: _idle(env, guarded_inp)))


def _idle(env: TurnEnv, inp: TurnInput) -> Plan[TurnOutcome]:
    out = TurnOutcome(record=_new_record(env, inp, env.now()), window=list(inp.window))
    if env.config.buffering_enabled and env.config.scope == "resource":
        yield from cast("Plan[None]", idle_buffer_plan(env, inp, out))
        return out
    if not env.config.buffering_enabled or env.running(obs_key(inp.thread_id)):
        return out
    out.window = with_ids(out.window)
    if not cadence_due(env, out.record, idle=True):
        return out
    buffered = yield from _load_buffered(out.record, out.window)
    if backing_off(buffered.buffer_failed, env.now()):
        return out
    candidates = _uncovered(buffered.chain, out.window, idle=True)
    if candidates and (yield from may_start(env, inp, "observation", background=True)):
        out.jobs.append(
            _buffer_job(
                env, inp, out.record, buffered.chain, candidates, None, buffered.buffer_failed
            )
        )
    return out
