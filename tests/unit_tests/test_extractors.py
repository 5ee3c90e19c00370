"""Extractors: named values the Observer keeps, with prior values, hooks and failures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_om import Extractor, ObservationalMemory, OMConfigError
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model


def observer(values: list[str]) -> FunctionChatModel:
    """An Observer whose lines quote the messages (so they are grounded), with the value."""
    observe = memory_model().function
    assert observe is not None

    def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
        value = values[min(info.index, len(values) - 1)]
        return f"{observe(messages, info)}\n<travel-preferences>{value}</travel-preferences>"

    return FunctionChatModel(function=reply)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "!!!", "instructions": "x"}, "no letters"),
        ({"name": "Current Task", "instructions": "x"}, "reserved"),
        ({"name": "Prefs", "instructions": "x", "schema": dict}, "pydantic model class"),
        ({"name": "Prefs", "instructions": "x", "metadata_key_path": "elsewhere.x"}, "extracted."),
    ],
)
def test_bad_extractors_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(OMConfigError, match=message) as info:
        Extractor(**kwargs)
    assert info.value.option == "observation.extract"


def test_duplicate_slugs_are_refused_at_construction() -> None:
    extract = [Extractor("Prefs", "a"), Extractor("prefs", "b")]
    with pytest.raises(OMConfigError, match="share the slug"):
        ObservationalMemory(model=observer(["x"]), observation={"extract": extract})


def test_values_are_kept_shown_next_time_and_reported() -> None:
    model = observer(["aisle seat", "window seat"])
    seen: list[dict[str, Any]] = []

    def hook(ctx: Mapping[str, Any]) -> str:
        seen.append(dict(ctx))
        return str(ctx["current"]).upper()

    prefs = Extractor("Travel Preferences", "Seat preferences.", on_extracted=hook)
    memory = ObservationalMemory(
        model=model, observation={"extract": [prefs], "buffer_tokens": False}
    )
    events: list[Any] = []
    memory.on_debug_event = events.append
    snap = memory.observe(thread_id="t", messages=[HumanMessage("I like the aisle seat")])
    assert snap.record["extracted"] == {"travel-preferences": "AISLE SEAT"}
    prompt = model.last_call.messages[-1].text
    assert "<travel-preferences>" in prompt and "Seat preferences." in prompt
    memory.observe(thread_id="t", messages=[HumanMessage("Actually, the window seat please")])
    assert "prior travel-preferences: AISLE SEAT" in model.last_call.messages[-1].text
    assert seen[1]["previous"] == "AISLE SEAT" and seen[1]["current"] == "window seat"
    ends = [e for e in events if e.type == "data-om-observation-end"]
    assert ends[-1].extracted_values == {"travel-preferences": "WINDOW SEAT"}


def test_a_failing_hook_records_a_failure_and_keeps_the_old_value() -> None:
    def broken(ctx: Mapping[str, Any]) -> str:
        raise ValueError("nope")

    prefs = Extractor("Travel Preferences", "Seat preferences.", on_extracted=broken)
    memory = ObservationalMemory(
        model=observer(["aisle"]), observation={"extract": [prefs], "buffer_tokens": False}
    )
    events: list[Any] = []
    memory.on_debug_event = events.append
    snap = memory.observe(thread_id="t", messages=[HumanMessage("I like green tea")])
    assert snap.record["extracted"] == {}
    end = [e for e in events if e.type == "data-om-observation-end"][-1]
    assert end.extraction_failures == [
        {"slug": "travel-preferences", "error": "nope", "reason": "extraction_failed"}
    ]
    assert "User said: I like green tea" in snap.observations


def test_custom_path_and_not_persisted() -> None:
    nested = Extractor("Travel Preferences", "x", metadata_key_path="extracted.user.travel")
    memory = ObservationalMemory(
        model=observer(["aisle"]), observation={"extract": [nested], "buffer_tokens": False}
    )
    snap = memory.observe(thread_id="t", messages=[HumanMessage("I prefer the aisle seat")])
    assert snap.record["extracted"] == {"user": {"travel": "aisle"}}

    transient = Extractor("Travel Preferences", "x", metadata_key_path=False)
    memory = ObservationalMemory(
        model=observer(["aisle"]), observation={"extract": [transient], "buffer_tokens": False}
    )
    said = [HumanMessage("I prefer the aisle seat")]
    assert memory.observe(thread_id="t", messages=said).record["extracted"] == {}


def test_buffered_chunks_carry_values_to_activation() -> None:
    prefs = Extractor("Travel Preferences", "Seat preferences.")
    memory = ObservationalMemory(
        model=observer(["aisle"]),
        observation={"extract": [prefs], "message_tokens": 200, "buffer_tokens": 50},
        background="manual",
    )
    window: list[BaseMessage] = []
    record = None
    for i in range(30):
        said = f"turn {i}: I compare aisle and window seats "
        window = window + [HumanMessage(said + "w " * 30, id=f"h{i}")]
        out = memory.step(thread_id="t", window=window, record=record)
        record, window = out.record, out.window
        memory.run_background()
        if out.record["extracted"]:
            break
    assert record is not None and record["extracted"] == {"travel-preferences": "aisle"}
