"""Damping failed observation cycles across turns (backoff kept in the thread's record).

After a failed synchronous observation the next turns do not call the Observer again at once:
:func:`backoff_gate` answers ``wait`` (skip quietly, the window keeps its messages and grows)
until the delay of :mod:`~langchain_om._core.backoff` has passed, honouring a provider's
``Retry-After``. Once the window reaches ``block_after`` during the delay, it answers ``fail``
and the turn applies ``failure_policy`` without a model call. A success clears the state.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

from langchain_om._core.backoff import (
    BackoffDecision,
    BackoffState,
    decide_attempt,
    parse_retry_after,
    record_failure,
)
from langchain_om._core.types import OMRecord

BACKOFF_KEY = "observation_backoff"
"""Record key of the thread's observation backoff state."""


def backoff_state(record: Mapping[str, Any]) -> BackoffState | None:
    """The record's observation backoff state, if any."""
    state = record.get(BACKOFF_KEY)
    return cast(BackoffState, state) if isinstance(state, Mapping) and state else None


def backoff_gate(
    record: Mapping[str, Any], *, now: datetime, tokens: int, block_after: int
) -> BackoffDecision:
    """Whether a turn may attempt observation now (see the module docstring)."""
    return decide_attempt(backoff_state(record), now=now, tokens=tokens, block_after=block_after)


def retry_after_of(exc: BaseException, *, now: datetime) -> float | None:
    """The ``Retry-After`` of the provider error behind ``exc`` (its cause chain), in seconds."""
    current: BaseException | None = exc
    for _ in range(8):
        if current is None:
            return None
        hint = getattr(current, "retry_after", None)
        if isinstance(hint, int | float):
            return max(0.0, float(hint))
        headers = getattr(getattr(current, "response", None), "headers", None)
        if isinstance(headers, Mapping):
            value = headers.get("retry-after") or headers.get("Retry-After")
            if value is not None:
                return parse_retry_after(str(value), now=now)
        current = current.__cause__ or current.__context__
    return None


def with_failure(record: OMRecord, exc: BaseException, *, now: datetime, reason: str) -> OMRecord:
    """``record`` with one more failed observation noted."""
    state = record_failure(
        backoff_state(record), now=now, reason=reason, retry_after=retry_after_of(exc, now=now)
    )
    out = dict(record)
    out[BACKOFF_KEY] = state
    return cast(OMRecord, out)


def with_success(record: OMRecord) -> OMRecord:
    """``record`` without backoff state (a cycle succeeded)."""
    if BACKOFF_KEY not in record:
        return record
    out = dict(record)
    out.pop(BACKOFF_KEY, None)
    return cast(OMRecord, out)


def with_backoff(record: OMRecord, state: Mapping[str, Any] | None) -> OMRecord:
    """``record`` carrying ``state`` as its backoff (unchanged when ``state`` is empty)."""
    if not state:
        return record
    out = dict(record)
    out[BACKOFF_KEY] = dict(state)
    return cast(OMRecord, out)
