"""Failures are damped across turns: exponential backoff honouring Retry-After."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langchain_om._core.backoff import (
    BASE_DELAY_SECONDS,
    MAX_DELAY_SECONDS,
    MAX_RETRY_AFTER_SECONDS,
    backoff_delay,
    decide_attempt,
    next_attempt_at,
    parse_retry_after,
    record_failure,
    record_success,
)

T0 = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("failures", "retry_after", "delay"),
    [
        (0, None, 0.0),
        (0, 60.0, 0.0),
        (1, None, 5.0),
        (2, None, 10.0),
        (3, None, 20.0),
        (8, None, 600.0),
        (200, None, 600.0),
        (1, 60.0, 60.0),
        (5, 60.0, 80.0),
        (1, 0.0, 5.0),
        (1, 10**7, MAX_RETRY_AFTER_SECONDS),
    ],
)
def test_backoff_delay(failures: int, retry_after: float | None, delay: float) -> None:
    assert backoff_delay(failures, retry_after) == delay


@given(st.integers(1, 100), st.one_of(st.none(), st.floats(0, 10**6)))
def test_delay_grows_and_is_bounded(failures: int, retry_after: float | None) -> None:
    delay = backoff_delay(failures, retry_after)
    assert BASE_DELAY_SECONDS <= delay <= max(MAX_DELAY_SECONDS, MAX_RETRY_AFTER_SECONDS)
    assert backoff_delay(failures + 1, retry_after) >= delay
    if retry_after is not None:
        assert delay >= min(retry_after, MAX_RETRY_AFTER_SECONDS)


def test_a_429_storm_is_damped_across_turns() -> None:
    """Turns every 10 s; the provider says Retry-After: 60 on every attempt."""
    state = None
    attempts: list[int] = []
    for second in range(0, 600, 10):
        now = T0 + timedelta(seconds=second)
        decision = decide_attempt(state, now=now, tokens=1_000, block_after=10_000)
        if decision.action == "attempt":
            attempts.append(second)
            state = record_failure(state, now=now, reason="model-error", retry_after=60)
        else:
            assert decision.action == "wait" and decision.reason == "model-error"
            assert 0 < decision.wait_seconds <= 320
    # 60 turns, but the Observer is called only when the backoff allows it
    assert attempts == [0, 60, 120, 180, 240, 320, 480]


def test_when_the_window_reaches_block_after_the_policy_applies() -> None:
    state = record_failure(None, now=T0, reason="empty")
    soon = T0 + timedelta(seconds=1)
    assert decide_attempt(state, now=soon, tokens=9_999, block_after=10_000).action == "wait"
    fail = decide_attempt(state, now=soon, tokens=10_000, block_after=10_000)
    assert fail.action == "fail" and fail.reason == "empty"
    later = T0 + timedelta(seconds=BASE_DELAY_SECONDS)
    assert decide_attempt(state, now=later, tokens=50_000, block_after=10_000).action == "attempt"


def test_success_resets_the_backoff() -> None:
    state = record_failure(record_failure(None, now=T0, reason="x"), now=T0, reason="y")
    assert state["failures"] == 2 and state["reason"] == "y"
    assert next_attempt_at(state) == T0 + timedelta(seconds=10)
    ok = record_success()
    assert next_attempt_at(ok) is None
    assert decide_attempt(ok, now=T0, tokens=0, block_after=1) == decide_attempt(
        None, now=T0, tokens=0, block_after=1
    )
    assert decide_attempt(None, now=T0, tokens=0, block_after=1).action == "attempt"


def test_naive_times_are_utc() -> None:
    state = record_failure(None, now=T0.replace(tzinfo=None), reason="x")
    assert next_attempt_at(state) == T0 + timedelta(seconds=5)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        (30, 30.0),
        (1.5, 1.5),
        ("120", 120.0),
        (" 7 ", 7.0),
        ("-3", 0.0),
        ("Mon, 02 Nov 2026 12:01:00 GMT", 60.0),
        ("Mon, 02 Nov 2026 11:00:00 GMT", 0.0),
        ("soon", None),
        ("", None),
    ],
)
def test_parse_retry_after(value: str | float | None, seconds: float | None) -> None:
    assert parse_retry_after(value, now=T0) == seconds
