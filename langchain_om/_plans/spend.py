"""Spend control as plans: the budget of memory's own model calls, and the turn cadence.

**Spend.** A step with a ``spend`` limit opens a :class:`SpendGuard`: it reads the ledger of
the thread or resource (:mod:`langchain_om._core.spend`) and meters every model call the
step makes (:func:`metered` sees each ``ModelCall`` and extractor call go by, in gathers
too). Before a cycle starts, :func:`may_start` checks the ledger plus what the step spent so
far; a cycle that would start while a limit is used up does not start: a
``data-om-spend-limit`` event says so (a WARNING once per episode), and the messages stay in
the window. When the step ends, what it spent is charged to the ledger in the store (a fresh
read, then a write), and every background job it asked for is charged when it finishes. The
ledger lives in the store, not in the record: a budget counts money spent, which a checkpoint
fork or time travel does not give back, and background work (which never writes the record)
is charged to the same place.

**Cadence.** With ``cadence`` set, a step that brings a new user message counts a turn in the
thread's record (``turns``); observation (synchronous or buffered) starts only on the turns
``cadence.due`` allows.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, cast

from langchain_core.messages import HumanMessage

from langchain_om._core.dates import iso
from langchain_om._core.redact import redacted_logger
from langchain_om._core.schemas import StructuredRequest
from langchain_om._core.spend import (
    SpendCheck,
    SpendLedger,
    charge,
    coerce_ledger,
    mark_warned,
    spend_check,
)
from langchain_om._core.types import OMRecord
from langchain_om._plans.cycles import _usage
from langchain_om._plans.effects import Call, ModelCall, Plan, StoreBatch, reply_text
from langchain_om._plans.resource import Gather
from langchain_om._plans.storage import spend_get_op, spend_put_op
from langchain_om._plans.types import BackgroundJob, TurnEnv, TurnInput, TurnOutcome, emit_event
from langchain_om.errors import OMUsageError, SpendLimitError
from langchain_om.events import BudgetUsage, SpendLimitEvent, SpendStatus

logger = redacted_logger("langchain_om")

__all__ = [
    "TURNS_KEY",
    "Meter",
    "SpendGuard",
    "cadence_due",
    "charged_job",
    "count_turn",
    "guarded",
    "may_start",
    "metered",
    "spend_status_plan",
]

Per = Literal["thread", "resource"]
TURNS_KEY = "turns"
"""Record key (with ``cadence``): the number of turns (new user messages) the thread has had."""


# -- metering -------------------------------------------------------------------------------


@dataclass
class Meter:
    """What the model calls of one step (or one background job) used."""

    count_text: Callable[[str], int]
    tokens: int = 0
    cycle_ids: set[str] = field(default_factory=set)
    anonymous: int = 0
    """Calls that name no cycle (each counts as one)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def cycles(self) -> int:
        """Cycles that made at least one model call."""
        return len(self.cycle_ids) + self.anonymous

    @property
    def spent(self) -> bool:
        """Whether anything was spent."""
        return self.tokens > 0 or self.cycles > 0

    def _add(self, tokens: int, cycle_id: str | None) -> None:
        with self._lock:
            self.tokens += max(0, tokens)
            if cycle_id:
                self.cycle_ids.add(cycle_id)
            else:
                self.anonymous += 1

    def model_call(self, effect: ModelCall, result: Any) -> None:
        """Count a call of the Observer or Reflector: reported input + output, else estimated."""
        usage, _ = _usage(result)
        total = 0
        if usage:
            total = int(usage.get("total_tokens") or 0) or int(
                (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
            )
        if total <= 0:
            text = reply_text(result)
            total = effect.input_tokens + (self.count_text(text) if text else 0)
        self._add(total, effect.cycle_id)

    def failed_call(self, cycle_id: str | None) -> None:
        """A call that raised: its cycle counts (the provider's bill, if any, is unknown)."""
        self._add(0, cycle_id)

    def structured(self, request: StructuredRequest, reply: Any) -> None:
        """Count a schema extractor's call: its input and the value's estimated size."""
        text = json.dumps(reply, default=str, ensure_ascii=False) if reply is not None else ""
        self._add(request.input_tokens + (self.count_text(text) if text else 0), request.cycle_id)


def _structured_request(effect: Any) -> StructuredRequest | None:
    """The request of an extractor's structured-output call (a ``Call`` with one)."""
    if isinstance(effect, Call) and effect.args and isinstance(effect.args[0], StructuredRequest):
        return effect.args[0]
    return None


def metered(plan: Generator[Any, Any, Any], meter: Meter) -> Generator[Any, Any, Any]:
    """``plan``, with every model call it makes (gathered sub-plans too) added to ``meter``."""
    send: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                effect = plan.throw(error) if error is not None else plan.send(send)
            except StopIteration as stop:
                return stop.value
            if isinstance(effect, Gather):
                effect = Gather([metered(p, meter) for p in effect.plans])
            request = _structured_request(effect)
            send, error = None, None
            try:
                send = yield effect
            except Exception as exc:
                error = exc
                if isinstance(effect, ModelCall):
                    meter.failed_call(effect.cycle_id)
                elif request is not None:
                    meter.failed_call(request.cycle_id)
                continue
            if isinstance(effect, ModelCall):
                meter.model_call(effect, send)
            elif request is not None:
                meter.structured(request, send)
    finally:
        plan.close()


# -- the ledger -----------------------------------------------------------------------------


def _epoch(now: datetime) -> float:
    return now.timestamp()


def _iso_at(seconds: float | None) -> str | None:
    return iso(datetime.fromtimestamp(seconds, UTC)) if seconds is not None else None


def _update_ledger_plan(
    per: Per, owner: str, change: Callable[[SpendLedger], SpendLedger]
) -> Plan[SpendLedger]:
    """Read the ledger afresh, apply ``change``, store it."""
    (item,) = yield StoreBatch([spend_get_op(per, owner)])
    ledger = change(coerce_ledger(item.value if item is not None else None, per))
    yield StoreBatch([spend_put_op(per, owner, ledger)])
    return ledger


def _charge_plan(env: TurnEnv, per: Per, owner: str, meter: Meter) -> Plan[None]:
    """Charge what ``meter`` counted to the ledger (nothing when nothing was spent)."""
    if not meter.spent:
        return
    now = _epoch(env.now())
    limits = env.config.spend.limits
    yield from _update_ledger_plan(
        per,
        owner,
        lambda ledger: charge(
            ledger, now=now, tokens=meter.tokens, cycles=meter.cycles, limits=limits
        ),
    )


def _charged(
    env: TurnEnv, per: Per, owner: str, meter: Meter, plan: Generator[Any, Any, Any]
) -> Generator[Any, Any, Any]:
    """Run ``plan`` metered, then charge what it spent (also when it raises)."""
    try:
        result = yield from metered(plan, meter)
    except Exception:
        try:
            yield from _charge_plan(env, per, owner, meter)
        except Exception:
            logger.warning("langchain-om could not store the spend of a failed step")
        raise
    yield from _charge_plan(env, per, owner, meter)
    return result


def charged_job(env: TurnEnv, per: Per, owner: str, job: BackgroundJob) -> BackgroundJob:
    """``job``, charging its model calls to the ledger when it finishes."""
    meter = Meter(env.counter.count_text)
    return BackgroundJob(job.key, _charged(env, per, owner, meter, job.plan))


# -- the guard of a step ----------------------------------------------------------------------


@dataclass
class SpendGuard:
    """A step's budget: the ledger as the step found it and what the step spends."""

    per: Per
    owner: str
    limits: dict[str, int]
    ledger: SpendLedger
    meter: Meter
    warned: bool = False
    """This step logged (or found logged) the WARNING of the episode."""

    def check(self, now: datetime) -> SpendCheck:
        """The budget now: the ledger plus this step's own calls."""
        return spend_check(
            self.ledger,
            self.limits,
            now=_epoch(now),
            extra_tokens=self.meter.tokens,
            extra_cycles=self.meter.cycles,
        )

    def status(self, now: datetime) -> SpendStatus:
        """The ``spend`` part of ``data-om-status``."""
        return spend_status(self.per, self.check(now))


def spend_status(per: Per, check: SpendCheck) -> SpendStatus:
    """A :class:`SpendStatus` of ``check``."""
    return SpendStatus(
        per=per,
        tokens_last_hour=check.tokens_last_hour,
        tokens_last_day=check.tokens_last_day,
        cycles_last_hour=check.cycles_last_hour,
        cycles_last_day=check.cycles_last_day,
        budgets=[
            BudgetUsage(name=u.name, used=u.used, limit=u.limit, remaining=u.remaining)
            for u in check.limits
        ],
        exhausted=check.exhausted.name if check.exhausted else None,
        resumes_at=_iso_at(check.resumes_at),
    )


def _owner(env: TurnEnv, inp: TurnInput) -> tuple[Per, str] | None:
    """Whose budget a step spends: ``(per, id)``.

    ``None`` when resource scope lacks an id (the resource step raises its own error then).
    """
    per = env.config.spend_per
    if per == "thread":
        return per, inp.thread_id
    owner = inp.record["resource_id"] if inp.record is not None else None
    resource_id = inp.resource_id or owner
    if resource_id:
        return per, resource_id
    if env.config.scope == "resource":
        return None
    raise OMUsageError(
        "spend.per='resource' budgets each resource (user) across its threads, so every step "
        "needs a resource id: pass resource_id=... (standalone and history adapter) or "
        "config={'configurable': {'thread_id': ..., 'resource_id': ...}} (agents and graphs), "
        "or use spend.per='thread'."
    )


def _open_plan(env: TurnEnv, inp: TurnInput) -> Plan[SpendGuard | None]:
    """The step's guard (``None`` when nothing is budgeted)."""
    if not env.config.spend_watched:
        return None
    found = _owner(env, inp)
    if found is None:
        return None
    per, owner = found
    (item,) = yield StoreBatch([spend_get_op(per, owner)])
    ledger = coerce_ledger(item.value if item is not None else None, per)
    return SpendGuard(per, owner, env.config.spend.limits, ledger, Meter(env.counter.count_text))


def guarded(
    env: TurnEnv, inp: TurnInput, body: Callable[[TurnInput], Plan[TurnOutcome]]
) -> Plan[TurnOutcome]:
    """Run the step ``body`` under its spend guard; charge it and the jobs it starts."""
    guard = yield from _open_plan(env, inp)
    if guard is None:
        return (yield from body(inp))
    out: TurnOutcome = yield from _charged(
        env, guard.per, guard.owner, guard.meter, body(replace(inp, spend=guard))
    )
    out.jobs = [charged_job(env, guard.per, guard.owner, job) for job in out.jobs]
    return out


def may_start(
    env: TurnEnv,
    inp: TurnInput,
    operation: Literal["observation", "reflection"],
    *,
    background: bool = False,
    explicit: bool = False,
) -> Plan[bool]:
    """Whether a cycle may start now under the step's budget.

    When it may not: a ``data-om-spend-limit`` event, a WARNING once per episode (for every
    process sharing the store), and ``False``; an ``explicit`` cycle (``observe()``,
    ``reflect()``) raises instead, unless the caller passed ``over_budget=True``.

    Raises:
        SpendLimitError: ``explicit`` and the budget is used up.
    """
    guard = cast("SpendGuard | None", inp.spend)
    if guard is None or (explicit and inp.over_budget):
        return True
    now = env.now()
    check = guard.check(now)
    spent = check.exhausted
    if spent is None:
        return True
    resumes = _iso_at(check.resumes_at)
    emit_event(
        env,
        inp,
        SpendLimitEvent(
            thread_id=inp.thread_id,
            resource_id=inp.resource_id,
            per=guard.per,
            operation_type=operation,
            background=background,
            budget=spent.name,
            used=spent.used,
            limit=spent.limit,
            resumes_at=resumes,
            timestamp=iso(now),
        ),
    )
    yield from _warn_once(guard, check, now)
    if explicit:
        raise SpendLimitError(
            f"The spend budget spend.{spent.name} of {guard.per} {guard.owner!r} is used up "
            f"({spent.used:,} of {spent.limit:,} in the rolling window), so the {operation} "
            f"did not start; nothing was removed. It has room again from {resumes}. Pass "
            "over_budget=True to run it anyway (its calls still count), or raise the limit.",
            operation=operation,
            thread_id=inp.thread_id,
            budget=f"spend.{spent.name}",
            used=spent.used,
            limit=spent.limit,
            resumes_at=resumes,
        )
    return False


def _warn_once(guard: SpendGuard, check: SpendCheck, now: datetime) -> Plan[None]:
    """Log the episode's WARNING unless this step or an earlier one (any process) did."""
    spent = check.exhausted
    warned_until = guard.ledger["warned_until"]
    if guard.warned or spent is None or (warned_until is not None and _epoch(now) < warned_until):
        guard.warned = True
        return
    guard.warned = True
    logger.warning(
        "langchain-om spend budget spend.%s of %s %r is used up (%d of %d): memory makes no "
        "model call until %s; unobserved messages stay in the window",
        spent.name,
        guard.per,
        guard.owner,
        spent.used,
        spent.limit,
        _iso_at(check.resumes_at),
    )
    until = check.resumes_at if check.resumes_at is not None else _epoch(now)
    guard.ledger = yield from _update_ledger_plan(
        guard.per, guard.owner, lambda ledger: mark_warned(ledger, until)
    )


def spend_status_plan(env: TurnEnv, record: OMRecord) -> Plan[SpendStatus | None]:
    """The spend of ``record``'s thread or resource, read from its ledger (no model call).

    With a ``spend`` limit, the budget memory enforces; without one (``inspect``, a memory
    opened with other options), the ledger of the thread, else of its resource, against the
    limits in effect when it was last charged. ``None`` when there is nothing to show.
    """
    if not env.config.enabled:
        return None
    owners: list[tuple[Per, str]] = []
    resource_id = record["resource_id"]
    if env.config.spend.active:
        per = env.config.spend_per
        owner = record["thread_id"] if per == "thread" else resource_id
        if owner:
            owners.append((per, owner))
    else:
        owners.append(("thread", record["thread_id"]))
        if resource_id:
            owners.append(("resource", resource_id))
    if not owners:
        return None
    items = yield StoreBatch([spend_get_op(per, owner) for per, owner in owners])
    for (per, _), item in zip(owners, items, strict=True):
        if item is None and not env.config.spend.active:
            continue
        ledger = coerce_ledger(item.value if item is not None else None, per)
        limits = env.config.spend.limits or ledger["limits"]
        return spend_status(per, spend_check(ledger, limits, now=_epoch(env.now())))
    return None


# -- cadence --------------------------------------------------------------------------------


def count_turn(env: TurnEnv, record: OMRecord, stamped: list[Any]) -> OMRecord:
    """``record`` with one more turn when ``stamped`` (the step's new messages) has a user's.

    Only with ``cadence`` set (the record keeps no counter otherwise).
    """
    if not env.config.cadence.active or not any(isinstance(m, HumanMessage) for m in stamped):
        return record
    out = dict(record)
    out[TURNS_KEY] = int(record.get(TURNS_KEY) or 0) + 1  # type: ignore[call-overload]
    return out  # type: ignore[return-value]


def cadence_due(env: TurnEnv, record: OMRecord, *, idle: bool = False) -> bool:
    """Whether this turn may start an observation (``idle``: at turn end, ``end_turn``)."""
    cadence = env.config.cadence
    if not cadence.active:
        return True
    if cadence.session_end:
        return idle
    return cadence.due(int(record.get(TURNS_KEY) or 0))  # type: ignore[call-overload]
