"""The standalone plans: a thread's record and window kept in the store, with no graph.

The engine's ``add_messages``, ``observe``, ``reflect`` and ``status`` (and their async twins)
run these: :func:`load_plan` reads a thread's state (adding new messages), :func:`step_plan`
runs a turn on it and saves the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from langchain_core.messages import BaseMessage

from langchain_om._core.dates import iso
from langchain_om._core.message_ids import stored_with_ids, with_ids
from langchain_om._core.record import check_owner, coerce_record, new_record
from langchain_om._core.types import OMRecord
from langchain_om._plans.effects import Plan, StoreBatch
from langchain_om._plans.storage import (
    migrate_legacy_plan,
    state_get_op,
    state_put_op,
    title_pin_get_op,
    unpack_state,
)
from langchain_om._plans.titles import pinned_title, with_pin
from langchain_om._plans.turn import idle_plan, turn_plan
from langchain_om._plans.types import (
    BackgroundJob,
    Trigger,
    TurnEnv,
    TurnInput,
    require_thread_id,
)
from langchain_om.events import SpendStatus, StatusEvent


@dataclass(frozen=True)
class StandaloneRequest:
    """One standalone call: which thread, what to add, what to force."""

    thread_id: str
    resource_id: str | None
    messages: Sequence[BaseMessage] | None = None
    force_observe: bool = False
    force_reflect: bool = False
    trigger: Trigger = "manual"
    actor_model: str | None = None
    """``provider/model`` of the agent's model, when the caller knows it."""
    over_budget: bool = False
    """Run an explicit cycle even while the spend budget is used up."""


@dataclass
class ThreadState:
    """A thread's stored state after a standalone call, and the jobs it asks for."""

    record: OMRecord
    window: list[BaseMessage]
    status: StatusEvent | None = None
    jobs: list[BackgroundJob] = field(default_factory=list)
    title_pinned: bool = False
    """The record's title is the one the application pinned (``rename_thread``)."""
    spend: SpendStatus | None = None
    """The spend budget read for a status without a step (``status`` and ``inspect``)."""


def merge_messages(window: list[BaseMessage], messages: Sequence[BaseMessage]) -> None:
    """Add ``messages`` to ``window`` the way LangGraph's ``add_messages`` reducer does.

    A message whose id is already in the window replaces it in place (an edit); any other
    message is appended, including a re-sent id that was observed already: it is observed
    again, as the edit it is, and the archive keeps both versions in order. A message without
    an id is appended as a copy with a fresh one (as the reducer does, without changing the
    caller's object): the stored window keeps it, so buffered work covering it is found again.
    """
    where = {m.id: i for i, m in enumerate(window) if m.id}
    for message in with_ids(messages):
        key = str(message.id)  # every message has one now
        index = where.get(key)
        if index is None:
            where[key] = len(window)
            window.append(message)
        else:
            window[index] = message


def load_plan(
    env: TurnEnv,
    thread_id: str,
    resource_id: str | None = None,
    messages: Sequence[BaseMessage] | None = None,
) -> Plan[ThreadState]:
    """Read a thread's record and window, add ``messages`` (not saved), default the record.

    Raises:
        OMUsageError: ``resource_id`` is given and the thread belongs to another resource.
    """
    yield from migrate_legacy_plan(thread_id, resource_id)
    item, pin = yield StoreBatch([state_get_op(thread_id), title_pin_get_op(thread_id)])
    record_data, stored = unpack_state(item)
    record = coerce_record(record_data)
    first_seq = record["observed_message_count"] if record is not None else 0
    window = stored_with_ids(stored, thread_id=thread_id, first_seq=first_seq)
    if record is not None:
        check_owner(record["resource_id"], thread_id=thread_id, resource_id=resource_id)
    if messages:
        merge_messages(window, messages)
    if record is None:
        record = new_record(
            thread_id=thread_id,
            resource_id=resource_id,
            scope=env.config.scope,
            timezone=env.timezone,
            now=iso(env.now()),
        )
    pinned = pinned_title(pin)
    return ThreadState(with_pin(record, pinned), window, title_pinned=pinned is not None)


def step_plan(env: TurnEnv, req: StandaloneRequest) -> Plan[ThreadState]:
    """Run a turn on the stored thread and save it (with ``buffer_on_idle``, buffer the rest).

    When the turn fails, the messages the caller added are saved before the error propagates.
    """
    state = yield from load_plan(env, req.thread_id, req.resource_id, req.messages)
    inp = TurnInput(
        thread_id=require_thread_id(req.thread_id),
        resource_id=req.resource_id or state.record["resource_id"],
        record=state.record,
        window=list(state.window),
        force_observe=req.force_observe,
        force_reflect=req.force_reflect,
        trigger=req.trigger,
        actor_model=req.actor_model,
        over_budget=req.over_budget,
    )
    try:
        outcome = yield from turn_plan(env, inp)
    except Exception:
        if req.messages:  # keep what the caller gave us, then report the failure
            yield StoreBatch([state_put_op(req.thread_id, state.record, state.window)])
        raise
    done = ThreadState(
        outcome.record,
        outcome.window,
        outcome.status,
        outcome.jobs,
        title_pinned=state.title_pinned,
    )
    if env.config.observation.buffer_on_idle and req.trigger == "turn-sync":
        idle = yield from idle_plan(env, replace(inp, record=done.record, window=done.window))
        started = {j.key for j in done.jobs}
        done.jobs = done.jobs + [j for j in idle.jobs if j.key not in started]
    if not env.config.read_only:
        yield StoreBatch([state_put_op(req.thread_id, done.record, done.window)])
    return done
