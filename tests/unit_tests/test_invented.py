"""Observations about tool calls that no observed message contains."""

from __future__ import annotations

import logging

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langchain_om._core.invented import (
    drop_invented_tool_lines,
    invented_tool_lines,
    tool_names,
)
from langchain_om._core.observer import parse_observer_output
from langchain_om._core.record import log_text
from langchain_om.testing import FunctionChatModel
from tests.helpers import make_memory

GINA = '* 🟡 (14:31) Gina searched "Dance Studio Location" and found "There are many studios"'


@pytest.mark.parametrize(
    "line",
    [
        GINA,
        "* 🟡 (14:31) Assistant searched for flights and found three options",
        "* 🟡 (09:00) Assistant looked up the opening hours",
        "* 🟡 (09:00) User looked up 'vegan bakeries' online",
        "* 🟡 (09:00) Tool Call lookup returned the weather",
        "* 🟡 (09:00) Assistant called the weather tool for Porto",
        "* 🟡 (09:00) Searched for Porto hotels and found “Hotel Aliados”",
    ],
)
def test_tool_call_reports_without_tools_are_invented(line: str) -> None:
    assert invented_tool_lines(f"Date: Mar 1, 2026\n{line}", called=set()) == [line]


@pytest.mark.parametrize(
    "line",
    [
        "* 🔴 (09:00) User searched for flats last week and is tired of it",
        "* 🔴 (09:00) User works at a bakery in Porto",
        "* 🟡 (09:00) User asked the assistant to look things up later",
        "* 🔴 (09:00) User used the bus to get to work",
    ],
)
def test_plain_statements_are_kept(line: str) -> None:
    assert invented_tool_lines(line, called=set()) == []


def test_a_batch_with_tool_calls_backs_its_tools_only() -> None:
    log = "\n".join(
        [
            "* 🟡 (09:00) Assistant searched for flights and found three options",
            "* 🟡 (09:01) Assistant called the lookup tool for Porto",
            "* 🟡 (09:02) Assistant called the weather tool for Porto",
        ]
    )
    assert invented_tool_lines(log, called={"lookup"}) == [
        "* 🟡 (09:02) Assistant called the weather tool for Porto"
    ]


def test_tool_names_come_from_calls_and_results() -> None:
    messages = [
        HumanMessage("weather?"),
        AIMessage("", tool_calls=[{"name": "weather", "args": {}, "id": "c1"}]),
        ToolMessage("sunny", tool_call_id="c1", name="weather"),
        ToolMessage("done", tool_call_id="c2", name="calendar"),
    ]
    assert tool_names(messages) == {"weather", "calendar"}
    assert tool_names([HumanMessage("hi")]) == set()


def test_drop_removes_lines_and_their_details() -> None:
    raw = "\n".join(
        [
            "<observations>",
            "Date: Mar 1, 2026",
            "* 🔴 (09:00) User works at a bakery in Porto",
            "  * -> since March",
            GINA,
            "  * -> result: many studios",
            "  * -> another detail",
            "* 🟡 (09:05) User wants dance lessons",
            "</observations>",
        ]
    )
    parsed = parse_observer_output(raw)
    out, dropped = drop_invented_tool_lines(parsed, [HumanMessage("I work at a bakery")])
    assert dropped == 1
    assert out.observations.splitlines() == [
        "Date: Mar 1, 2026",
        "* 🔴 (09:00) User works at a bakery in Porto",
        "  * -> since March",
        "* 🟡 (09:05) User wants dance lessons",
    ]
    assert (out.current_task, out.raw) == (parsed.current_task, parsed.raw)
    same, none = drop_invented_tool_lines(out, [])
    assert same is out and none == 0


def test_a_day_left_empty_loses_its_header() -> None:
    raw = "<observations>\nDate: Mar 1, 2026\n" + GINA + "\n\nDate: Mar 2, 2026\n"
    raw += "* 🔴 (10:00) User booked a class\n</observations>"
    out, dropped = drop_invented_tool_lines(parse_observer_output(raw), [])
    assert dropped == 1
    assert out.observations == "Date: Mar 2, 2026\n* 🔴 (10:00) User booked a class"
    only, _ = drop_invented_tool_lines(parse_observer_output(f"Date: Mar 1, 2026\n{GINA}"), [])
    assert only.observations == ""


def test_the_observer_cycle_drops_invented_tool_calls(caplog: pytest.LogCaptureFixture) -> None:
    reply = "\n".join(
        [
            "<observations>",
            "Date: Nov 30, 2026",
            "* 🔴 (09:00) User wants to learn salsa in Porto",
            GINA,
            "</observations>",
        ]
    )
    model = FunctionChatModel(function=lambda messages, info: reply)
    memory = make_memory(model=model, observation={"message_tokens": 60, "buffer_tokens": False})
    # The message shares words with the tool line, so grounding keeps it for the tool check.
    said = HumanMessage("I want to learn salsa at a dance studio.", id="m")
    with caplog.at_level(logging.WARNING, logger="langchain_om"):
        memory.observe(thread_id="t", messages=[said])
    record = memory.status(thread_id="t").record
    assert record is not None
    text = log_text(record["groups"])
    assert "User wants to learn salsa in Porto" in text and "Dance Studio" not in text
    assert any("reported 1 tool call(s)" in r.message for r in caplog.records)
    assert all("Dance" not in r.message for r in caplog.records)  # no user text in logs
