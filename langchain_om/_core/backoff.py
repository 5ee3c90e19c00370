"""Damping failures across turns: when the next observation attempt may run.

After a failed cycle the next turns do not call the Observer again right away (a rate-limit
storm would otherwise cost several calls and minutes of blocking per turn). They wait an
exponentially growing delay, at least as long as the provider's ``Retry-After``, while the
window keeps its messages and may grow. Only when the window reaches ``block_after`` is the
``failure_policy`` applied without a new attempt. A success resets everything.

The state is JSON-native so it can live in the OM record.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Literal, TypedDict

__all__ = [
    "BASE_DELAY_SECONDS",
    "MAX_DELAY_SECONDS",
    "MAX_RETRY_AFTER_SECONDS",
    "BackoffDecision",
    "BackoffState",
    "backoff_delay",
    "decide_attempt",
    "next_attempt_at",
    "parse_retry_after",
    "record_failure",
    "record_success",
]

BASE_DELAY_SECONDS = 5.0
"""Delay after the first failure; it doubles with every further failure."""

MAX_DELAY_SECONDS = 600.0
"""Longest exponential delay."""

MAX_RETRY_AFTER_SECONDS = 3_600.0
"""A ``Retry-After`` hint is honoured up to this long (longer hints are taken as this)."""


class BackoffState(TypedDict):
    """Consecutive failed cycles of one kind (observation or reflection) on a thread."""

    failures: int
    """Failed cycles since the last success (0 = no backoff)."""
    last_failure_at: str | None
    """ISO time of the last failure."""
    retry_after: float | None
    """The provider's ``Retry-After`` of the last failure, in seconds."""
    reason: str | None
    """Reason code of the last failure (``model-error``, ``empty``, …)."""


def record_success() -> BackoffState:
    """The state after a successful cycle: no backoff."""
    return {"failures": 0, "last_failure_at": None, "retry_after": None, "reason": None}


def record_failure(
    state: BackoffState | None, *, now: datetime, reason: str, retry_after: float | None = None
) -> BackoffState:
    """The state after one more failed cycle."""
    failures = (state["failures"] if state else 0) + 1
    hint = None if retry_after is None else max(0.0, float(retry_after))
    return {
        "failures": failures,
        "last_failure_at": _aware(now).isoformat(),
        "retry_after": hint,
        "reason": reason,
    }


def backoff_delay(
    failures: int,
    retry_after: float | None = None,
    *,
    base: float = BASE_DELAY_SECONDS,
    cap: float = MAX_DELAY_SECONDS,
) -> float:
    """Seconds to wait after ``failures`` consecutive failures.

    ``base × 2^(failures-1)`` capped at ``cap``, and never less than ``retry_after`` (itself
    capped at :data:`MAX_RETRY_AFTER_SECONDS`). No failures, no delay.
    """
    if failures <= 0:
        return 0.0
    delay = min(cap, base * 2.0 ** min(failures - 1, 60))
    if retry_after is not None and retry_after > 0:
        delay = max(delay, min(float(retry_after), MAX_RETRY_AFTER_SECONDS))
    return delay


def next_attempt_at(state: BackoffState | None) -> datetime | None:
    """When the next attempt may run, or ``None`` when there is no backoff."""
    if not state or state["failures"] <= 0 or not state["last_failure_at"]:
        return None
    last = _aware(datetime.fromisoformat(state["last_failure_at"]))
    return last + timedelta(seconds=backoff_delay(state["failures"], state["retry_after"]))


@dataclass(frozen=True)
class BackoffDecision:
    """Whether a turn may attempt a cycle now."""

    action: Literal["attempt", "wait", "fail"]
    """``attempt``: run the cycle. ``wait``: skip it this turn, quietly (the window keeps
    growing). ``fail``: the window reached ``block_after`` during the backoff: apply
    ``failure_policy`` now, without calling the model."""
    wait_seconds: float
    """Seconds until an attempt is allowed (0 when ``attempt``)."""
    reason: str | None
    """Reason code of the last failure."""


def decide_attempt(
    state: BackoffState | None, *, now: datetime, tokens: int, block_after: int
) -> BackoffDecision:
    """Whether a turn with ``tokens`` unobserved tokens may attempt observation now.

    Args:
        state: the backoff state (``None`` = no failure so far).
        now: the current time.
        tokens: unobserved tokens in the window.
        block_after: the window size at which waiting stops and ``failure_policy`` applies.
    """
    at = next_attempt_at(state)
    reason = state["reason"] if state else None
    if at is None:
        return BackoffDecision("attempt", 0.0, reason)
    wait = (at - _aware(now)).total_seconds()
    if wait <= 0:
        return BackoffDecision("attempt", 0.0, reason)
    if tokens < block_after:
        return BackoffDecision("wait", wait, reason)
    return BackoffDecision("fail", wait, reason)


def parse_retry_after(value: str | float | int | None, *, now: datetime) -> float | None:
    """Seconds from a ``Retry-After`` header: a number of seconds or an HTTP date.

    Returns ``None`` when the value is missing or unreadable; a date in the past gives 0.
    """
    if value is None:
        return None
    if isinstance(value, int | float):
        return max(0.0, float(value))
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, (_aware(when) - _aware(now)).total_seconds())


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
