"""Time cues: relative labels for dates in observation lines, range headers, fuzzy dates."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om._core.dates import parse_date_header, parse_date_range_header
from langchain_om._core.render import annotate_relative_time
from langchain_om.testing import FunctionChatModel, RecordedCall, Reply, memory_model

TODAY = date(2025, 6, 10)


def annotate(line: str) -> str:
    return annotate_relative_time(line, TODAY)[0]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # Full dates inside observation lines.
        (
            "* 🔴 (09:00) User has an exam on January 10, 2025",
            "* 🔴 (09:00) User has an exam on January 10, 2025 (5 months ago)",
        ),
        ("* Met Ana on 3 June 2025", "* Met Ana on 3 June 2025 (1 week ago)"),
        ("* Invoice dated 2025-06-09", "* Invoice dated 2025-06-09 (yesterday)"),
        ("* Trip on Jun 17, 2025", "* Trip on Jun 17, 2025 (in 1 week)"),
        # Month and year, fuzzy month, fuzzy year, year after a preposition.
        ("* Moved to Lisbon in March 2024", "* Moved to Lisbon in March 2024 (1 year ago)"),
        ("* Started the job in May 2025", "* Started the job in May 2025 (last month)"),
        ("* Kickoff in early June 2025", "* Kickoff in early June 2025 (this month)"),
        ("* Left Berlin in late 2023", "* Left Berlin in late 2023 (2 years ago)"),
        ("* Bought the car mid-2024", "* Bought the car mid-2024 (last year)"),
        ("* Has lived there since 2019", "* Has lived there since 2019 (6 years ago)"),
        ("* Wants a new bike by 2027", "* Wants a new bike by 2027 (in 2 years)"),
        # Future intent for a date already past.
        (
            "* 🔴 User is looking forward to the concert on May 30, 2025",
            "* 🔴 User is looking forward to the concert on May 30, 2025 "
            "(1 week ago, likely already happened)",
        ),
        (
            "* User will visit Oslo in April 2025",
            "* User will visit Oslo in April 2025 (2 months ago, likely already happened)",
        ),
        # Resolved-date notes keep their own format; nothing is labelled twice.
        (
            "* User will fly to Oslo (meaning Jun 5, 2025)",
            "* User will fly to Oslo (meaning Jun 5, 2025 - 5 days ago, likely already happened)",
        ),
        (
            "* Exam on January 10, 2025 (5 months ago)",
            "* Exam on January 10, 2025 (5 months ago)",
        ),
        # Not dates: times, bare numbers, impossible days.
        ("* (14:30) Ordered 2024 screws", "* (14:30) Ordered 2024 screws"),
        ("* Code Feb 30, 2025 is not a day", "* Code Feb 30, 2025 is not a day"),
    ],
)
def test_inline_dates(line: str, expected: str) -> None:
    assert annotate(line) == expected


def test_range_headers_are_headers() -> None:
    header = "Date: Apr 1, 2025 - May 20, 2025"
    assert parse_date_range_header(header) == (date(2025, 4, 1), date(2025, 5, 20))
    assert parse_date_header(header) == date(2025, 4, 1)
    assert parse_date_range_header("Date: Apr 1, 2025 – Apr 3, 2025") is not None
    assert parse_date_range_header("Date: May 20, 2025 - Apr 1, 2025") is None  # backwards
    text = f"{header}\n* 🔴 fact\nDate: Jun 9, 2025\n* 🟡 later"
    out, last = annotate_relative_time(text, TODAY)
    assert out.splitlines() == [
        "Date: Apr 1, 2025 - May 20, 2025 (2 months ago to 3 weeks ago)",
        "* 🔴 fact",
        "[2 weeks later]",  # from the end of the range
        "Date: Jun 9, 2025 (yesterday)",
        "* 🟡 later",
    ]
    assert last == date(2025, 6, 9)


def test_observer_is_told_hidden_observations_exist() -> None:
    prompts: list[str] = []
    observer = memory_model().function
    assert observer is not None

    def spy(messages: list[BaseMessage], info: RecordedCall) -> Reply:
        prompts.append(messages[-1].text)
        return observer(messages, info)

    memory = ObservationalMemory(
        model=FunctionChatModel(function=spy),
        observation={"previous_observer_tokens": 0, "buffer_tokens": False},
        clock=lambda: datetime(2025, 6, 10, 9, tzinfo=UTC),
    )
    memory.observe(thread_id="t", messages=[HumanMessage("I live in Lisbon.")])
    memory.observe(thread_id="t", messages=[HumanMessage("I have a cat named Rui.")])
    assert len(prompts) == 2
    assert "Previous Observations" not in prompts[0]  # nothing recorded yet
    assert "already has" in prompts[1] and "not shown" in prompts[1]
    assert "Lisbon" not in prompts[1].split("## New Messages")[0]  # hidden, as configured
