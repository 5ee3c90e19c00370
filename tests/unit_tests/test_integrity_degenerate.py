"""Repetition loops: short loops, loops that change a number per line, and faithful repetition."""

from __future__ import annotations

import pytest

from langchain_om._core.degenerate import (
    DOMINANT_MIN_REPEATS,
    MAX_COLLAPSED_REPEATS,
    MIN_CHARS,
    find_loop,
    is_degenerate,
    loop_key,
)
from langchain_om._core.observer import parse_observer_output
from tests import integrity_examples as ex


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("* ✅ (14:04) Caroline said she was off.", "caroline said she was off"),
        ("* ✅ (14:05) Caroline said she was off.", "caroline said she was off"),
        ("12. User said hi", "user said hi"),
        ("#7 User said hi", "user said hi"),
        ("Step 3: run the tests", "run the tests"),
        ("  * -> 🟡 retried at 9:15 am", "retried at"),
        ("- 🔴 Budget is 1,200 EUR", "budget is 1,200 eur"),
        ("Date: Nov 2, 2026", "date: nov 2, 2026"),
    ],
)
def test_loop_key_strips_bullets_numbering_marks_and_times(line: str, key: str) -> None:
    assert loop_key(line) == key


@pytest.mark.parametrize(
    ("name", "kind", "repeats"),
    [
        ("CAROLINE_LOOP", "run", 44),
        ("SHORT_LOOP", "run", 10),
        ("SHORT_BLOCK_LOOP", "run", 9),
        ("NUMBERED_LOOP", "run", 12),
    ],
)
def test_recorded_loops_are_caught(name: str, kind: str, repeats: int) -> None:
    text = getattr(ex, name)
    loop = find_loop(text)
    assert loop is not None
    assert (loop.kind, loop.repeats) == (kind, repeats)


def test_short_loops_are_well_under_the_old_length_floor() -> None:
    for text in (ex.SHORT_LOOP, ex.SHORT_BLOCK_LOOP, ex.NUMBERED_LOOP):
        assert len(text) < MIN_CHARS // 2
        assert is_degenerate(text)


def test_a_conversation_that_mentions_the_line_once_does_not_excuse_the_loop() -> None:
    assert is_degenerate(ex.CAROLINE_LOOP, source=ex.CAROLINE_SOURCE)


def test_a_polling_conversation_is_not_a_loop() -> None:
    assert not is_degenerate(ex.POLLING_INPUT)


@pytest.mark.parametrize(
    "name", ["POLLING_OBSERVED_DETAILED", "POLLING_OBSERVED_GROUPED", "GOOD_OBSERVATION"]
)
def test_faithful_observations_of_polling_pass_without_a_source(name: str) -> None:
    assert not is_degenerate(getattr(ex, name))


def test_time_only_polling_lines_are_spared_by_the_source_that_repeats_them() -> None:
    text = ex.POLLING_OBSERVED_TIME_ONLY
    assert is_degenerate(text)  # without the input, it looks exactly like a loop
    assert not is_degenerate(text, source=ex.POLLING_INPUT)
    # but a source that says it once does not
    assert is_degenerate(text, source="\n".join(ex.POLLING_INPUT.splitlines()[:5]))


def test_bounded_repetition_is_legitimate() -> None:
    line = "* 🟡 (10:{:02d}) Assistant re-ran the failing test: still red."
    legit = "\n".join(line.format(i) for i in range(MAX_COLLAPSED_REPEATS))
    prefix = "\n".join(f"* 🟡 (09:{i:02d}) fact number {i} about topic {i * 7}" for i in range(12))
    assert not is_degenerate(prefix + "\n" + legit)
    assert is_degenerate(prefix + "\n" + legit + "\n" + line.format(59))


def test_a_scattered_line_that_dominates_a_short_reply_is_a_loop() -> None:
    others = ["* 🟡 (10:00) User lives in Porto.", "* 🟡 (10:02) User has a dog named Rex."]
    same = "* 🟡 (10:{:02d}) Assistant greeted the user warmly again."
    lines = [same.format(i) if i % 2 else others[i // 2 % 2] + f" ({i})" for i in range(14)]
    loop = find_loop("\n".join(lines))
    assert loop is not None and loop.kind == "dominant"
    assert loop.repeats >= DOMINANT_MIN_REPEATS
    # short keys like "done" never dominate
    assert not is_degenerate("\n".join(["* -> done", "* -> ok"] * 3))


def test_parse_flags_a_short_loop_and_takes_the_source() -> None:
    looped = parse_observer_output(ex.SHORT_LOOP)
    assert looped.degenerate and looped.observations == ""
    time_only = "<observations>\n" + ex.POLLING_OBSERVED_TIME_ONLY + "\n</observations>"
    assert parse_observer_output(time_only).degenerate
    kept = parse_observer_output(time_only, source=ex.POLLING_INPUT)
    assert not kept.degenerate
    assert kept.observations.count("still pending") == 30


def test_a_looping_single_line_is_never_excused() -> None:
    text = "* 🟡 (10:00) " + "pending and " * 400
    assert is_degenerate(text, source=ex.POLLING_INPUT)
