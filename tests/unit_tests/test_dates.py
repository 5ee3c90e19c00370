from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage

from langchain_om._core.dates import (
    format_date,
    format_time,
    gap_label,
    message_time,
    parse_date_header,
    relative_label,
    stamp_messages,
    to_zone,
)
from langchain_om._core.types import OM_META_KEY


def test_message_time_reads_om_timestamp() -> None:
    msg = HumanMessage(
        "hi", response_metadata={"langchain_om": {"ts": "2026-11-30T14:03:05+00:00"}}
    )
    assert message_time(msg) == datetime(2026, 11, 30, 14, 3, 5, tzinfo=UTC)


def test_message_time_accepts_z_and_naive_as_utc() -> None:
    z = AIMessage("x", response_metadata={"langchain_om": {"ts": "2026-11-30T14:03:05Z"}})
    naive = AIMessage("x", response_metadata={"langchain_om": {"ts": "2026-11-30T14:03:05"}})
    assert message_time(z) == message_time(naive) == datetime(2026, 11, 30, 14, 3, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    "meta",
    [
        {},
        {"langchain_om": None},
        {"langchain_om": {}},
        {"langchain_om": {"ts": 5}},
        {"langchain_om": {"ts": "soon"}},
    ],
)
def test_message_time_absent_or_invalid_is_none(meta: dict[str, object]) -> None:
    assert message_time(HumanMessage("hi", response_metadata=meta)) is None


def test_to_zone_converts_and_falls_back_to_utc() -> None:
    dt = datetime(2026, 11, 30, 23, 30, tzinfo=UTC)
    tokyo = to_zone(dt, "Asia/Tokyo")
    assert (tokyo.day, tokyo.hour) == (1, 8)
    assert to_zone(dt.replace(tzinfo=None), "Asia/Tokyo") == tokyo
    bad = to_zone(dt, "Not/AZone")
    assert bad.utcoffset() == timedelta(0) and bad.hour == 23
    assert to_zone(dt, "").utcoffset() == timedelta(0)


def test_format_date_and_time() -> None:
    dt = datetime(2026, 3, 5, 7, 4)
    assert format_date(dt) == "Mar 5, 2026"
    assert format_date(date(2026, 11, 30)) == "Nov 30, 2026"
    assert format_time(dt) == "07:04"
    assert format_time(datetime(2026, 3, 5, 23, 59)) == "23:59"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Date: Nov 30, 2026", date(2026, 11, 30)),
        ("Date: November 30, 2026", date(2026, 11, 30)),
        ("  Date:   Nov  30,   2026  ", date(2026, 11, 30)),
        ("Date: Nov 30 2026", date(2026, 11, 30)),
        ("Date: Sept. 3, 2026", date(2026, 9, 3)),
        ("Date: May 15, 2023 (5 days ago)", date(2023, 5, 15)),
        ("Date: Feb 30, 2026", None),
        ("Date: Foo 3, 2026", None),
        ("* 🔴 (10:00) Date: Nov 30, 2026", None),
        ("Nov 30, 2026", None),
        ("Date: Nov 30, 2026 and more text", None),
    ],
)
def test_parse_date_header(line: str, expected: date | None) -> None:
    assert parse_date_header(line) == expected


@given(st.dates(min_value=date(1900, 1, 1), max_value=date(2999, 12, 31)))
def test_header_round_trip(d: date) -> None:
    assert parse_date_header(f"Date: {format_date(d)}") == d


@pytest.mark.parametrize(
    ("days_ago", "label"),
    [
        (0, "today"),
        (1, "yesterday"),
        (3, "3 days ago"),
        (6, "6 days ago"),
        (7, "1 week ago"),
        (14, "2 weeks ago"),
        (29, "4 weeks ago"),
        (30, "1 month ago"),
        (95, "3 months ago"),
        (364, "12 months ago"),
        (365, "1 year ago"),
        (800, "2 years ago"),
        (-1, "tomorrow"),
        (-2, "in 2 days"),
        (-21, "in 3 weeks"),
    ],
)
def test_relative_label(days_ago: int, label: str) -> None:
    today = date(2026, 11, 30)
    assert relative_label(today - timedelta(days=days_ago), today) == label


def test_relative_label_accepts_datetimes() -> None:
    assert (
        relative_label(datetime(2026, 11, 27, 23, 0), datetime(2026, 11, 30, 1, 0)) == "3 days ago"
    )


@pytest.mark.parametrize(
    ("days", "label"),
    [
        (0, None),
        (1, None),
        (-5, None),
        (2, "[2 days later]"),
        (7, "[1 week later]"),
        (15, "[2 weeks later]"),
        (61, "[2 months later]"),
        (400, "[1 year later]"),
    ],
)
def test_gap_label(days: int, label: str | None) -> None:
    start = date(2026, 1, 10)
    assert gap_label(start, start + timedelta(days=days)) == label


def test_stamp_messages_stamps_only_new_ones_and_dates_a_late_reply_earlier() -> None:
    old = HumanMessage("old", id="o")
    old.response_metadata[OM_META_KEY] = {"ts": "2026-01-01T08:00:00Z"}
    late = AIMessage("the previous answer", id="r")
    new = HumanMessage("hello", id="h")
    reply = AIMessage("hi", id="a")
    now = datetime(2026, 1, 2, 9, 30, 5, 123, tzinfo=UTC)
    stamped = stamp_messages([old, late, new, reply], now, earlier="2026-01-01T08:05:00.5+00:00")
    assert stamped == [late, new, reply]
    assert [m.response_metadata[OM_META_KEY]["ts"] for m in (old, late, new, reply)] == [
        "2026-01-01T08:00:00Z",
        "2026-01-01T08:05:00Z",
        "2026-01-02T09:30:05Z",
        "2026-01-02T09:30:05Z",
    ]
    odd = AIMessage("x", id="x")
    stamp_messages([odd], now, earlier="not a time")
    assert odd.response_metadata[OM_META_KEY]["ts"] == "not a time"  # kept as given
