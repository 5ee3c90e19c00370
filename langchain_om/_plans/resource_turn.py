"""One step of a thread in resource scope, as a plan.

The thread keeps its own record (archive cursor, activity, model) and window; the
observation log is the resource's (see :mod:`langchain_om._plans.resource`). Per step:

1. messages of this thread that another thread's step observed leave the window (archived
   here, by the thread that owns them);
2. when the unobserved messages of all the resource's threads reach the threshold, they are
   observed together (batched, in parallel) and committed with compare-and-set; this thread's
   observed messages leave its window;
3. the thread's remaining window is stored, so other threads can observe it and show it;
4. the thread's record is given a view of the shared log (which names the current thread) and
   of the other threads' recent unobserved messages, so rendering, status and every front
   door work as in thread scope.

With buffering on (``observation.buffer_tokens`` set), stored chunks are activated before
step 2 at the threshold (or on idle TTL or provider change), and a background buffer of the
resource's threads is started after it (see :mod:`langchain_om._plans.resource_buffer`).

When the shared log reaches ``reflection.observation_tokens`` it is condensed (one Reflector
call, committed with compare-and-set; what was observed meanwhile is kept after it). Only
observations are buffered in resource scope, so the reflection is always synchronous; while it
keeps failing, the view shows at most ``reflection.block_after`` tokens of the log.

A ``read_only`` step does only step 4 (nothing is written, its window is not shared).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from langchain_core.messages import BaseMessage

from langchain_om._core.dates import iso, message_time, stamp_messages
from langchain_om._core.floor import floor_cut
from langchain_om._core.record import make_group, new_id, new_record, stable_id
from langchain_om._core.redact import error_summary, redacted_logger
from langchain_om._core.resource import (
    ResourceRecord,
    bounded_log,
    log_text,
    observed_ids,
    thread_label,
)
from langchain_om._core.types import OMRecord
from langchain_om._core.window import observation_cut
from langchain_om._plans.cycles import Cycle, failure_reason, status_event
from langchain_om._plans.effects import HookCall
from langchain_om._plans.read_only import read_only_plan
from langchain_om._plans.resource import (
    ResourcePlan,
    load_resource_plan,
    observe_threads_plan,
    reflect_resource_plan,
    save_pending_plan,
)
from langchain_om._plans.resource_buffer import (
    activate_all_plan,
    activate_due_plan,
    await_buffer_plan,
    buffer_backoff_plan,
    buffered_status,
    start_buffer,
)
from langchain_om._plans.spend import cadence_due, count_turn, may_start
from langchain_om._plans.storage import observed_plan
from langchain_om._plans.titles import pinned_title_plan, retitled_plan, with_pin
from langchain_om._plans.transforms import archived_messages
from langchain_om._plans.turn_rules import insert_gap_reminder, resource_obs_key
from langchain_om._plans.types import (
    TurnEnv,
    TurnInput,
    TurnOutcome,
    emit_event,
    recovers_overflow,
    report_status,
)
from langchain_om.errors import (
    CycleFailedError,
    ModelTierExceededError,
    OMConfigError,
    OMUsageError,
)
from langchain_om.events import (
    ObservationEndEvent,
    ObservationFailedEvent,
    ObservationStartEvent,
)
from langchain_om.extractors import ExtractionResult

logger = redacted_logger("langchain_om")

__all__ = [
    "OTHERS_TOKENS_KEY",
    "OTHER_THREADS_TOKENS",
    "other_threads_text",
    "resource_turn_plan",
    "shared_view_plan",
]

OTHERS_TOKENS_KEY = "resource_others_tokens"
"""Record key (resource scope): unobserved tokens of the resource's other threads, which count
toward the threshold with the thread's own window (the graph's routers read it)."""
OTHER_THREADS_TOKENS = 2_000
"""Budget of the other threads' recent unobserved messages shown to the agent."""
_LINE_CHARS = 300


def _require_resource(inp: TurnInput) -> str:
    """The step's resource: the one named, else the thread's owner (as in thread scope)."""
    owner = inp.record["resource_id"] if inp.record is not None else None
    resource_id = inp.resource_id or owner
    if not resource_id:
        raise OMUsageError(
            "scope='resource' shares one memory across the threads of a resource, so every "
            "step needs a resource id: pass resource_id=... (standalone and history adapter) "
            "or config={'configurable': {'thread_id': ..., 'resource_id': ...}} (agents and "
            "graphs)."
        )
    return resource_id


def resource_turn_plan(env: TurnEnv, inp: TurnInput) -> ResourcePlan[TurnOutcome]:
    """One step of ``inp.thread_id`` in resource scope (see the module docstring)."""
    if env.config.read_only:
        return (yield from _read_only_turn(env, inp))
    resource_id = _require_resource(inp)
    inp = replace(inp, resource_id=resource_id)
    now = env.now()
    record = inp.record or new_record(
        thread_id=inp.thread_id,
        resource_id=resource_id,
        scope="resource",
        timezone=env.timezone,
        now=iso(now),
    )
    out = TurnOutcome(record=record, window=list(inp.window))
    earlier = record.get("last_activity_at")
    out.stamped = stamp_messages(out.window, now, earlier=str(earlier) if earlier else None)
    out.record = count_turn(env, out.record, out.stamped)
    for message in out.window:
        if not message.id:  # cursors name messages by id (graph reducers set them already)
            message.id = f"om-{new_id()}"
    if env.config.temporal_markers:  # the thread's own pause, as in thread scope
        insert_gap_reminder(env, inp, out, now)
    shared, windows = yield from load_resource_plan(resource_id)
    yield from _leave(env, inp, out, shared)
    buffering = env.config.buffering_enabled
    failed = (yield from buffer_backoff_plan(resource_id)) if buffering else None
    if inp.allow_observe and buffering:
        shared = yield from _activate_buffered(env, inp, out, shared, windows, now)
    if inp.allow_observe and inp.sync_cycles:
        shared = yield from _observe_due(env, inp, out, shared, windows)
    if inp.allow_reflect and (inp.sync_cycles or inp.force_reflect):
        shared = yield from _reflect_due(env, inp, out, shared)
    total = _total(env, out, shared, windows, inp.thread_id)
    if inp.allow_observe and buffering:
        yield from start_buffer(env, inp, out, shared, windows, total=total, failed=failed)
    yield from save_pending_plan(env, resource_id, inp.thread_id, out.window)
    others = {t: w for t, w in windows.items() if t != inp.thread_id}
    view = _view(env, out.record, shared, others, now, actor_model=inp.actor_model)
    out.record = yield from _titled(env, view)
    out.status = buffered_status(env, inp, out, shared, total=total)
    report_status(env, inp, out)
    return out


def _read_only_turn(env: TurnEnv, inp: TurnInput) -> ResourcePlan[TurnOutcome]:
    """A ``read_only`` step: the shared log and the other threads' messages, as stored now.

    Nothing is observed, reflected, archived or stored: the thread's window stays as it is,
    and its messages are not shared with the other threads (the reader only reads). The
    thread's record is the one :func:`~langchain_om._plans.read_only.read_only_plan` shows.
    """
    now = env.now()
    record = inp.record or new_record(
        thread_id=inp.thread_id,
        resource_id=inp.resource_id,
        scope="resource",
        timezone=env.timezone,
        now=iso(now),
    )
    out = yield from read_only_plan(inp, TurnOutcome(record=record, window=list(inp.window)))
    resource_id = _require_resource(replace(inp, record=out.record))
    shared, windows = yield from load_resource_plan(resource_id)
    others = {t: w for t, w in windows.items() if t != inp.thread_id}
    view = _view(env, out.record, shared, others, now)
    view["last_activity_at"] = out.record["last_activity_at"]
    out.record = yield from _titled(env, view)
    out.status = status_event(
        env, out.record, env.counter.count_messages(out.window), inp.step_number
    )
    report_status(env, inp, out)
    return out


def _leave(
    env: TurnEnv, inp: TurnInput, out: TurnOutcome, shared: ResourceRecord
) -> ResourcePlan[None]:
    """Archive and drop the window's messages the shared record counts as observed.

    With ``hooks.archive_transformed`` the archive keeps what ``hooks.before_observation``
    makes of them (the hook is run again here, by the thread that owns them).
    """
    observed = observed_ids(shared).get(out.record["thread_id"], set())
    gone = [m for m in out.window if m.id in observed]
    if not gone:
        return
    ctx = Cycle(env, inp, out.record, "observation", 0, inp.trigger).context()
    kept = yield from archived_messages(env, ctx, gone)
    after = dict(out.record)
    after["observed_message_count"] = out.record["observed_message_count"] + len(gone)
    after["last_observed_message_id"] = gone[-1].id
    after["total_tokens_observed"] = out.record["total_tokens_observed"] + (
        env.counter.count_messages(gone)
    )
    out.record = yield from observed_plan(
        kept,
        before=out.record,
        after=after,  # type: ignore[arg-type]
        vector=env.vector,
    )
    out.removed.extend(gone)
    out.window = [m for m in out.window if m.id not in observed]
    out.observed = True


def _cut(
    env: TurnEnv, messages: Sequence[BaseMessage], *, keep_current_turn: bool
) -> list[BaseMessage]:
    """The leading messages of a thread's window an observation takes.

    Up to a safe cut, and never a thread's last ``keep_last_messages`` (each thread keeps its
    own floor of raw messages, as in thread scope).
    """
    cut = observation_cut(messages, keep_current_turn=keep_current_turn)
    return list(messages[: floor_cut(messages, cut, env.config.keep_last_messages)])


def _activate_buffered(
    env: TurnEnv,
    inp: TurnInput,
    out: TurnOutcome,
    shared: ResourceRecord,
    windows: Mapping[str, Sequence[BaseMessage]],
    now: datetime,
) -> ResourcePlan[ResourceRecord]:
    """Activate buffered chunks when due; beyond ``block_after``, wait for the buffer first."""
    total = _total(env, out, shared, windows, inp.thread_id)
    shared = yield from activate_due_plan(env, inp, out, shared, windows, total=total, now=now)
    yield from _leave(env, inp, out, shared)
    if inp.sync_cycles:
        total = _total(env, out, shared, windows, inp.thread_id)
        shared = yield from await_buffer_plan(env, inp, out, shared, total=total)
        yield from _leave(env, inp, out, shared)
    return shared


def _total(
    env: TurnEnv,
    out: TurnOutcome,
    shared: ResourceRecord,
    windows: Mapping[str, Sequence[BaseMessage]],
    thread_id: str,
) -> int:
    """Tokens toward the threshold: the thread's whole window and the others' unobserved."""
    return env.counter.count_messages(out.window) + _others_tokens(env, shared, windows, thread_id)


def _sync_at(env: TurnEnv, out: TurnOutcome, shared: ResourceRecord) -> int:
    """When a step observes synchronously: ``block_after`` while a buffer is in flight.

    Else at the threshold, as without buffering.
    """
    if env.config.buffering_enabled and env.running(resource_obs_key(shared["resource_id"])):
        return env.config.observation.block_after_tokens
    return env.message_threshold(out.record)


def _observe_due(
    env: TurnEnv,
    inp: TurnInput,
    out: TurnOutcome,
    shared: ResourceRecord,
    windows: Mapping[str, Sequence[BaseMessage]],
) -> ResourcePlan[ResourceRecord]:
    """Observe every thread's unobserved messages when they reach the threshold.

    Buffered chunks are activated first (they cover the oldest messages).
    """
    forced = inp.force_observe or recovers_overflow(env, inp)
    # As in thread scope, the whole window counts toward the threshold; the cut keeps the
    # current turn out of the observation.
    total = _total(env, out, shared, windows, inp.thread_id)
    threshold = env.message_threshold(out.record)
    if not forced and total < _sync_at(env, out, shared):
        return shared
    if env.config.buffering_enabled and shared["chunks"]:
        shared = yield from activate_all_plan(env, inp, out, shared, windows)
        yield from _leave(env, inp, out, shared)
    seen = observed_ids(shared)
    # Other threads' stored messages are taken whole, up to a safe cut (never a tool call
    # without its result): their last turn was answered, or is answered from their own window.
    todo = {
        tid: _cut(
            env, [m for m in msgs if m.id not in seen.get(tid, set())], keep_current_turn=False
        )
        for tid, msgs in windows.items()
        if tid != inp.thread_id
    }
    todo[inp.thread_id] = _cut(env, out.window, keep_current_turn=not inp.force_observe)
    if not any(todo.values()):
        return shared
    if not forced and not cadence_due(env, out.record):
        return shared  # not a turn the cadence observes on
    manual = inp.force_observe and inp.trigger == "manual"
    if not (yield from may_start(env, inp, "observation", explicit=manual)):
        return shared  # the spend budget is used up: nothing leaves the window
    cycle = _Cycle(env, inp, out.record, "observation", total, sorted(t for t in todo if todo[t]))
    before = dict(shared["titles"])
    found = ExtractionResult()
    yield from cycle.start()
    try:
        shared = yield from observe_threads_plan(
            env,
            shared["resource_id"],
            shared,
            todo,
            threshold=0 if forced else threshold,
            cycle_id=cycle.cycle_id,
            ctx=cycle.context(),
            extraction=found,
        )
    except Exception as exc:
        yield from cycle.failed(exc)
        return _failed(env, inp, out, shared, exc)
    yield from cycle.end(shared, found)
    yield from retitled_plan(env, inp, cycle.cycle_id, before, shared["titles"])
    yield from _leave(env, inp, out, shared)
    return shared


def _others_tokens(
    env: TurnEnv, shared: ResourceRecord, windows: Mapping[str, Sequence[BaseMessage]], tid: str
) -> int:
    """Unobserved tokens of the resource's threads other than ``tid``."""
    seen = observed_ids(shared)
    return sum(
        env.counter.count_messages(rest)
        for other, msgs in windows.items()
        if other != tid and (rest := [m for m in msgs if m.id not in seen.get(other, set())])
    )


def _reflect_due(
    env: TurnEnv, inp: TurnInput, out: TurnOutcome, shared: ResourceRecord
) -> ResourcePlan[ResourceRecord]:
    """Condense the shared log when it reaches ``reflection.observation_tokens``."""
    tokens = env.counter.count_text(log_text(shared["sections"])) if shared["sections"] else 0
    if not tokens or not (
        inp.force_reflect or tokens >= env.config.reflection.observation_tokens_abs
    ):
        return shared
    explicit = inp.force_reflect and inp.trigger == "manual"
    if not (yield from may_start(env, inp, "reflection", explicit=explicit)):
        return shared  # the spend budget is used up: the log stays as it is
    cycle = _Cycle(env, inp, out.record, "reflection", tokens, [])
    found = ExtractionResult()
    yield from cycle.start()
    try:
        shared = yield from reflect_resource_plan(
            env,
            shared["resource_id"],
            shared,
            thread_id=inp.thread_id,
            cycle_id=cycle.cycle_id,
            ctx=cycle.context(),
            extraction=found,
        )
    except Exception as exc:
        yield from cycle.failed(exc)
        if inp.trigger == "manual":
            raise
        _carry_on(out, exc, exc, _REFLECTION_FAILED, inp.thread_id)
        return shared
    yield from cycle.end(shared, found)
    out.reflected = True
    return shared


@dataclass
class _Cycle:
    """Hooks and events around one resource observation or reflection."""

    env: TurnEnv
    inp: TurnInput
    record: OMRecord
    operation: Literal["observation", "reflection"]
    tokens: int
    threads: list[str]
    cycle_id: str = field(default_factory=new_id)
    started: float = field(default_factory=time.monotonic)

    def _hook(self, end: bool, **extra: Any) -> ResourcePlan[None]:
        name = f"on_{self.operation}_{'end' if end else 'start'}"
        hook = getattr(self.env.config.hooks, name)
        if hook is not None:
            payload = {
                "thread_id": self.inp.thread_id,
                "resource_id": self.inp.resource_id,
                "trigger": self.inp.trigger,
                **extra,
            }
            yield HookCall(name, hook, payload)

    def context(self) -> dict[str, Any]:
        """The transform hooks' ``ctx``, as thread scope's cycle gives it."""
        frame = Cycle(
            self.env,
            self.inp,
            self.record,
            self.operation,
            self.tokens,
            self.inp.trigger,
            cycle_id=self.cycle_id,
        )
        return frame.context()

    def _ids(self) -> dict[str, Any]:
        return {
            "cycle_id": self.cycle_id,
            "operation_type": self.operation,
            "record_id": self.record["record_id"],
            "thread_id": self.inp.thread_id,
            "trigger": self.inp.trigger,
        }

    def _ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def start(self) -> ResourcePlan[None]:
        event = ObservationStartEvent(
            **self._ids(),
            started_at=iso(self.env.now()),
            thread_ids=self.threads,
            tokens_to_observe=self.tokens,
        )
        emit_event(self.env, self.inp, event)
        yield from self._hook(False)

    def end(self, shared: ResourceRecord, found: ExtractionResult) -> ResourcePlan[None]:
        text = log_text(shared["sections"])
        event = ObservationEndEvent(
            **self._ids(),
            completed_at=iso(self.env.now()),
            duration_ms=self._ms(),
            observations=text,
            tokens_observed=self.tokens,
            observation_tokens=self.env.counter.count_text(text) if text else 0,
            current_task=shared["hints"].get("current_task"),
            suggested_response=shared["hints"].get("suggested_response"),
            extracted_values=found.values,
            extraction_failures=found.failures,
        )
        emit_event(self.env, self.inp, event)
        yield from self._hook(True)

    def failed(self, exc: Exception) -> ResourcePlan[None]:
        event = ObservationFailedEvent(
            **self._ids(),
            failed_at=iso(self.env.now()),
            duration_ms=self._ms(),
            tokens_attempted=self.tokens,
            error=error_summary(exc).text(),
            reason=failure_reason(exc),
        )
        emit_event(self.env, self.inp, event)
        yield from self._hook(True, error=exc)


def _failed(
    env: TurnEnv, inp: TurnInput, out: TurnOutcome, shared: ResourceRecord, exc: Exception
) -> ResourceRecord:
    error = CycleFailedError(
        f"Observation of resource {inp.resource_id!r} failed ({type(exc).__name__}); nothing "
        "was removed.",
        operation="observation",
        thread_id=inp.thread_id,
    )
    error.__cause__ = exc
    tripwire = isinstance(exc, ModelTierExceededError) and inp.trigger != "manual"
    if env.config.observation.failure_policy == "raise" and not tripwire:
        raise error
    _carry_on(out, error, exc, _OBSERVATION_FAILED, inp.thread_id)
    return shared


_REFLECTION_FAILED = "resource reflection failed for thread %r (%s); the log stays as it is"
_OBSERVATION_FAILED = "resource observation failed for thread %r (%s); continuing without observing"


def _carry_on(
    out: TurnOutcome, error: Exception, exc: Exception, message: str, thread_id: str | None
) -> None:
    """Log a failed resource cycle and keep its error (``message``: thread, error type)."""
    logger.warning(message, thread_id, type(exc).__name__)
    out.errors.append(error)


def other_threads_text(
    env: TurnEnv,
    others: Mapping[str, Sequence[BaseMessage]],
    shared: ResourceRecord,
    *,
    budget: int = OTHER_THREADS_TOKENS,
) -> str:
    """The other threads' unobserved messages, newest first, labelled, within ``budget``."""
    seen = observed_ids(shared)
    obscure = env.config.effective_obscure_thread_ids
    rows: list[tuple[str, int, str]] = []
    for tid, messages in others.items():
        label = thread_label(tid, obscure=obscure)
        for m in messages:
            if m.id in seen.get(tid, set()) or m.type not in ("human", "ai") or not m.text:
                continue
            when = message_time(m)
            role = "User" if m.type == "human" else "Assistant"
            text = " ".join(m.text.split())[:_LINE_CHARS]
            line = f'- [thread "{label}"] {role}: {text}'
            rows.append((iso(when) if when else "", len(rows), line))
    lines: list[str] = []
    used = 0
    for _, _, line in sorted(rows, reverse=True):  # newest first; ties: later first
        cost = env.counter.count_text(line)
        if used + cost > budget:
            break
        lines.append(line)
        used += cost
    if not lines:
        return ""
    head = "Recent messages in this user's other conversations, not observed yet (newest first):"
    return head + "\n" + "\n".join(lines)


def shared_view_plan(env: TurnEnv, record: OMRecord) -> ResourcePlan[OMRecord]:
    """``record`` with the resource's log and other threads' messages as stored now.

    For reads between steps (``status``, ``get_context``): another thread may have observed
    since this thread's last step. Records of thread scope are returned as they are.
    """
    resource_id = record["resource_id"]
    if env.config.scope != "resource" or not resource_id:
        return record
    shared, windows = yield from load_resource_plan(resource_id)
    others = {t: w for t, w in windows.items() if t != record["thread_id"]}
    view = _view(env, record, shared, others, env.now())
    view["last_activity_at"] = record["last_activity_at"]
    return (yield from _titled(env, view))


def _titled(env: TurnEnv, view: OMRecord) -> ResourcePlan[OMRecord]:
    """``view`` with its thread's pinned title, when titles are on.

    Without a pin the view shows the title the Observer proposed for the thread.
    """
    if not env.config.observation.thread_title:
        return view
    pinned = yield from pinned_title_plan(view["thread_id"])
    return with_pin(view, pinned)


def shown_cap(env: TurnEnv) -> int | None:
    """The most tokens of the shared log and recent messages shown: ``reflection.block_after``.

    ``None`` while fractional thresholds cannot be resolved (no agent model known yet).
    """
    try:
        return env.config.reflection.block_after_tokens
    except OMConfigError:
        return None


def hidden_note(lines: int) -> str:
    """The line shown where older observations were left out of the memory context."""
    return f"[{lines} older observation lines are not shown while the log is condensed]"


def _shown_log(env: TurnEnv, shared: ResourceRecord, head: str, budget: int | None) -> str:
    """The shared log's group text: ``head``, then the log within ``budget`` tokens."""
    count = env.counter.count_text
    whole = head + "\n\n" + log_text(shared["sections"])
    if budget is None or count(whole) <= budget:
        return whole
    # Room for the head and the note; the note's count is an upper bound (most lines).
    lines = sum(len(s["lines"]) for s in shared["sections"])
    room = budget - count(head + "\n\n" + hidden_note(lines) + "\n\n")
    log, hidden = bounded_log(shared["sections"], max(room, 0), count)
    return head + "\n\n" + hidden_note(hidden) + ("\n\n" + log if log else "")


def _view(
    env: TurnEnv,
    record: OMRecord,
    shared: ResourceRecord,
    others: Mapping[str, Sequence[BaseMessage]],
    now: datetime,
    *,
    actor_model: str | None = None,
) -> OMRecord:
    """``record`` showing the shared log and the other threads' recent messages.

    What it shows of them stays within the reflection's ``block_after`` tokens, as in thread
    scope: the log only grows past it while its reflection keeps failing, and then its newest
    part is shown, with a note for the rest (the stored log keeps everything).
    """
    thread_id = record["thread_id"]
    label = thread_label(thread_id, obscure=env.config.effective_obscure_thread_ids)
    view: dict[str, Any] = dict(record)
    cap = shown_cap(env)
    recent = other_threads_text(
        env,
        others,
        shared,
        budget=OTHER_THREADS_TOKENS if cap is None else min(OTHER_THREADS_TOKENS, cap // 2),
    )
    recent_tokens = env.counter.count_text(recent) if recent else 0
    groups = []
    tokens = 0
    if shared["sections"]:
        head = f'Shared across this user\'s threads; the current thread is "{label}".'
        tokens = env.counter.count_text(head + "\n\n" + log_text(shared["sections"]))
        text = _shown_log(env, shared, head, None if cap is None else cap - recent_tokens)
        group_id = stable_id(shared["resource_id"], shared["version"])
        groups.append(
            make_group(
                text=text,
                tokens=env.counter.count_text(text),
                message_ids=[],
                observed_at=iso(now),
                group_id=group_id,
            )
        )
    if recent:
        groups.append(
            make_group(
                text=recent,
                tokens=recent_tokens,
                message_ids=[],
                observed_at=iso(now),
                group_id=stable_id("recent", shared["resource_id"], thread_id),
            )
        )
    view[OTHERS_TOKENS_KEY] = _others_tokens(env, shared, others, thread_id)
    view["groups"] = groups
    view["observation_tokens"] = tokens
    view["generation"] = shared["generation"]
    view["hints"] = dict(shared["hints"])
    view["extracted"] = dict(shared["extracted"])  # the resource's values
    title = shared["titles"].get(thread_id) if env.config.observation.thread_title else None
    if title:
        view["title"] = title
    view["last_activity_at"] = iso(now)
    if actor_model:
        view["last_actor_model"] = actor_model
    return view  # type: ignore[return-value]
