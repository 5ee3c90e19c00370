"""Structured Observer/Reflector output renders to exactly what the text parser reads."""

from __future__ import annotations

import json
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from langchain_om._core.observer import parse_observer_output
from langchain_om._core.structured import (
    ExtractedValue,
    StructuredObservation,
    StructuredObserverOutput,
    StructuredReflectorOutput,
    render_structured,
    structured_from_observations,
    structured_to_text,
)

TEXT_ANSWERS = [
    """<observations>
Date: Mar 2, 2026
* 🔴 (09:00) User started a job at a bakery in Porto
  * -> bakes sourdough bread
  * -> and almond croissants
* 🟡 (09:01) Assistant congratulated the user

Date: Apr 4, 2026
* ✅ (11:15) User moved to Lisbon; now works at a coffee roastery
* 🟢 (10:00) User mentioned rain
</observations>
<current-task>
Primary: plan the visit
Secondary: none
</current-task>
<suggested-response>Ask when Jon arrives.</suggested-response>
<thread-title>"Moving to Lisbon"</thread-title>
<city>Lisbon</city>""",
    """<observations>
Date: Nov 30, 2026
* 🔴 (23:59) User asked for a reminder
</observations>""",
]


def from_parsed(text: str, slugs: list[str]) -> StructuredObserverOutput:
    parsed = parse_observer_output(text, extractor_slugs=slugs)
    return StructuredObserverOutput(
        observations=structured_from_observations(parsed.observations),
        current_task=parsed.current_task,
        suggested_response=parsed.suggested_response,
        thread_title=parsed.thread_title,
        extracted=[ExtractedValue(name=k, value=v) for k, v in parsed.extracted.items()],
    )


@pytest.mark.parametrize("text", TEXT_ANSWERS)
def test_text_to_structured_and_back(text: str) -> None:
    parsed = parse_observer_output(text, extractor_slugs=["city"])
    structured = from_parsed(text, ["city"])
    rendered = render_structured(structured, extractor_slugs=["city"])
    assert rendered.observations == parsed.observations
    assert (rendered.current_task, rendered.suggested_response, rendered.thread_title) == (
        parsed.current_task,
        parsed.suggested_response,
        parsed.thread_title,
    )
    assert rendered.extracted == parsed.extracted
    assert rendered == parse_observer_output(rendered.raw, extractor_slugs=["city"])


def test_render_groups_by_date_and_orders_by_time() -> None:
    out = StructuredObserverOutput(
        observations=[
            StructuredObservation(
                date=date(2026, 3, 15),
                time="18:30",
                priority="high",
                text="User ran the\n  half marathon",
                details=["2 h", " "],
            ),
            StructuredObservation(
                date=date(2026, 3, 2), time="9:05", priority="🟡", text="User started at a bakery"
            ),
            StructuredObservation(
                date=date(2026, 3, 2), time="08:00", priority="low", text="early"
            ),
        ],
        thread_title='"Maya\'s news"\nsecond line',
    )
    rendered = render_structured(out)
    assert rendered.observations == (
        "Date: Mar 2, 2026\n* 🟢 (08:00) early\n* 🟡 (09:05) User started at a bakery\n\n"
        "Date: Mar 15, 2026\n* 🔴 (18:30) User ran the half marathon\n  * -> 2 h"
    )
    assert rendered.thread_title == "Maya's news"
    assert rendered.current_task is None and not rendered.degenerate
    assert rendered == parse_observer_output(structured_to_text(out))


def test_extractor_values_follow_the_slugs() -> None:
    out = StructuredObserverOutput(
        extracted=[
            ExtractedValue(name="city", value=" Lisbon "),
            ExtractedValue(name="diet", value="vegan"),
            ExtractedValue(name="current-task", value="not an extractor"),
            ExtractedValue(name="city", value="Porto"),
            ExtractedValue(name="mood", value="  "),
        ]
    )
    assert render_structured(out, extractor_slugs=["city"]).extracted == {"city": "Lisbon"}
    assert render_structured(out).extracted == {"city": "Lisbon", "diet": "vegan"}
    assert render_structured(out).current_task is None
    for slugs in (["city"], ["city", "diet", "mood"]):
        text = structured_to_text(out, extractor_slugs=slugs)
        assert render_structured(out, extractor_slugs=slugs) == parse_observer_output(
            text, extractor_slugs=slugs
        )


def test_reflector_output_has_no_title() -> None:
    out = StructuredReflectorOutput(
        observations=[
            StructuredObservation(
                date=date(2026, 1, 1), time="00:00", priority="done", text="Year started"
            )
        ],
        suggested_response="Say happy new year",
    )
    rendered = render_structured(out)
    assert rendered.thread_title is None and rendered.extracted == {}
    assert rendered.suggested_response == "Say happy new year"
    assert rendered == parse_observer_output(structured_to_text(out))


def test_a_loop_is_degenerate_like_in_text_mode() -> None:
    line = StructuredObservation(
        date=date(2026, 1, 1),
        time="10:00",
        priority="high",
        text="User searched for the dance studio location again",
    )
    out = StructuredObserverOutput(observations=[line] * 120)
    rendered = render_structured(out)
    assert rendered.degenerate and rendered.observations == ""
    assert rendered == parse_observer_output(structured_to_text(out))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("time", "25:00", "HH:MM"),
        ("time", "noon", "HH:MM"),
        ("text", " \n ", "needs a text"),
        ("priority", "urgent", "priority"),
        ("date", "March 2nd", "date"),
    ],
)
def test_invalid_observations_are_refused(field: str, value: str, message: str) -> None:
    good = {"date": "2026-03-02", "time": "09:00", "priority": "high", "text": "x"}
    with pytest.raises(ValidationError, match=message):
        StructuredObservation.model_validate({**good, field: value})


def test_json_schema_names_every_field() -> None:
    schema = StructuredObserverOutput.model_json_schema()
    item = schema["$defs"]["StructuredObservation"]
    assert set(item["required"]) == {"date", "time", "priority", "text"}
    assert item["properties"]["priority"]["enum"] == ["high", "medium", "low", "done"]
    assert set(schema["properties"]) == {
        "observations",
        "current_task",
        "suggested_response",
        "thread_title",
        "extracted",
    }
    assert '"additionalProperties": {' not in json.dumps(schema)  # no free-form maps


def test_unrepresentable_lines_are_refused() -> None:
    with pytest.raises(ValueError, match="line 2"):
        structured_from_observations("Date: Mar 2, 2026\n- a plain note")
    with pytest.raises(ValueError, match="line 1"):
        structured_from_observations("* 🔴 (09:00) no date header above")


_words = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="<"), max_size=40
)
_obs = st.builds(
    StructuredObservation,
    date=st.dates(min_value=date(2000, 1, 1), max_value=date(2100, 1, 1)),
    time=st.builds(lambda h, m: f"{h}:{m:02d}", st.integers(0, 23), st.integers(0, 59)),
    priority=st.sampled_from(["high", "medium", "low", "done", "🔴", "✅"]),
    text=_words.filter(lambda t: bool(t.split())),
    details=st.lists(_words, max_size=2),
)


@settings(max_examples=60, deadline=None)
@given(
    observations=st.lists(_obs, max_size=6),
    task=st.none() | _words,
    title=st.none() | _words,
    value=_words,
)
def test_render_equals_parsing_the_equivalent_text(
    observations: list[StructuredObservation], task: str | None, title: str | None, value: str
) -> None:
    out = StructuredObserverOutput(
        observations=observations,
        current_task=task,
        thread_title=title,
        extracted=[ExtractedValue(name="fact", value=value)],
    )
    text = structured_to_text(out, extractor_slugs=["fact"])
    assert render_structured(out, extractor_slugs=["fact"]) == parse_observer_output(
        text, extractor_slugs=["fact"]
    )
