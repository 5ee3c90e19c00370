from __future__ import annotations

import json
import os
import random
import string
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_om._core.dates import format_date
from langchain_om._core.observer import (
    MAX_LINE_CHARS,
    build_observer_messages,
    order_lines_by_time,
    parse_observer_output,
)
from langchain_om._core.observer_input import FormattedHistory, format_messages_for_observer
from langchain_om._core.observer_prompts import OBSERVATION_FORMAT_GUIDE, OBSERVER_SYSTEM_PROMPT
from langchain_om._core.truncation import TruncatedObservations, truncate_observations

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def assert_snapshot(name: str, actual: str) -> None:
    """Compare with ``tests/snapshots/<name>``; ``UPDATE_SNAPSHOTS=1`` rewrites the file."""
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual + "\n", encoding="utf-8")
        return
    assert path.exists(), f"snapshot {name} is missing: run with UPDATE_SNAPSHOTS=1"
    assert actual + "\n" == path.read_text(encoding="utf-8"), f"snapshot {name} differs"


def quarter(text: str) -> int:
    return len(text) // 4 + 1


def at(iso: str, **extra: Any) -> dict[str, Any]:
    return {"langchain_om": {"ts": iso, **extra}}


def fmt(messages: Sequence[BaseMessage], **kwargs: Any) -> FormattedHistory:
    options: dict[str, Any] = {
        "timezone": "UTC",
        "tool_result_max_tokens": 1_000,
        "count": quarter,
        "now": NOW,
    }
    options.update(kwargs)
    return format_messages_for_observer(messages, **options)


def content_as_text(message: BaseMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    parts = []
    for part in message.content:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part["text"]))
        else:
            parts.append(f"[[content block {json.dumps(part, sort_keys=True)}]]")
    return "\n\n".join(parts)


# --------------------------------------------------------------------------------------------
# Snapshot of the whole Observer input
# --------------------------------------------------------------------------------------------


def snapshot_conversation() -> list[BaseMessage]:
    flights = json.dumps(
        [
            {"flight": f"TP{1000 + i}", "from": "BER", "to": "LIS", "price_eur": 180 + 7 * i}
            for i in range(40)
        ]
    )
    return [
        SystemMessage("(memory)", id="mem", response_metadata={"langchain_om": {"kind": "memory"}}),
        SystemMessage(
            "You are a travel agent.", id="sys", response_metadata=at("2026-11-29T08:59:00Z")
        ),
        HumanMessage(
            "Hi, I'm Ana. I need a flight from Berlin to Lisbon next Friday.\n"
            "My budget is 300 EUR and I only fly with hand luggage.",
            id="u1",
            response_metadata=at("2026-11-29T09:00:10Z"),
        ),
        AIMessage(
            content=[
                {
                    "type": "reasoning",
                    "reasoning": "Next Friday is Dec 4. Search, then check weather.",
                },
                {"type": "text", "text": "Let me look that up."},
            ],
            tool_calls=[
                {
                    "name": "search_flights",
                    "args": {"from": "BER", "to": "LIS", "date": "2026-12-04"},
                    "id": "c1",
                },
                {"name": "weather", "args": {"city": "Lisbon"}, "id": "c2"},
            ],
            id="a1",
            response_metadata=at("2026-11-29T09:00:40Z"),
        ),
        ToolMessage(
            flights,
            tool_call_id="c1",
            name="search_flights",
            id="t1",
            response_metadata=at("2026-11-29T09:01:02Z"),
        ),
        ToolMessage(
            "",
            tool_call_id="c2",
            name="weather",
            id="t2",
            response_metadata=at("2026-11-29T09:01:03Z"),
        ),
        AIMessage(
            "The cheapest is TP1000 at 180 EUR, departing 07:10.",
            tool_calls=[{"name": "hold_seat", "args": {"flight": "TP1000"}, "id": "c3"}],
            id="a2",
            response_metadata=at("2026-11-29T09:02:00Z"),
        ),
        ToolMessage(
            "User rejected the tool call for `hold_seat` with reason: ask first",
            tool_call_id="c3",
            name="hold_seat",
            status="error",
            additional_kwargs={
                "lc_source": "hitl_interrupt_decision",
                "lc_data": {"decision": "reject"},
            },
            id="t3",
            response_metadata=at("2026-11-29T09:02:30Z"),
        ),
        HumanMessage(
            "[2 days later]",
            id="gap",
            response_metadata=at("2026-12-01T10:14:59Z", kind="temporal_gap"),
        ),
        HumanMessage(
            content=[
                {"type": "text", "text": "Here is my passport and the hotel booking."},
                {
                    "type": "image",
                    "base64": "iVBORw0KGgo=",
                    "mime_type": "image/png",
                    "extras": {"filename": "passport.png"},
                },
                {
                    "type": "file",
                    "base64": "JVBERi0=",
                    "mime_type": "application/pdf",
                    "extras": {"filename": "hotel.pdf"},
                },
            ],
            id="u2",
            response_metadata=at("2026-12-01T10:15:00Z"),
        ),
        AIMessage(
            "Thanks! Booking TP1000 now.",
            tool_calls=[
                {"name": "book", "args": {"flight": "TP1000", "passenger": "Ana"}, "id": "c4"}
            ],
            id="a3",
            response_metadata=at("2026-12-01T10:15:20Z"),
        ),
        ToolMessage(
            "Payment gateway timeout",
            tool_call_id="c4",
            name="book",
            status="error",
            id="t4",
            response_metadata=at("2026-12-01T10:16:00Z"),
        ),
        AIMessage(
            "Retrying.",
            tool_calls=[
                {"name": "book", "args": {"flight": "TP1000", "passenger": "Ana"}, "id": "c5"}
            ],
            id="a4",
            response_metadata=at("2026-12-01T10:16:30Z"),
        ),
    ]


def snapshot_previous() -> TruncatedObservations:
    lines = ["Date: Nov 20, 2026"]
    for i in range(30):
        priority = "🔴" if i % 4 == 0 else "🟡"
        lines.append(f"* {priority} (10:{i:02d}) earlier observation number {i} about the trip")
    return truncate_observations("\n".join(lines), 120, quarter)


def test_observer_input_snapshot() -> None:
    history = format_messages_for_observer(
        snapshot_conversation(),
        timezone="Europe/Berlin",
        tool_result_max_tokens=60,
        count=quarter,
        now=NOW,
        observe_attachments=["image/*"],
    )
    previous = snapshot_previous()
    assert previous.truncated
    messages = build_observer_messages(
        history=history,
        previous=previous,
        prior_hints={
            "current_task": "Find a flight to Lisbon",
            "thread-title": "Lisbon trip",
            "preferences": "aisle seat",
        },
        instruction="Pay special attention to travel preferences.",
        thread_title=True,
        extractors=[("preferences", "The user's travel preferences, one per line.")],
    )
    assert [type(m) for m in messages] == [SystemMessage, HumanMessage]
    assert_snapshot("observer_input_system.txt", content_as_text(messages[0]))
    assert_snapshot("observer_input_human.txt", content_as_text(messages[1]))

    human = content_as_text(messages[1])
    assert "hidden from the view above" in human  # the truncation notice
    assert "… [truncated" in human  # the long tool result was cut
    assert "Date: Nov 29, 2026" in human and "Date: Dec 1, 2026" in human
    assert history.attachment_labels == ["[Image #1: passport.png]"]  # the PDF is not allowed
    assert "[File #2: hotel.pdf]" in history.text


# --------------------------------------------------------------------------------------------
# Formatting messages
# --------------------------------------------------------------------------------------------


def test_times_show_when_they_change_and_tool_lines_always_show_them() -> None:
    text = fmt(
        [
            HumanMessage("one", response_metadata=at("2026-11-30T14:30:05Z")),
            AIMessage(
                "two",
                tool_calls=[{"name": "s", "args": {}, "id": "c"}],
                response_metadata=at("2026-11-30T14:30:40Z"),
            ),
            ToolMessage("r", tool_call_id="c", response_metadata=at("2026-11-30T14:30:50Z")),
            HumanMessage("three", response_metadata=at("2026-11-30T14:31:00Z")),
        ]
    ).text
    assert text.splitlines() == [
        "Date: Nov 30, 2026",
        "User (14:30): one",
        "Assistant: two",
        "Tool Call s (14:30): {}",
        "Tool Result s: r",
        "User (14:31): three",
    ]


def test_dates_follow_the_timezone_and_missing_times_use_now() -> None:
    history = fmt(
        [
            HumanMessage("late", response_metadata=at("2026-11-30T23:30:00Z")),
            HumanMessage("no timestamp"),
        ],
        timezone="Asia/Tokyo",
        now=datetime(2026, 12, 3, 1, 0, tzinfo=UTC),
    )
    assert history.text.splitlines() == [
        "Date: Dec 1, 2026",
        "User (08:30): late",
        "",
        "Date: Dec 3, 2026",
        "User (10:00): no timestamp",
    ]


def test_memory_messages_are_skipped_and_other_system_messages_shown() -> None:
    history = fmt(
        [
            SystemMessage("memory", id="m", response_metadata={"langchain_om": {"kind": "memory"}}),
            SystemMessage("Be brief.", id="s", response_metadata=at("2026-11-30T10:00:00Z")),
        ]
    )
    assert "memory" not in history.text
    assert "System (10:00): Be brief." in history.text
    assert history.message_ids == ["s"]


def test_results_are_paired_with_their_calls_and_pending_calls_marked() -> None:
    history = fmt(
        [
            AIMessage(
                "",
                tool_calls=[
                    {"name": "a", "args": {"x": 1}, "id": "1"},
                    {"name": "b", "args": {}, "id": "2"},
                    {"name": "c", "args": {}, "id": "3"},
                ],
                id="ai",
                response_metadata=at("2026-11-30T10:00:00Z"),
            ),
            ToolMessage("B done", tool_call_id="2", name="b", id="tb"),
            HumanMessage("meanwhile", id="h", response_metadata=at("2026-11-30T10:05:00Z")),
            ToolMessage("A done", tool_call_id="1", name="a", id="ta"),
        ]
    )
    assert history.text.splitlines() == [
        "Date: Nov 30, 2026",
        'Tool Call a (10:00): {"x": 1}',
        "Tool Result a: A done",
        "Tool Call b (10:00): {}",
        "Tool Result b: B done",
        "Tool Call c (10:00): {}",
        "Tool Result c: [pending]",
        "User (10:05): meanwhile",
    ]
    assert history.message_ids == ["ai", "tb", "h", "ta"]


def test_tool_results_errors_denials_and_empty() -> None:
    ts = at("2026-11-30T10:00:00Z")
    history = fmt(
        [
            ToolMessage("boom", tool_call_id="x", name="t1", status="error", response_metadata=ts),
            ToolMessage(
                "no",
                tool_call_id="y",
                name="t2",
                additional_kwargs={"denied": True},
                response_metadata=ts,
            ),
            ToolMessage("  ", tool_call_id="z", name="t3", response_metadata=ts),
            ToolMessage(
                "User rejected the tool call",
                tool_call_id="w",
                name="t4",
                status="error",
                additional_kwargs={
                    "lc_source": "hitl_interrupt_decision",
                    "lc_data": {"decision": "reject"},
                },
                response_metadata=ts,
            ),
        ]
    )
    assert history.text.splitlines()[1:] == [
        "Tool Error t1 (10:00): boom",
        "Tool Denied t2 (10:00): no",
        "Tool Result t3 (10:00): [empty result]",
        "Tool Denied t4 (10:00): User rejected the tool call",
    ]


def test_long_tool_results_and_args_are_truncated_with_a_note() -> None:
    history = fmt(
        [
            AIMessage(
                "",
                tool_calls=[{"name": "w", "args": {"body": "y" * 400}, "id": "1"}],
                response_metadata=at("2026-11-30T10:00:00Z"),
            ),
            ToolMessage("x" * 4000, tool_call_id="1", name="w"),
        ],
        tool_result_max_tokens=20,
    )
    call, result = history.text.splitlines()[1:]
    assert result.startswith("Tool Result w: xxx") and result.endswith("tokens]")
    assert "… [truncated 9" in result  # ~1000 tokens, 20 kept
    assert quarter(result.split(": ", 1)[1].split(" … ")[0]) <= 20
    assert call.startswith('Tool Call w (10:00): {"body": "yyy') and "… [truncated" in call


def test_reasoning_multiline_and_notices() -> None:
    history = fmt(
        [
            HumanMessage(
                "Summary so far",
                additional_kwargs={"lc_source": "summarization"},
                response_metadata=at("2026-11-30T10:00:00Z"),
            ),
            AIMessage(
                content=[
                    {"type": "reasoning", "reasoning": "think\nharder"},
                    {"type": "text", "text": "line one\n\nline two"},
                ],
                response_metadata=at("2026-11-30T10:01:00Z"),
            ),
        ]
    )
    assert history.text.splitlines()[1:] == [
        "Notice [summarization] (10:00): Summary so far",
        "Reasoning (10:01): think",
        "  harder",
        "Assistant: line one",
        "  line two",
    ]


def test_temporal_gap_renders_as_plain_line() -> None:
    history = fmt(
        [
            HumanMessage(
                "[3 hours later]",
                response_metadata=at("2026-11-30T13:00:00Z", kind="temporal_gap"),
            ),
            HumanMessage("back", response_metadata=at("2026-11-30T13:00:01Z")),
        ]
    )
    assert history.text.splitlines() == [
        "Date: Nov 30, 2026",
        "[3 hours later]",
        "User (13:00): back",
    ]


IMAGE = {
    "type": "image",
    "base64": "AAAA",
    "mime_type": "image/png",
    "extras": {"filename": "a.png"},
}
PDF = {"type": "file", "base64": "AAAA", "mime_type": "application/pdf", "filename": "r.pdf"}
JPEG_URL = {"type": "image", "url": "https://example.com/pics/cat.jpg?size=2"}
NAMELESS = {"type": "file", "base64": "AAAA", "mime_type": "text/csv"}


def attachment_message() -> HumanMessage:
    return HumanMessage(
        content=[{"type": "text", "text": "see"}, IMAGE, PDF, JPEG_URL, NAMELESS],
        response_metadata=at("2026-11-30T10:00:00Z"),
    )


def test_attachment_placeholders() -> None:
    history = fmt([attachment_message()])
    assert history.text.splitlines()[1:] == [
        "User (10:00): see",
        "  [Image #1: a.png]",
        "  [File #2: r.pdf]",
        "  [Image #3: cat.jpg]",
        "  [File #4: text/csv]",
    ]
    assert history.attachments == [IMAGE, PDF, JPEG_URL, NAMELESS]
    assert history.attachment_labels == [
        "[Image #1: a.png]",
        "[File #2: r.pdf]",
        "[Image #3: cat.jpg]",
        "[File #4: text/csv]",
    ]


@pytest.mark.parametrize(
    ("policy", "forwarded"),
    [
        (True, [1, 2, 3, 4]),
        ("auto", [1, 2, 3, 4]),
        (False, []),
        (["image/*"], [1, 3]),
        (["application/pdf", "text/csv"], [2, 4]),
        (["*"], [1, 2, 3, 4]),
        (["IMAGE/*", "Application/PDF"], []),  # case-sensitive
        (["image/jpeg"], [3]),  # mime guessed from the URL
    ],
)
def test_attachment_policy(policy: Any, forwarded: list[int]) -> None:
    history = fmt([attachment_message()], observe_attachments=policy)
    assert [label.split("#")[1].split(":")[0] for label in history.attachment_labels] == [
        str(n) for n in forwarded
    ]
    assert len(history.attachments) == len(forwarded)
    assert history.text.count("#") == 4  # placeholders are always shown


def test_tool_result_attachments_follow_the_text() -> None:
    history = fmt(
        [
            ToolMessage(
                content=[{"type": "text", "text": "chart ready"}, IMAGE],
                tool_call_id="c",
                name="plot",
                response_metadata=at("2026-11-30T10:00:00Z"),
            )
        ]
    )
    assert history.text.splitlines()[1:] == [
        "Tool Result plot (10:00): chart ready",
        "  [Image #1: a.png]",
    ]
    assert history.attachments == [IMAGE]


# --------------------------------------------------------------------------------------------
# Building the prompt
# --------------------------------------------------------------------------------------------


def simple_history() -> FormattedHistory:
    return fmt([HumanMessage("hello", response_metadata=at("2026-11-30T10:00:00Z"))])


def human_text(**kwargs: Any) -> tuple[str, str]:
    options: dict[str, Any] = {
        "history": simple_history(),
        "previous": None,
        "prior_hints": {},
        "instruction": None,
        "thread_title": False,
    }
    options.update(kwargs)
    system, human = build_observer_messages(**options)
    assert isinstance(system, SystemMessage) and isinstance(human, HumanMessage)
    return content_as_text(system), content_as_text(human)


def test_minimal_prompt() -> None:
    system, human = human_text()
    assert system == OBSERVER_SYSTEM_PROMPT
    assert OBSERVATION_FORMAT_GUIDE in system
    assert "## Previous Observations" not in human and "## Prior Thread Metadata" not in human
    assert human.index("## New Messages to Observe") < human.index("User (10:00): hello")
    assert human.index("User (10:00): hello") < human.index("---\n\n## Your Task")
    assert "<current-task>" in human and "<suggested-response>" in human
    assert "<thread-title>" not in human


def test_instruction_goes_to_the_system_prompt_only() -> None:
    system, human = human_text(instruction="Only record food preferences.")
    assert system.endswith("## Custom Instructions\n\nOnly record food preferences.")
    assert "food preferences" not in human


def test_previous_observations_and_truncation_notice() -> None:
    kept = TruncatedObservations("Date: Nov 1, 2026\n* 🔴 (09:00) fact", False, 0, 1)
    _, human = human_text(previous=kept)
    assert "## Previous Observations\n\nDate: Nov 1, 2026\n* 🔴 (09:00) fact" in human
    assert "Do not repeat them" in human and "hidden" not in human
    cut = TruncatedObservations("[3 observations hidden here]\n* 🔴 (09:00) fact", True, 3, 1)
    _, human = human_text(previous=cut)
    assert "3 older observation lines are hidden" in human and "stored intact" in human
    _, human = human_text(previous=TruncatedObservations("", True, 5, 0))
    assert "already has 5 recorded observations" in human  # all hidden: still told they exist


def test_prior_metadata_and_optional_sections() -> None:
    hints = {
        "suggested_response": "Ask about dates",
        "current-task": "Plan trip",
        "thread_title": "Trip planning",
        "prefs": "window\nseat",
        "empty": "  ",
    }
    _, human = human_text(
        prior_hints=hints, thread_title=False, extractors=[("prefs", "Seat prefs.")]
    )
    assert (
        "## Prior Thread Metadata\n\n- prior current-task: Plan trip\n"
        "- prior suggested-response: Ask about dates\n- prior prefs: window seat"
    ) in human
    assert "thread-title" not in human and "empty" not in human
    assert "- <prefs>: Seat prefs. Start from the prior prefs" in human

    _, human = human_text(extractors=[("todo", "Open to-dos.\n\nOne per line.")])
    assert "- <todo>: Open to-dos.\n  One per line." in human

    _, human = human_text(prior_hints=hints, thread_title=True)
    assert "- prior thread-title: Trip planning" in human
    assert "<thread-title>" in human and "Keep the prior thread-title" in human


def test_skip_continuation_hints() -> None:
    _, human = human_text(skip_continuation_hints=True)
    task = human.split("## Your Task", 1)[1]
    assert "<current-task>" not in task and "<suggested-response>" not in task
    assert "Always write the <observations> block" in task


def test_attachments_are_forwarded_after_the_history() -> None:
    history = fmt([attachment_message()], observe_attachments=["image/png"])
    system, human = build_observer_messages(
        history=history, previous=None, prior_hints={}, instruction=None, thread_title=False
    )
    assert isinstance(human.content, list)
    kinds = [part["type"] if isinstance(part, dict) else "str" for part in human.content]
    assert kinds == ["text", "text", "image", "text"]
    assert human.content[1] == {"type": "text", "text": "[Image #1: a.png]"}
    assert human.content[2] == IMAGE
    first, last = human.content[0], human.content[3]
    assert isinstance(first, dict) and "## New Messages to Observe" in first["text"]
    assert isinstance(last, dict) and last["text"].startswith("---\n\n## Your Task")


# --------------------------------------------------------------------------------------------
# Parsing the answer
# --------------------------------------------------------------------------------------------

WELL_FORMED = """\
<observations>
Date: Nov 30, 2026
* 🔴 (14:30) User is Ana, flying BER to LIS on Dec 4 (meaning Dec 4, 2026)
  * -> budget 300 EUR, hand luggage only
* ✅ (14:35) Assistant found TP1000 at 180 EUR
</observations>

<current-task>
Primary: book TP1000 for Ana
</current-task>

<suggested-response>
Confirm the booking.
</suggested-response>

<thread-title>
"Lisbon trip"
</thread-title>

<prefs>
- hand luggage only
</prefs>
"""


def test_parse_well_formed() -> None:
    out = parse_observer_output(WELL_FORMED, extractor_slugs=["prefs"])
    assert out.observations == (
        "Date: Nov 30, 2026\n"
        "* 🔴 (14:30) User is Ana, flying BER to LIS on Dec 4 (meaning Dec 4, 2026)\n"
        "  * -> budget 300 EUR, hand luggage only\n"
        "* ✅ (14:35) Assistant found TP1000 at 180 EUR"
    )
    assert out.current_task == "Primary: book TP1000 for Ana"
    assert out.suggested_response == "Confirm the booking."
    assert out.thread_title == "Lisbon trip"
    assert out.extracted == {"prefs": "- hand luggage only"}
    assert not out.degenerate and out.raw == WELL_FORMED


def test_parse_without_extractor_slug_leaves_its_section_out_of_observations() -> None:
    out = parse_observer_output(WELL_FORMED)
    assert out.extracted == {}
    assert "- hand luggage only" not in out.observations


def test_parse_joins_blocks_and_requires_line_start() -> None:
    text = (
        "Sure. <observations>\n* 🟡 (09:00) ignored inline opener\n</observations>\n"
        "<observations>\nDate: Nov 1, 2026\n* 🟡 (09:00) a\n</observations>\n"
        "<observations>\nDate: Nov 2, 2026\n* 🟡 (10:00) b\n</observations>"
    )
    assert parse_observer_output(text).observations == (
        "Date: Nov 1, 2026\n* 🟡 (09:00) a\n\nDate: Nov 2, 2026\n* 🟡 (10:00) b"
    )


def test_parse_fallback_keeps_list_lines_and_headers() -> None:
    text = (
        "Here are my observations:\n\nDate: November 3, 2026\n- 🔴 (08:00) fact one\n"
        "1. 🟡 (08:05) fact two\nsome prose\n  * -> detail\n<current-task>\n- not an observation\n"
        "</current-task>"
    )
    out = parse_observer_output(text)
    assert out.observations == (
        "Date: Nov 3, 2026\n- 🔴 (08:00) fact one\n1. 🟡 (08:05) fact two\n  * -> detail"
    )
    assert out.current_task == "- not an observation"


def test_parse_unclosed_block_stops_at_next_section() -> None:
    text = "<observations>\n* 🟡 (09:00) a\n<current-task>\ntask\n</current-task>\n"
    out = parse_observer_output(text)
    assert out.observations == "* 🟡 (09:00) a" and out.current_task == "task"
    truncated = parse_observer_output(
        "<observations>\nDate: Nov 1, 2026\n* 🟡 (09:00) a\n* 🔴 (09:05) b"
    )
    assert truncated.observations == "Date: Nov 1, 2026\n* 🟡 (09:00) a\n* 🔴 (09:05) b"


def test_parse_inline_hint_and_empty_sections() -> None:
    out = parse_observer_output(
        "<observations>\n* 🟡 (09:00) a\n</observations>\n<current-task>Do X</current-task>\n"
        "<suggested-response>\n\n</suggested-response>\n<thread-title></thread-title>"
    )
    assert out.current_task == "Do X"
    assert out.suggested_response is None and out.thread_title is None


def test_parse_caps_long_lines() -> None:
    rng = random.Random(5)
    line = "* 🟡 (09:00) " + "".join(
        rng.choice(string.ascii_lowercase + " ") for _ in range(12_000)
    )
    out = parse_observer_output(f"<observations>\n{line}\n</observations>")
    assert out.observations.endswith("… [truncated]")
    assert len(out.observations) == MAX_LINE_CHARS + len("… [truncated]")


def test_parse_degenerate_output() -> None:
    block = (
        "* 🟡 (10:00) Assistant ran the tests again and they failed the same way\n"
        "  * -> same error\n"
    )
    out = parse_observer_output(
        "<observations>\n" + block * 60 + "</observations>\n<current-task>x</current-task>"
    )
    assert out.degenerate and out.observations == "" and out.current_task is None
    assert out.raw.startswith("<observations>")


def test_order_lines_by_time() -> None:
    text = (
        "Date: Nov 1, 2026\n* 🟡 (10:05) b\n  * -> b detail\n* 🔴 (09:00) a\n* ✅ (10:05) c\n\n"
        "Date: Nov 2, 2026\n* 🟡 (08:00) x\n* 🟡 y without time\n* 🟡 (07:00) z"
    )
    assert order_lines_by_time(text) == (
        "Date: Nov 1, 2026\n* 🔴 (09:00) a\n* 🟡 (10:05) b\n  * -> b detail\n* ✅ (10:05) c\n\n"
        "Date: Nov 2, 2026\n* 🟡 (08:00) x\n* 🟡 y without time\n* 🟡 (07:00) z"
    )
    twelve_hour = "* 🟡 (2:30 PM) later\n* 🟡 (09:00) earlier"
    assert order_lines_by_time(twelve_hour) == twelve_hour


_FRAGMENTS = st.sampled_from(
    [
        "<observations>",
        "</observations>",
        "<current-task>",
        "</current-task>",
        "<suggested-response>",
        "<thread-title>",
        "</thread-title>",
        "<prefs>",
        "</prefs>",
        "Date: Nov 30, 2026",
        "Date: Feb 30, 2026",
        "* 🔴 (14:30) fact",
        "  * -> sub",
        "* 🟡 (25:99) bad time",
        "1. (2:30 PM) twelve",
        "",
        "```",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_FRAGMENTS, st.text(max_size=30)), max_size=40), st.booleans())
def test_parse_never_raises(parts: list[str], joined_by_newline: bool) -> None:
    text = ("\n" if joined_by_newline else "").join(parts)
    out = parse_observer_output(text, extractor_slugs=["prefs", "current-task", ""])
    assert out.raw == text
    assert all(
        len(line) <= MAX_LINE_CHARS + len("… [truncated]") for line in out.observations.splitlines()
    )


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=3_000))
def test_parse_never_raises_on_arbitrary_text(text: str) -> None:
    assert isinstance(parse_observer_output(text).observations, str)


# Round trip: a generated observation set, rendered the way the Observer is told to write it.

_SAFE = string.ascii_letters + string.digits + " .,;:!?'()-/€éß😀"
_TEXT = st.text(_SAFE, min_size=1, max_size=40).map(str.strip).filter(bool)
_ITEM = st.tuples(
    st.sampled_from(["🔴", "🟡", "🟢", "✅"]),
    st.integers(0, 23),
    st.integers(0, 59),
    _TEXT,
    st.lists(_TEXT, max_size=2),
)
_GROUPS = st.lists(st.lists(_ITEM, min_size=1, max_size=5), min_size=1, max_size=4)


def _tag(group: int, item: int) -> str:
    """A word of letters unique to one generated line (numbers are masked by the loop check)."""
    return "item" + "abcdefghij"[group] + "abcdefghij"[item]


_HINT = st.one_of(st.none(), _TEXT)


@settings(max_examples=150, deadline=None)
@given(
    _GROUPS,
    _HINT,
    _HINT,
    st.one_of(
        st.none(),
        st.text(string.ascii_letters + " ", min_size=1, max_size=30).map(str.strip).filter(bool),
    ),
    _HINT,
)
def test_round_trip(
    groups: list[list[tuple[str, int, int, str, list[str]]]],
    task: str | None,
    response: str | None,
    title: str | None,
    prefs: str | None,
) -> None:
    # every line says something of its own (identical lines would rightly be a loop)
    groups = [
        [
            (
                p,
                h,
                m,
                f"{_tag(g, i)} {text}",
                [f"{_tag(g, i)}{'xyz'[j]} {s}" for j, s in enumerate(subs)],
            )
            for i, (p, h, m, text, subs) in enumerate(group)
        ]
        for g, group in enumerate(groups)
    ]
    day = date(2026, 1, 1)
    rendered_groups: list[str] = []
    expected_groups: list[str] = []
    for group in groups:
        day += timedelta(days=3)
        header = f"Date: {format_date(day)}"

        def lines(items: list[tuple[str, int, int, str, list[str]]]) -> list[str]:
            out = []
            for priority, hour, minute, text, subs in items:
                out.append(f"* {priority} ({hour:02d}:{minute:02d}) {text}")
                out.extend(f"  * -> {sub}" for sub in subs)
            return out

        rendered_groups.append("\n".join([header, *lines(group)]))
        in_order = sorted(group, key=lambda item: (item[1], item[2]))
        expected_groups.append("\n".join([header, *lines(in_order)]))
    answer = "<observations>\n" + "\n\n".join(rendered_groups) + "\n</observations>\n"
    for tag, value in (
        ("current-task", task),
        ("suggested-response", response),
        ("thread-title", title),
        ("prefs", prefs),
    ):
        if value is not None:
            answer += f"\n<{tag}>\n{value}\n</{tag}>\n"

    out = parse_observer_output(answer, extractor_slugs=["prefs"])
    assert not out.degenerate
    assert out.observations == "\n\n".join(expected_groups)
    assert (out.current_task, out.suggested_response, out.thread_title) == (task, response, title)
    assert out.extracted == ({"prefs": prefs} if prefs else {})
