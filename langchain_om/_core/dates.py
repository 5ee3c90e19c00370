"""Date and time helpers shared by the Observer, the Reflector and the context renderer.

Conventions:

* message times come from ``message.response_metadata["langchain_om"]["ts"]`` (ISO-8601);
* naive datetimes are UTC;
* dates are written ``Nov 30, 2026`` (English short month, no leading zero on the day) and
  times ``14:30`` (24-hour, zero-padded) everywhere, so there is never a 12h/24h ambiguity.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from langchain_core.messages import BaseMessage

from langchain_om._core.types import OM_META_KEY

__all__ = [
    "MONTHS",
    "format_date",
    "format_time",
    "iso",
    "gap_label",
    "message_time",
    "make_date",
    "month_label",
    "month_number",
    "parse_date_header",
    "parse_date_range_header",
    "relative_label",
    "stamp",
    "stamp_messages",
    "year_label",
    "to_zone",
]

MONTHS: tuple[str, ...] = (
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Oct",
    "Nov",
    "Dec",
)
_FULL_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_BY_NAME: dict[str, int] = {
    **{name.lower(): i + 1 for i, name in enumerate(MONTHS)},
    **{name: i + 1 for i, name in enumerate(_FULL_MONTHS)},
    "sept": 9,
}

# "Date: Nov 30, 2026", "Date:  November 30 2026", "Date: Sept. 3, 2026 (2 days ago)", and
# ranges "Date: Apr 1, 2025 - May 20, 2025" (also with an en dash or "to").
_ONE_DATE = r"([A-Za-z]+)\.?\s+(\d{1,2}),?\s+(\d{4})"
_HEADER_RE = re.compile(
    rf"^\s*Date:\s*{_ONE_DATE}(?:\s*(?:-|–|—|to)\s*{_ONE_DATE})?\s*(?:\([^()]*\))?\s*$",
)


def message_time(message: BaseMessage) -> datetime | None:
    """When OM first saw ``message`` (aware datetime), or ``None`` if unknown or invalid."""
    meta: Any = getattr(message, "response_metadata", None)
    if not isinstance(meta, dict):
        return None
    om = meta.get(OM_META_KEY)
    if not isinstance(om, dict):
        return None
    raw = om.get("ts")
    if not isinstance(raw, str):
        return None
    try:
        parsed = datetime.fromisoformat(raw.strip())
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def to_zone(dt: datetime, timezone: str) -> datetime:
    """``dt`` converted to the IANA zone ``timezone`` (naive = UTC; unknown zone = UTC)."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    try:
        zone: Any = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        zone = UTC
    return dt.astimezone(zone)


def format_date(dt: date) -> str:
    """``Nov 30, 2026`` (accepts a ``date`` or a ``datetime``; no zone conversion)."""
    return f"{MONTHS[dt.month - 1]} {dt.day}, {dt.year}"


def format_time(dt: datetime) -> str:
    """``14:30`` (24-hour, zero-padded; no zone conversion)."""
    return f"{dt.hour:02d}:{dt.minute:02d}"


def parse_date_header(line: str) -> date | None:
    """The date of a ``Date: Nov 30, 2026`` header line, or ``None`` if it is not one.

    Tolerates full month names, a missing comma, extra spaces and a trailing parenthetical
    such as ``(3 days ago)``. A range header (``Date: Apr 1, 2025 - May 20, 2025``) gives its
    first date; :func:`parse_date_range_header` gives both.
    """
    found = parse_date_range_header(line)
    return found[0] if found else None


def parse_date_range_header(line: str) -> tuple[date, date] | None:
    """``(first, last)`` of a ``Date:`` header line (equal for a one-day header), or ``None``."""
    if "Date:" not in line:  # most lines of a log: no pattern match needed
        return None
    match = _HEADER_RE.match(line)
    if match is None:
        return None
    first = make_date(match.group(1), match.group(2), match.group(3))
    if first is None:
        return None
    if match.group(4) is None:
        return first, first
    last = make_date(match.group(4), match.group(5), match.group(6))
    return (first, last) if last is not None and last >= first else None


def month_number(name: str) -> int | None:
    """1-12 for an English month name or abbreviation (``"Sept."`` too), else ``None``."""
    return _MONTH_BY_NAME.get(name.lower().rstrip("."))


def make_date(month: str, day: str | int, year: str | int) -> date | None:
    """The date of a month name, a day and a year, or ``None`` if there is no such day."""
    number = month_number(month)
    if number is None:
        return None
    try:
        return date(int(year), number, int(day))
    except ValueError:
        return None


def _span(days: int) -> str:
    """Human span for a positive number of days: ``3 days``, ``2 weeks``, ``1 year``."""
    if days < 7:
        return _count(days, "day")
    if days < 30:
        return _count(days // 7, "week")
    if days < 365:
        return _count(max(1, days // 30), "month")
    return _count(days // 365, "year")


def _count(count: int, unit: str) -> str:
    return f"{count} {unit}" if count == 1 else f"{count} {unit}s"


def _relative(offset: int, near: tuple[str, str, str], span: Callable[[int], str]) -> str:
    """``offset`` units back (positive) or ahead: ``near`` names 0, 1 back and 1 ahead."""
    if -1 <= offset <= 1:
        return near[offset]  # 0: now, 1: one back, -1: one ahead
    text = span(abs(offset))
    return f"{text} ago" if offset > 0 else f"in {text}"


def relative_label(d: date, today: date) -> str:
    """``today``, ``yesterday``, ``3 days ago``, ``2 weeks ago``, ``tomorrow``, ``in 2 days``…"""
    days = (_as_date(today) - _as_date(d)).days
    return _relative(days, ("today", "yesterday", "tomorrow"), _span)


def _months(months: int) -> str:
    return _count(months, "month") if months < 12 else _count(months // 12, "year")


def month_label(year: int, month: int, today: date) -> str:
    """``this month``, ``last month``, ``3 months ago``, ``next month``, ``in 2 years``…"""
    months = (today.year * 12 + today.month) - (year * 12 + month)
    return _relative(months, ("this month", "last month", "next month"), _months)


def year_label(year: int, today: date) -> str:
    """``this year``, ``last year``, ``next year``, ``3 years ago``, ``in 2 years``."""
    years = today.year - year
    return _relative(years, ("this year", "last year", "next year"), lambda n: _count(n, "year"))


def gap_label(earlier: date, later: date) -> str | None:
    """``[2 weeks later]`` when more than one day separates the dates, else ``None``."""
    days = (_as_date(later) - _as_date(earlier)).days
    if days <= 1:
        return None
    return f"[{_span(days)} later]"


def _as_date(d: date) -> date:
    # A datetime is a date, but subtracting a date from a datetime raises: normalise.
    return d.date() if isinstance(d, datetime) else d


def iso(dt: datetime) -> str:
    """``dt`` in UTC as ISO-8601 text (the form OM stores times in)."""
    return dt.astimezone(UTC).isoformat()


def stamp(dt: datetime) -> str:
    """``dt`` as a message stamp: UTC to the second, ``2026-03-01T09:00:05Z``.

    Shorter than :func:`iso` (every message of the window carries one into every checkpoint);
    :func:`message_time` reads both forms.
    """
    return dt.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@functools.lru_cache(maxsize=64)
def _as_stamp(text: str) -> str:
    """An ISO time as a message stamp (text that does not parse is kept as given)."""
    try:
        return stamp(datetime.fromisoformat(text))
    except ValueError:
        return text


def stamp_messages(
    messages: Sequence[BaseMessage], now: datetime, *, earlier: str | None = None
) -> list[BaseMessage]:
    """Give every message without an OM timestamp a time; return those stamped.

    New messages get ``now``, except replies that came in before the first new user message
    (the previous turn's last answer, seen only now): they get ``earlier``, the time of the
    previous step, when known.
    """
    stamped: list[BaseMessage] = []
    seen_human = False
    current: str | None = None  # stamp(now), made once when first needed
    for message in messages:
        meta = message.response_metadata.get(OM_META_KEY)
        if not isinstance(meta, dict):
            meta = {}
            message.response_metadata[OM_META_KEY] = meta
        if "ts" in meta:
            continue
        seen_human = seen_human or message.type == "human"
        if earlier and not seen_human:
            meta["ts"] = _as_stamp(earlier)
        else:
            meta["ts"] = current = current or stamp(now)
        stamped.append(message)
    return stamped
