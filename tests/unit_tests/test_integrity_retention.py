"""Only faithful reflections replace the log: a table of recorded reflections."""

from __future__ import annotations

import re

import pytest

from langchain_om._core.observer import ObserverOutput, parse_observer_output
from langchain_om._core.reflector import ReflectionLadder
from langchain_om._core.retention import MIN_RETENTION, check_reflection, key_facts
from langchain_om._core.tokens import get_default_counter
from langchain_om.errors import ReflectorOutputError
from tests import integrity_examples as ex

COUNT = get_default_counter().count_text


def _without(text: str, pattern: str) -> str:
    return "\n".join(line for line in text.splitlines() if not re.search(pattern, line))


LOOPING_REFLECTION = "Date: Nov 6, 2026\n" + "\n".join(
    f"* 🔴 (10:{i:02d}) User is moving to Porto and has a viewing on Nov 10, 2026."
    for i in range(12)
)

# (name, log, reflection, accepted, reason)
TABLE: list[tuple[str, str, str, bool, str | None]] = [
    ("move, 3x", ex.LOG_MOVE, ex.LOG_MOVE_REFLECTED, True, None),
    ("migration, 3.6x", ex.LOG_MIGRATION, ex.LOG_MIGRATION_REFLECTED, True, None),
    ("family, 3.5x", ex.LOG_FAMILY, ex.LOG_FAMILY_REFLECTED, True, None),
    ("move, extreme", ex.LOG_MOVE, ex.LOG_MOVE_EXTREME, True, None),
    ("one line", ex.LOG_MOVE, "* 🟡 (10:00) ok", False, "too-small"),
    (
        "one dated line",
        ex.LOG_FAMILY,
        "Date: Nov 10, 2026\n* 🔴 (08:30) Party on Nov 15.",
        False,
        "too-small",
    ),
    (
        "no dates",
        ex.LOG_MIGRATION,
        _without(ex.LOG_MIGRATION_REFLECTED, r"^Date:"),
        False,
        "lost-dates",
    ),
    (
        "no dates, move",
        ex.LOG_MOVE,
        _without(ex.LOG_MOVE_REFLECTED, r"^Date:"),
        False,
        "lost-dates",
    ),
    (
        "newest day gone",
        ex.LOG_MOVE,
        ex.LOG_MOVE_REFLECTED.split("\n\nDate: Nov 6")[0],
        False,
        "lost-dates",
    ),
    (
        "no red lines",
        ex.LOG_MIGRATION,
        _without(ex.LOG_MIGRATION_REFLECTED, "🔴"),
        False,
        "lost-priorities",
    ),
    (
        "red demoted",
        ex.LOG_FAMILY,
        ex.LOG_FAMILY_REFLECTED.replace("🔴", "🟡"),
        False,
        "lost-priorities",
    ),
    ("vague summary", ex.LOG_MOVE, ex.VAGUE_MOVE, False, "lost-facts"),
    ("looping", ex.LOG_MOVE, LOOPING_REFLECTION, False, "degenerate"),
    ("empty", ex.LOG_MOVE, "  \n", False, "empty"),
    ("bigger than the log", ex.LOG_MOVE, ex.LOG_MOVE + "\n* 🟡 (10:30) more", False, "not-smaller"),
]


@pytest.mark.parametrize(
    ("name", "log", "reflection", "accepted", "reason"), TABLE, ids=[row[0] for row in TABLE]
)
def test_recorded_reflections(
    name: str, log: str, reflection: str, accepted: bool, reason: str | None
) -> None:
    tokens_in, tokens_out = COUNT(log), COUNT(reflection) if reflection.strip() else 0
    verdict = check_reflection(
        log, reflection, input_tokens=tokens_in, output_tokens=tokens_out, target_tokens=tokens_in
    )
    assert (verdict.accepted, verdict.reason) == (accepted, reason), verdict.detail
    assert 0.0 <= verdict.retention <= 1.0
    if accepted:
        assert verdict.retention >= MIN_RETENTION
        assert verdict.kept_days >= 1


@pytest.mark.parametrize(
    ("log", "reflection"),
    [
        (ex.LOG_MOVE, ex.LOG_MOVE_REFLECTED),
        (ex.LOG_MIGRATION, ex.LOG_MIGRATION_REFLECTED),
        (ex.LOG_FAMILY, ex.LOG_FAMILY_REFLECTED),
    ],
)
def test_the_honest_compressions_are_3_to_6_times_smaller(log: str, reflection: str) -> None:
    assert 25 <= len(log.splitlines()) <= 40
    assert 3.0 <= COUNT(log) / COUNT(reflection) <= 6.0


def test_the_vague_summary_keeps_the_dates_and_marks_but_not_the_facts() -> None:
    verdict = check_reflection(
        ex.LOG_MOVE,
        ex.VAGUE_MOVE,
        input_tokens=COUNT(ex.LOG_MOVE),
        output_tokens=COUNT(ex.VAGUE_MOVE),
        target_tokens=COUNT(ex.LOG_MOVE),
    )
    assert verdict.kept_days == verdict.days == 3
    assert verdict.retention < 0.3


def test_key_facts() -> None:
    facts = key_facts(ex.LOG_MOVE)
    assert {"porto", "lyon", "farfetch", "1200", "1450", "3000", "2027", "inês", "nif"} <= facts
    assert not {"user", "assistant", "nov", "jan", "march", "the"} & facts
    assert "istanbul" not in facts
    migration = key_facts(ex.LOG_MIGRATION)
    assert {"acme/billing", "#billing-ops", "pg_upgrade", "0087", "02:00"} <= migration
    # without 🔴 lines every line counts
    assert key_facts("* 🟡 (10:00) Assistant read README.md for Zed", high_only=False) == {
        "readme.md",
        "zed",
    }
    assert key_facts("* 🟡 (10:00) Assistant read README.md for Zed") == set()


def test_a_log_without_facts_or_dates_is_judged_by_size() -> None:
    words = "apples pears plums figs kiwis limes dates grapes melons cherries".split()
    log = "\n".join(f"* 🟡 user likes {a} more than {b}" for a in words for b in words[:4])
    kept = "\n".join(f"* 🟡 user likes {a} a lot" for a in words)
    verdict = check_reflection(
        log, kept, input_tokens=COUNT(log), output_tokens=COUNT(kept), target_tokens=COUNT(log)
    )
    assert verdict.accepted and verdict.days == 0


def test_the_size_floor_follows_the_target() -> None:
    small = "Date: Nov 6, 2026\n* 🔴 (10:03) Viewing Nov 10, 2026 at 17:00 in Porto, 1,390 EUR."
    args = {"input_tokens": 2_000, "output_tokens": COUNT(small)}
    assert check_reflection(ex.LOG_MOVE, small, target_tokens=100, **args).reason != "too-small"
    assert check_reflection(ex.LOG_MOVE, small, target_tokens=2_000, **args).reason == "too-small"


# ------------------------------------------------------------------------------ the ladder


def _out(text: str) -> ObserverOutput:
    return parse_observer_output("<observations>\n" + text + "\n</observations>")


def _ladder(log: str) -> ReflectionLadder:
    return ReflectionLadder(
        start_level=1, target_tokens=COUNT(log) // 2, input_tokens=COUNT(log), input_text=log
    )


def test_a_one_line_reflection_moves_down_the_ladder() -> None:
    ladder = _ladder(ex.LOG_MOVE)
    assert ladder.record(1, _out("* 🟡 (10:00) ok"), 7) == "unfaithful"
    assert ladder.attempts[0].reason == "too-small"
    assert ladder.next_level() == 2
    good = _out(ex.LOG_MOVE_REFLECTED)
    assert ladder.record(2, good, COUNT(good.observations)) == "fits"
    result = ladder.result()
    assert result.level == 2 and result.retention is not None and result.retention >= 0.9
    assert "Casa Invicta" in result.text


def test_when_every_level_fails_the_ladder_says_why() -> None:
    ladder = _ladder(ex.LOG_MOVE)
    script = [
        _out("* 🟡 (10:00) ok"),
        _out(ex.VAGUE_MOVE),
        _out(LOOPING_REFLECTION),
        _out(_without(ex.LOG_MOVE_REFLECTED, r"^Date:")),
    ]
    for attempt in script:
        level = ladder.next_level()
        assert level is not None
        ladder.record(level, attempt, COUNT(attempt.observations))
    assert ladder.done
    failure = ladder.failure()
    assert failure is not None
    assert failure.reasons == ("too-small", "lost-facts", "degenerate", "lost-dates")
    assert failure.reason == "lost-dates" and failure.attempts == 4
    assert failure.retention is not None and failure.retention > 0.9  # the dateless one
    with pytest.raises(ReflectorOutputError) as info:
        ladder.result()
    assert info.value.reason == "lost-dates"
    assert "Porto" not in str(info.value)


def test_a_reflection_larger_than_its_input_is_never_committed() -> None:
    ladder = ReflectionLadder(
        start_level=1, target_tokens=100, input_tokens=500, max_attempts=1, input_text="x"
    )
    assert ladder.record(1, _out(ex.LOG_MOVE), 300_000) == "not_smaller"
    assert ladder.failure() is not None
    with pytest.raises(ReflectorOutputError) as info:
        ladder.result()
    assert info.value.reason == "not-smaller"


def test_without_the_log_text_the_ladder_keeps_its_old_judgement() -> None:
    ladder = ReflectionLadder(start_level=1, target_tokens=100, input_tokens=500)
    assert ladder.record(1, _out("* 🟡 (10:00) ok"), 7) == "fits"
    assert ladder.result().retention is None
    assert ladder.failure() is None
