"""Trust, round two: judging replies by what they say, not by their shape.

One test per finding of the campaign against the judges: number-padded and filler
reflections, a lazy Observer, an Observer that re-emits the log, and a configuration the
engine accepts whose honest observations the size cap rejected.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om._core.retention import check_reflection
from langchain_om._core.tokens import TokenCounter
from langchain_om.errors import OMConfigError
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model

COUNT = TokenCounter().count_text

_FACT_WORDS = ["tea", "bus", "gym", "park", "cake", "rain", "book", "song", "walk"]


def _plain_log(n: int = 27) -> str:
    """Facts made of common words and small numbers only (no names, no codes)."""
    lines = ["Date: Nov 2, 2026"]
    for k in range(n):
        word = _FACT_WORDS[k % len(_FACT_WORDS)]
        lines.append(f"* 🔴 (10:{k:02d}) User wants the {word} at {k % 9 + 1} on day {k % 5 + 2}")
        lines.append(f"* 🟡 (10:{k:02d}) Assistant noted the {word} plan")
    return "\n".join(lines)


def _judge(log: str, reflection: str) -> Any:
    return check_reflection(
        log,
        reflection,
        input_tokens=COUNT(log),
        output_tokens=COUNT(reflection),
        target_tokens=COUNT(log) // 2,
    )


def test_a_reflection_of_numbered_lines_does_not_replace_a_log_of_plain_facts() -> None:
    log = _plain_log()
    numbered = "\n".join(
        ["Date: Nov 2, 2026"] + [f"* 🔴 (10:00) Note {k} {k + 1}" for k in range(27)]
    )
    verdict = _judge(log, numbered)
    assert not verdict.accepted and verdict.reason == "lost-facts"


def test_a_reflection_that_pads_the_red_lines_with_filler_is_rejected() -> None:
    log = _plain_log()
    kept = [line for line in log.splitlines() if "🔴" in line or line.startswith("Date:")]
    padded = "\n".join(kept + [f"* 🟡 (11:{k:02d}) User likes item {k}" for k in range(19)])
    # shorter than the log (the 🟡 lines went), keeps every 🔴 fact, but a third is filler
    assert COUNT(padded) < COUNT(log)
    verdict = _judge(log, padded)
    assert not verdict.accepted and verdict.reason == "invented"
    # the same reflection without the filler is an honest one
    assert _judge(log, "\n".join(kept)).accepted


def _conversation(turns: int) -> list[BaseMessage]:
    items = ["lamp", "desk", "rug", "shelf", "sofa", "kettle", "mirror"]
    rooms = ["office", "kitchen", "hall", "bedroom", "bath"]
    return [
        HumanMessage(
            f"Order {i + 1}: I bought a {items[i % 7]} for the {rooms[i % 5]} at {20 + i} EUR "
            f"from the shop on Rua {i + 1}, and it arrives on day {i % 28 + 1}.",
            id=f"m{i}",
        )
        for i in range(turns)
    ]


def test_a_lazy_observer_removes_nothing_from_the_window() -> None:
    lazy = FunctionChatModel(
        function=lambda m, i: "<observations>\n* 🟡 (10:00) User talked.\n</observations>"
    )
    memory = ObservationalMemory(
        model=lazy, observation={"message_tokens": 400, "buffer_tokens": False}
    )
    events: list[Any] = []
    memory.on_debug_event = events.append
    for start in range(0, 70, 10):
        memory.add_messages("t", _conversation(70)[start : start + 10])
    snap = memory.status(thread_id="t")
    assert len(snap.window) == 70 and not snap.observations.strip()
    reasons = {e.reason for e in events if e.type == "data-om-observation-failed"}
    assert "uninformative" in reasons or "ungrounded" in reasons


def _repeating(messages: list[BaseMessage], info: RecordedCall) -> str:
    """An Observer that writes the previous log again before its new lines."""
    prompt = messages[-1].text
    previous = ""
    if "## Previous Observations" in prompt:
        previous = prompt.split("## Previous Observations")[1].split("These are already")[0]
    good = memory_model().function
    assert good is not None
    fresh = str(good(messages, info)).split("<observations>")[1].split("</observations>")[0]
    return f"<observations>\n{previous.strip()}\n{fresh.strip()}\n</observations>"


def test_an_observer_that_re_emits_the_log_keeps_observing() -> None:
    observer = FunctionChatModel(function=_repeating)
    memory = ObservationalMemory(
        model=observer,
        observation={"message_tokens": 300, "buffer_tokens": False},
        reflection={"observation_tokens": 20_000},
    )
    for start in range(0, 70, 5):
        memory.add_messages("t", _conversation(70)[start : start + 5])
    snap = memory.status(thread_id="t")
    assert snap.record["observed_message_count"] > 35  # the cursor does not stick (it did at 14)
    lines = [line for line in snap.observations.splitlines() if line.startswith("*")]
    assert len(lines) == len(set(lines))  # no line twice in the log


def test_a_configuration_the_engine_accepts_commits_an_honest_observation() -> None:
    # What the campaign used: accepted at construction, then every honest reply was rejected.
    with pytest.raises(OMConfigError, match="at least 334"):
        ObservationalMemory(
            model=memory_model(),
            observation={"message_tokens": 2_000, "buffer_tokens": False},
            reflection={"observation_tokens": 100},
        )
    memory = ObservationalMemory(
        model=memory_model(words=6),
        observation={"message_tokens": 2_000, "buffer_tokens": False},
        reflection={"observation_tokens": 400},
    )
    note = (
        " The delivery note says to leave it with the neighbour when nobody is at home, and"
        " to ring twice because the bell on the second floor is broken since the storm."
    )
    batch = [m.model_copy(update={"content": f"{m.text}{note}"}) for m in _conversation(28)]
    tokens = memory.counter.count_messages(batch)
    events: list[Any] = []
    memory.on_debug_event = events.append
    snap = memory.observe(thread_id="t", messages=batch)
    assert tokens <= 2_000
    assert snap.record["observed_message_count"] == 28 and snap.observations.strip()
    (end,) = [
        e
        for e in events
        if e.type == "data-om-observation-end" and e.operation_type == "observation"
    ]
    assert 3 <= tokens / end.observation_tokens <= 6  # an honest compression, accepted
