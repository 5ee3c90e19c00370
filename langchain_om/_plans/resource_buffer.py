"""Buffering in resource scope: the resource's threads observed ahead of the threshold.

Thread scope's machinery is reused (the background runner, the cycle frame and its
``data-om-buffering-*`` events, the buffering interval and activation arithmetic, the early
activation triggers, the backoff); what differs is where a chunk lives. A resource's chunks
are kept in its shared record (:class:`~langchain_om._core.resource.ResourceChunk`), and both
writes are compare-and-set commits under the resource's lock:

* :func:`start_buffer` schedules a background job when an interval of tokens no chunk covers
  has built up across the resource's threads; the job observes them (batched and in parallel,
  as a synchronous observation) and stores the answer as a chunk
  (:func:`~langchain_om._core.resource_chunks.add_chunk`: a race stores it once);
* :func:`activate_due_plan` activates a prefix of the chunks at the threshold (or after the
  idle TTL, or on a provider change) with no model call: they are applied to the log and
  removed from the record in one write, so a chunk is activated exactly once whoever tries;
* :func:`await_buffer_plan`, beyond ``block_after`` with a buffer in flight, waits for it.

The step's own messages that a chunk covered leave its window right after (archived by the
thread); another thread's leave at that thread's next step.

A buffered observation has the effects of a synchronous one: the background cycle runs the
transform hooks with its own context (``trigger="async-buffer"``) and the extractors, and its
chunk keeps the titles and extracted values it gave, which the activation applies (with
``data-om-thread-update`` for each retitled thread whose title is not pinned).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

from langchain_core.messages import BaseMessage

from langchain_om._core.backoff import BackoffState
from langchain_om._core.dates import iso
from langchain_om._core.record import new_id
from langchain_om._core.resource import (
    ResourceChunk,
    ResourceRecord,
    Section,
    ThreadSection,
    log_text,
)
from langchain_om._core.resource_chunks import (
    activate_chunks,
    add_chunk,
    covered_ids,
    last_covered,
    new_chunk,
    with_chunks,
)
from langchain_om._core.thresholds import choose_activation, should_buffer
from langchain_om._core.types import OMRecord
from langchain_om._plans.buffer import (
    announce_buffering,
    background_cycle,
    backing_off,
    failed_backoff,
)
from langchain_om._plans.cycles import Cycle, CycleBody, run_cycle, status_event
from langchain_om._plans.effects import AwaitBackground, Plan, StoreBatch
from langchain_om._plans.resource import (
    ResourcePlan,
    commit_plan,
    load_resource_plan,
    threads_delta_plan,
)
from langchain_om._plans.spend import cadence_due, may_start
from langchain_om._plans.storage import resource_backoff_get_op, resource_backoff_put_op
from langchain_om._plans.titles import retitled_plan
from langchain_om._plans.turn_rules import (
    BLOCK_WAIT_SECONDS,
    buffer_candidates,
    early_trigger,
    resource_obs_key,
)
from langchain_om._plans.types import (
    ActivationTrigger,
    BackgroundJob,
    TurnEnv,
    TurnInput,
    TurnOutcome,
    emit_event,
)
from langchain_om.errors import ObserverOutputError
from langchain_om.events import ActivationEvent, StatusEvent
from langchain_om.extractors import ExtractionResult

__all__ = [
    "activate_all_plan",
    "activate_due_plan",
    "await_buffer_plan",
    "buffer_backoff_plan",
    "buffered_status",
    "idle_buffer_plan",
    "start_buffer",
]

Windows = Mapping[str, Sequence[BaseMessage]]
"""Per thread id, its messages as the step sees them (its own live window, the others'
stored unobserved messages)."""


def _present(inp: TurnInput, out: TurnOutcome, windows: Windows) -> dict[str, set[str]]:
    """Per thread id, the ids of its messages a chunk may still cover."""
    present = {tid: {m.id for m in msgs if m.id} for tid, msgs in windows.items()}
    present[inp.thread_id] = {m.id for m in out.window if m.id}
    return present


def activate_plan(
    env: TurnEnv,
    inp: TurnInput,
    out: TurnOutcome,
    shared: ResourceRecord,
    chunks: Sequence[ResourceChunk],
    windows: Windows,
    *,
    triggered_by: ActivationTrigger,
) -> ResourcePlan[ResourceRecord]:
    """Apply ``chunks`` to the shared log and remove them from the record, in one commit.

    No model call. The chunks another writer activated first are not activated again; the
    ``data-om-activation`` event reports the ones this commit activated, and a
    ``data-om-thread-update`` follows for each thread they retitled (not pinned).
    """
    wanted = {c["id"] for c in chunks}
    present = _present(inp, out, windows)
    done: list[ResourceChunk] = []
    titles: dict[str, str] = {}

    def change(latest: ResourceRecord) -> tuple[ResourceRecord, bool]:
        new, activated = activate_chunks(latest, wanted, present)
        done[:] = activated
        titles.clear()
        titles.update(latest["titles"])
        return new, new is not latest

    shared = yield from commit_plan(shared["resource_id"], shared, change)
    if done:
        text = log_text(shared["sections"])
        cycle_id = new_id()
        emit_event(
            env,
            inp,
            ActivationEvent(
                cycle_id=cycle_id,
                operation_type="observation",
                activated_at=iso(env.now()),
                chunks_activated=len(done),
                tokens_activated=sum(c["message_tokens"] for c in done),
                observation_tokens=env.counter.count_text(text) if text else 0,
                messages_activated=sum(len(ids) for c in done for ids in c["observed"].values()),
                generation_count=shared["generation"],
                observations="\n\n".join(log_text(c["sections"]) for c in done),
                triggered_by=triggered_by,
                previous_model=out.record.get("last_actor_model"),
                current_model=inp.actor_model,
                record_id=out.record["record_id"],
                thread_id=out.record["thread_id"],
            ),
        )
        if env.config.observation.thread_title:
            yield from retitled_plan(env, inp, cycle_id, titles, shared["titles"])
    return shared


def activate_due_plan(
    env: TurnEnv,
    inp: TurnInput,
    out: TurnOutcome,
    shared: ResourceRecord,
    windows: Windows,
    *,
    total: int,
    now: datetime,
) -> ResourcePlan[ResourceRecord]:
    """Activate a prefix of the stored chunks at the threshold, on idle TTL or provider change.

    ``total`` is the unobserved tokens of all the resource's threads. Below ``block_after``
    the prefix leaves about the retention floor in the windows; beyond it, every chunk goes.
    """
    chunks = shared["chunks"]
    if not chunks:
        return shared
    threshold = env.message_threshold(out.record)
    trigger: ActivationTrigger | None = (
        "threshold"
        if total >= threshold
        else early_trigger(env, inp, out.record, now, reflection=False)
    )
    if trigger is None:
        return shared
    count = len(chunks)
    if trigger == "threshold" and total < env.config.observation.block_after_tokens:
        count = choose_activation(
            [c["message_tokens"] for c in chunks],
            pending=total,
            floor=env.config.observation.retention_floor_tokens,
        ).count
    return (
        yield from activate_plan(
            env, inp, out, shared, chunks[:count], windows, triggered_by=trigger
        )
    )


def await_buffer_plan(
    env: TurnEnv,
    inp: TurnInput,
    out: TurnOutcome,
    shared: ResourceRecord,
    *,
    total: int,
) -> ResourcePlan[ResourceRecord]:
    """Beyond ``block_after`` with this process's buffer in flight: wait, then activate all."""
    key = resource_obs_key(shared["resource_id"])
    if total < env.config.observation.block_after_tokens or not env.running(key):
        return shared
    yield AwaitBackground(key, BLOCK_WAIT_SECONDS)
    shared, windows = yield from load_resource_plan(shared["resource_id"])
    if not shared["chunks"]:
        return shared
    return (
        yield from activate_plan(
            env, inp, out, shared, shared["chunks"], windows, triggered_by="threshold"
        )
    )


def activate_all_plan(
    env: TurnEnv, inp: TurnInput, out: TurnOutcome, shared: ResourceRecord, windows: Windows
) -> ResourcePlan[ResourceRecord]:
    """Before a synchronous observation: activate every stored chunk (it comes first)."""
    if not shared["chunks"]:
        return shared
    return (
        yield from activate_plan(
            env, inp, out, shared, shared["chunks"], windows, triggered_by="threshold"
        )
    )


def buffer_backoff_plan(resource_id: str) -> Plan[BackoffState | None]:
    """The backoff a failed background observation of the resource left, if any."""
    (item,) = yield StoreBatch([resource_backoff_get_op(resource_id)])
    value = item.value if item is not None else None
    return cast(BackoffState, value) if isinstance(value, Mapping) and value else None


def _uncovered(
    inp: TurnInput, out: TurnOutcome, shared: ResourceRecord, windows: Windows, *, idle: bool
) -> dict[str, list[BaseMessage]]:
    """Per thread, the messages after its last chunk (or its cursor) a buffer may take.

    The step's own thread keeps its current turn out until the turn ends (``idle``); the
    others' stored messages are taken up to a safe cut.
    """
    covered = covered_ids(shared)
    rows: dict[str, Sequence[BaseMessage]] = {
        **{t: w for t, w in windows.items() if t != inp.thread_id},
        inp.thread_id: out.window,
    }
    todo: dict[str, list[BaseMessage]] = {}
    for tid, messages in rows.items():
        seen = covered.get(tid, set())
        rest = [m for m in messages if m.id and m.id not in seen]
        taken = buffer_candidates(rest, idle=idle or tid != inp.thread_id)
        if taken:
            todo[tid] = taken
    return todo


def start_buffer(
    env: TurnEnv,
    inp: TurnInput,
    out: TurnOutcome,
    shared: ResourceRecord,
    windows: Windows,
    *,
    total: int,
    failed: BackoffState | None,
) -> Plan[None]:
    """Schedule a background buffer of the resource when an interval has built up.

    ``total`` is the unobserved tokens of all the resource's threads; the job is keyed by
    the resource, so one process runs at most one buffer per resource at a time. The cadence
    and the spend budget are asked first, as for a thread's buffer.
    """
    key = resource_obs_key(shared["resource_id"])
    if env.running(key) or any(j.key == key for j in out.jobs) or backing_off(failed, env.now()):
        return
    if not cadence_due(env, out.record, idle=inp.idle):
        return
    todo = _uncovered(inp, out, shared, windows, idle=inp.idle)
    unbuffered = sum(env.counter.count_messages(m) for m in todo.values())
    threshold = env.message_threshold(out.record)
    interval = env.config.observation.buffer_interval_tokens or threshold
    if not should_buffer(
        unbuffered=unbuffered, pending=total, threshold=threshold, interval=interval, idle=inp.idle
    ):
        return
    if not (yield from may_start(env, inp, "observation", background=True)):
        return
    cycle_id = announce_buffering(
        env, inp, out.record, "observation", unbuffered, thread_ids=sorted(todo)
    )
    plan = _buffer_plan(
        env, inp, dict(out.record), shared, todo, cycle_id=cycle_id, failed_before=failed
    )
    out.jobs.append(BackgroundJob(key, cast("Plan[None]", plan)))


def _buffer_plan(
    env: TurnEnv,
    inp: TurnInput,
    record: dict[str, Any],
    shared: ResourceRecord,
    todo: Mapping[str, Sequence[BaseMessage]],
    *,
    cycle_id: str,
    failed_before: BackoffState | None,
) -> ResourcePlan[None]:
    """Observe ``todo`` in the background and store the answer as a chunk. Never raises.

    The Observer reads the record as it will be once the chunks before this one are
    activated (their log, titles and values); the transform hooks get the cycle's context.
    A failure stores the resource's buffering backoff (``failed_before`` plus this failure);
    a stored chunk clears it.
    """
    resource_id = shared["resource_id"]
    basis = with_chunks(shared)
    after = last_covered(shared)
    counts = {tid: env.counter.count_messages(m) for tid, m in todo.items()}
    background = replace(inp, emit=None)
    thread_record = cast(OMRecord, record)

    def body(cycle: Cycle) -> ResourcePlan[tuple[OMRecord, dict[str, Any]]]:
        found = ExtractionResult()
        try:
            delta = yield from threads_delta_plan(
                env,
                resource_id,
                basis,
                todo,
                trigger="async-buffer",
                cycle_id=cycle.cycle_id,
                ctx=cycle.context(),
                extraction=found,
            )
            if delta is None or not delta.sections:
                raise ObserverOutputError(
                    "The Observer returned no observations.", raw="", reason="empty"
                )
        except Exception as exc:
            backoff = failed_backoff(env, failed_before, exc)
            yield StoreBatch([resource_backoff_put_op(resource_id, backoff)])
            raise
        chunk = new_chunk(
            delta,
            after=after,
            thread_tokens=counts,
            section_tokens=[_tokens(env, s) for s in delta.sections],
            created_at=iso(env.now()),
            extracted_before=basis["extracted"],
        )
        latest = yield from commit_plan(resource_id, shared, lambda r: add_chunk(r, chunk))
        if failed_before:
            yield StoreBatch([resource_backoff_put_op(resource_id, None)])
        stored = next((c for c in latest["chunks"] if c["id"] == chunk["id"]), None)
        return thread_record, {
            "buffered_tokens": stored["tokens"] if stored else 0,
            "observations": log_text(stored["sections"]) if stored else "",
            "covered_messages": sum(len(i) for i in stored["observed"].values()) if stored else 0,
            "extracted_values": found.values if stored else {},
            "extraction_failures": found.failures,
        }

    cycle = background_cycle(
        env, background, thread_record, "observation", sum(counts.values()), cycle_id
    )
    yield from run_cycle(cycle, cast(CycleBody, body))


def _tokens(env: TurnEnv, section: Section) -> int:
    """Tokens of a delta's section as the log shows it."""
    shown = ThreadSection(thread=section.thread, date=section.date, lines=list(section.lines))
    return env.counter.count_text(log_text([shown]))


def idle_buffer_plan(env: TurnEnv, inp: TurnInput, out: TurnOutcome) -> ResourcePlan[None]:
    """At turn end (``buffer_on_idle``): buffer whatever the resource's chunks do not cover."""
    resource_id = inp.resource_id or out.record["resource_id"]
    if not resource_id or env.running(resource_obs_key(resource_id)):
        return
    shared, windows = yield from load_resource_plan(resource_id)
    failed = yield from buffer_backoff_plan(resource_id)
    yield from start_buffer(env, inp, out, shared, windows, total=0, failed=failed)


def buffered_status(
    env: TurnEnv,
    inp: TurnInput,
    out: TurnOutcome,
    shared: ResourceRecord,
    *,
    total: int,
) -> StatusEvent:
    """``data-om-status`` of a step, with the resource's chunks and its buffer."""
    chunks = shared["chunks"] if env.config.buffering_enabled else []
    key = resource_obs_key(shared["resource_id"])
    projected = 0
    if chunks:
        projected = choose_activation(
            [c["message_tokens"] for c in chunks],
            pending=max(total, env.message_threshold(out.record)),
            floor=env.config.observation.retention_floor_tokens,
        ).removed_tokens
    return status_event(
        env,
        out.record,
        env.counter.count_messages(out.window),
        inp.step_number,
        chunks=cast("list[Mapping[str, Any]]", chunks),
        buffering=env.running(key) or any(j.key == key for j in out.jobs),
        projected_removal=projected,
        spend=inp.spend.status(env.now()) if inp.spend is not None else None,
    )
