"""Time-gap reminders (``temporal_markers``): a note before a user message after a long pause."""

from __future__ import annotations

from datetime import datetime, timedelta

from langchain_core.messages import HumanMessage

from langchain_om._core.dates import format_date, format_time, to_zone
from langchain_om._core.types import OM_META_KEY

MIN_GAP = timedelta(minutes=10)
"""Pauses shorter than this get no reminder."""
GAP_KIND = "temporal_gap"

_BUCKETS: tuple[tuple[timedelta, str], ...] = (
    (timedelta(weeks=2), "weeks"),
    (timedelta(weeks=1), "1 week"),
    (timedelta(days=2), "days"),
    (timedelta(days=1), "1 day"),
    (timedelta(hours=12), "12 hours"),
    (timedelta(hours=6), "6 hours"),
    (timedelta(hours=3), "3 hours"),
    (timedelta(hours=2), "2 hours"),
    (timedelta(hours=1), "1 hour"),
    (timedelta(minutes=30), "30 minutes"),
    (timedelta(minutes=15), "15 minutes"),
    (timedelta(minutes=10), "10 minutes"),
)


def gap_text(gap: timedelta) -> str | None:
    """``"3 hours later"``-style label (rounded down to a bucket), or ``None`` under 10 min."""
    if gap < MIN_GAP:
        return None
    for size, label in _BUCKETS:
        if gap >= size:
            if label == "weeks":
                return f"{gap.days // 7} weeks later"
            if label == "days":
                return f"{gap.days} days later"
            return f"over {label} later" if gap > size else f"{label} later"
    return None


def gap_reminder(
    previous: datetime, current: datetime, *, timezone: str, precedes: str | None
) -> HumanMessage | None:
    """The reminder to insert before a user message sent at ``current``, or ``None``.

    Its time is ``current`` minus 1 ms so it sorts right before the message it precedes.
    """
    label = gap_text(current - previous)
    if label is None:
        return None
    local = to_zone(current, timezone)
    when = f"{format_date(local)}, {format_time(local)}"
    text = (
        f'<system-reminder type="temporal-gap">{label} — the conversation resumes on {when}'
        "</system-reminder>"
    )
    at = current - timedelta(milliseconds=1)
    meta = {
        "kind": GAP_KIND,
        "ts": at.isoformat(),
        "gap_text": label,
        "gap_ms": int((current - previous).total_seconds() * 1000),
        "precedes": precedes,
    }
    return HumanMessage(
        content=text,
        id=f"__temporal_gap_{precedes or at.timestamp()}",
        response_metadata={OM_META_KEY: meta},
    )
