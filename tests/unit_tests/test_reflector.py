from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage, SystemMessage

from langchain_om._core.observer import ObserverOutput, parse_observer_output
from langchain_om._core.observer_prompts import OBSERVATION_FORMAT_GUIDE
from langchain_om._core.record import make_group, new_record
from langchain_om._core.reflector import (
    COMPRESSION_GUIDANCE,
    MAX_ATTEMPTS,
    MAX_COMPRESSION_LEVEL,
    REFLECTOR_SYSTEM_PROMPT,
    ReflectionLadder,
    apply_reflection,
    buffered_reflection_target,
    build_reflector_messages,
    churn_guard_after,
    compression_start_level,
    select_reflection_slice,
    should_reflect,
)
from langchain_om._core.types import BufferedChunk, ObservationGroup, OMRecord
from langchain_om.errors import ReflectorOutputError

NOW = "2026-11-30T12:00:00+00:00"


def output(text: str, *, suggested: str | None = None) -> ObserverOutput:
    raw = f"<observations>\n{text}\n</observations>"
    if suggested:
        raw += f"\n<suggested-response>\n{suggested}\n</suggested-response>"
    return parse_observer_output(raw)


def log_lines(n: int, *, tag: str = "fact") -> str:
    lines = ["Date: Nov 28, 2026"]
    lines += [
        f"* 🔴 (09:{i % 60:02d}) User states {tag} number {i} about topic {i * 7}" for i in range(n)
    ]
    return "\n".join(lines)


def degenerate_output() -> ObserverOutput:
    line = "* 🟡 (10:00) The assistant repeated the same observation again and again"
    text = "Date: Nov 28, 2026\n" + "\n".join([line] * 200)
    out = output(text)
    return out


# ---------------------------------------------------------------------------- prompts


def test_system_prompt_embeds_format_guide_and_rules() -> None:
    assert OBSERVATION_FORMAT_GUIDE.strip() in REFLECTOR_SYSTEM_PROMPT
    for needle in ("<observations>", "<current-task>", "<suggested-response>", "✅", "🔴", "Date:"):
        assert needle in REFLECTOR_SYSTEM_PROMPT
    lowered = REFLECTOR_SYSTEM_PROMPT.lower()
    assert "older" in lowered and "supersede" in lowered and "merge" in lowered


def test_messages_shape_and_content() -> None:
    msgs = build_reflector_messages(
        observations="Date: Nov 28, 2026\n* 🔴 User lives in Lyon",
        level=2,
        instruction="Always keep pet names.",
        target_tokens=1234,
        guidance="Focus on the travel plans.",
    )
    assert [type(m) for m in msgs] == [SystemMessage, HumanMessage]
    system, human = (str(m.content) for m in msgs)
    assert system.startswith(REFLECTOR_SYSTEM_PROMPT)
    assert system.endswith("## Custom Instructions\n\nAlways keep pet names.")
    assert human.startswith(
        "## Observations to Condense\n\nDate: Nov 28, 2026\n* 🔴 User lives in Lyon"
    )
    assert COMPRESSION_GUIDANCE[2] in human
    assert "1234 tokens" in human
    assert human.rstrip().endswith("## Specific Guidance\n\nFocus on the travel plans.")
    assert "<current-task>" in human  # hints requested


def test_messages_without_extras() -> None:
    msgs = build_reflector_messages(
        observations="x", level=0, instruction=None, target_tokens=10, skip_continuation_hints=True
    )
    system, human = (str(m.content) for m in msgs)
    assert system == REFLECTOR_SYSTEM_PROMPT
    assert "Custom Instructions" not in system
    assert "Specific Guidance" not in human
    assert not any(g and g in human for g in COMPRESSION_GUIDANCE.values())
    assert "Output only the <observations> block" in human


def test_compression_guidance_levels() -> None:
    assert sorted(COMPRESSION_GUIDANCE) == [0, 1, 2, 3, 4]
    assert COMPRESSION_GUIDANCE[0] == ""
    for level, fraction in [(1, "8/10"), (2, "6/10"), (3, "4/10"), (4, "2/10")]:
        assert fraction in COMPRESSION_GUIDANCE[level]
    assert "oldest half" in COMPRESSION_GUIDANCE[3]
    assert "tool-call sequence" in COMPRESSION_GUIDANCE[4]
    assert MAX_COMPRESSION_LEVEL == 4 and MAX_ATTEMPTS == 4


@pytest.mark.parametrize(
    ("model_id", "level"),
    [
        ("google/gemini-2.5-flash", 2),
        ("google_genai:gemini-2.5-flash-lite", 2),
        ("models/Gemini-2.5-Flash", 2),
        ("openai/gpt-5-mini", 1),
        ("google/gemini-2.5-pro", 1),
        (None, 1),
        ("", 1),
    ],
)
def test_compression_start_level(model_id: str | None, level: int) -> None:
    assert compression_start_level(model_id) == level


# ---------------------------------------------------------------------------- ladder


def test_ladder_fits_first_attempt() -> None:
    ladder = ReflectionLadder(start_level=1, target_tokens=100, input_tokens=500)
    assert ladder.next_level() == 1
    assert ladder.record(1, output(log_lines(3), suggested="Ask about Lyon"), 40) == "fits"
    assert ladder.next_level() is None and ladder.done
    result = ladder.result()
    assert result.fits and result.tokens == 40 and result.level == 1 and result.attempts == 1
    assert result.text == log_lines(3)
    assert result.suggested_response == "Ask about Lyon"
    with pytest.raises(ValueError):
        ladder.record(2, output("x"), 1)


def test_ladder_escalates_and_fits_third() -> None:
    ladder = ReflectionLadder(start_level=1, target_tokens=100, input_tokens=500)
    seen = []
    sizes = iter([300, 150, 90, 10])
    while (level := ladder.next_level()) is not None:
        seen.append(level)
        ladder.record(level, output(log_lines(5, tag=str(level))), next(sizes))
    assert seen == [1, 2, 3]
    assert [a.verdict for a in ladder.attempts] == ["too_big", "too_big", "fits"]
    result = ladder.result()
    assert result.fits and result.level == 3 and result.tokens == 90 and result.attempts == 3
    assert "User states 3 number" in result.text  # the level-3 output


def test_ladder_never_fits_keeps_smallest() -> None:
    ladder = ReflectionLadder(start_level=1, target_tokens=100, input_tokens=500)
    sizes = {1: 400, 2: 180, 3: 250, 4: 200}
    levels = []
    while (level := ladder.next_level()) is not None:
        levels.append(level)
        ladder.record(level, output(log_lines(4, tag=f"L{level}")), sizes[level])
    assert levels == [1, 2, 3, 4]
    assert len(ladder.attempts) == MAX_ATTEMPTS
    result = ladder.result()
    assert not result.fits and result.tokens == 180 and result.level == 2
    assert "L2" in result.text


def test_ladder_stays_at_max_level() -> None:
    ladder = ReflectionLadder(start_level=3, target_tokens=10, input_tokens=500)
    levels = []
    while (level := ladder.next_level()) is not None:
        levels.append(level)
        ladder.record(level, output(log_lines(2)), 50)
    assert levels == [3, 4, 4, 4]


def test_gemini_ladder_starts_at_two() -> None:
    ladder = ReflectionLadder(
        start_level=compression_start_level("google/gemini-2.5-flash"),
        target_tokens=10,
        input_tokens=99,
    )
    levels = []
    while (level := ladder.next_level()) is not None:
        levels.append(level)
        ladder.record(level, output(log_lines(2)), 50)
    assert levels == [2, 3, 4, 4]


def test_empty_output_is_not_accepted() -> None:
    ladder = ReflectionLadder(start_level=1, target_tokens=100, input_tokens=500)
    assert ladder.record(1, output(""), 0) == "empty"
    assert ladder.next_level() == 2
    assert ladder.record(2, output(log_lines(3)), 120) == "too_big"
    assert ladder.record(3, output("   \n"), 0) == "empty"
    assert ladder.record(4, output(""), 0) == "empty"
    result = ladder.result()
    assert result.tokens == 120 and result.level == 2 and result.text.startswith("Date:")


def test_all_empty_raises() -> None:
    ladder = ReflectionLadder(start_level=1, target_tokens=100, input_tokens=500)
    while (level := ladder.next_level()) is not None:
        ladder.record(level, output(""), 0)
    assert len(ladder.attempts) == 4
    with pytest.raises(ReflectorOutputError) as info:
        ladder.result()
    assert "empty" in info.value.message
    assert "<observations>" in info.value.raw


def test_degenerate_output_skipped_and_escalates() -> None:
    bad = degenerate_output()
    ladder = ReflectionLadder(start_level=1, target_tokens=100, input_tokens=500)
    assert ladder.record(1, bad, 5) == "degenerate"  # small, but never a candidate
    assert ladder.next_level() == 2
    assert ladder.record(2, output(log_lines(3)), 300) == "too_big"
    assert ladder.record(3, bad, 3) == "degenerate"
    assert ladder.record(4, output(log_lines(2)), 250) == "too_big"
    result = ladder.result()
    assert result.tokens == 250 and result.level == 4


def test_all_degenerate_raises() -> None:
    ladder = ReflectionLadder(start_level=1, target_tokens=100, input_tokens=500)
    while (level := ladder.next_level()) is not None:
        ladder.record(level, degenerate_output(), 1)
    with pytest.raises(ReflectorOutputError):
        ladder.result()


def test_degenerate_flag_alone_is_rejected() -> None:
    flagged = ObserverOutput(
        observations="Date: Nov 28, 2026\n* 🔴 fine looking line",
        current_task=None,
        suggested_response=None,
        thread_title=None,
        extracted={},
        degenerate=True,
        raw="...",
    )
    ladder = ReflectionLadder(start_level=1, target_tokens=100, input_tokens=500)
    assert ladder.record(1, flagged, 5) == "degenerate"


def test_ladder_result_before_any_attempt_raises() -> None:
    with pytest.raises(ReflectorOutputError):
        ReflectionLadder(start_level=1, target_tokens=1, input_tokens=1).result()
    with pytest.raises(ValueError):
        ReflectionLadder(start_level=1, target_tokens=1, input_tokens=1, max_attempts=0)


@settings(max_examples=150, deadline=None)
@given(
    start=st.integers(0, 4),
    target=st.integers(1, 500),
    script=st.lists(
        st.tuples(st.sampled_from(["ok", "empty", "degenerate"]), st.integers(0, 1000)),
        min_size=4,
        max_size=4,
    ),
)
def test_ladder_properties(start: int, target: int, script: list[tuple[str, int]]) -> None:
    ladder = ReflectionLadder(start_level=start, target_tokens=target, input_tokens=1000)
    levels: list[int] = []
    step = iter(script)
    while (level := ladder.next_level()) is not None:
        kind, size = next(step)
        levels.append(level)
        out = {
            "ok": lambda: output(log_lines(2)),
            "empty": lambda: output(""),
            "degenerate": degenerate_output,
        }[kind]()
        ladder.record(level, out, size)
    assert 1 <= len(levels) <= MAX_ATTEMPTS
    assert levels == [min(start + i, MAX_COMPRESSION_LEVEL) for i in range(len(levels))]
    usable = [a for a in ladder.attempts if a.verdict in ("fits", "too_big")]
    if not usable:
        with pytest.raises(ReflectorOutputError):
            ladder.result()
        return
    result = ladder.result()
    assert result.text.strip()
    if any(a.verdict == "fits" for a in ladder.attempts):
        assert result.fits and result.tokens < target
        assert ladder.attempts[-1].verdict == "fits"  # stopped at the first fit
    else:
        assert result.tokens == min(a.tokens for a in usable)


# ---------------------------------------------------------------------------- triggers


def test_should_reflect_and_churn_guard() -> None:
    assert not should_reflect(999, 1000, None)
    assert should_reflect(1000, 1000, None)
    assert should_reflect(1500, 1000, 1400)
    assert not should_reflect(1500, 1000, 1500)

    # failed reflection: suppress at the unchanged size
    assert churn_guard_after(None, 1000, 1500) == 1500
    assert not should_reflect(1500, 1000, churn_guard_after(None, 1000, 1500))
    # committed but still over the threshold
    assert churn_guard_after(1200, 1000, 1200) == 1200
    assert churn_guard_after(800, 1000, 1100) == 1100  # tail kept it over
    # committed and fits: guard cleared
    assert churn_guard_after(600, 1000, 700) is None
    # the log grows afterwards: reflection allowed again
    assert should_reflect(1600, 1000, 1500)


def test_buffered_reflection_target() -> None:
    assert buffered_reflection_target(1000) == 750
    assert buffered_reflection_target(0) == 0


# ---------------------------------------------------------------------------- applying


def group(
    gid: str, tokens: int, *, rng: tuple[str, str] | None = None, **extra: object
) -> ObservationGroup:
    g = make_group(
        text=f"Date: Nov 2{len(gid) % 9}, 2026\n* 🔴 group {gid}",
        tokens=tokens,
        message_ids=list(rng) if rng else [],
        observed_at=NOW,
        group_id=gid,
    )
    g.update(extra)  # type: ignore[typeddict-item]
    return g


def make_record(groups: list[ObservationGroup]) -> OMRecord:
    rec = new_record(thread_id="t1", resource_id="u1", now=NOW)
    rec["groups"] = groups
    rec["observation_tokens"] = sum(g["tokens"] for g in groups)
    rec["generation"] = 2
    rec["hints"] = {"current_task": "Plan the Lyon trip", "suggested_response": "old"}
    chunk: BufferedChunk = {
        "id": "c1",
        "text": "Date: Nov 30, 2026\n* 🟡 buffered",
        "tokens": 7,
        "message_ids": ["m90", "m91"],
        "message_tokens": 300,
        "created_at": NOW,
        "hints": {},
    }
    rec["buffered"] = [chunk]
    rec["observed_message_count"] = 42
    rec["extracted"] = {"city": "Lyon"}
    return rec


def test_apply_reflection_replaces_prefix() -> None:
    groups = [
        group("a", 100, rng=("m1", "m5")),
        group("r0", 80, rng=("m6", "m9"), kind="reflection", sources=["x", "y"]),
        group("c", 50, rng=None),
        group("d", 60, rng=("m20", "m25")),
        group("e", 70, rng=("m26", "m30")),
    ]
    rec = make_record(groups)
    before = copy.deepcopy(rec)

    out = apply_reflection(
        rec,
        text="Date: Nov 28, 2026\n* 🔴 merged",
        tokens=40,
        covered_group_ids=["a", "r0", "c"],
        now="2026-12-01T00:00:00+00:00",
        new_group_id="new1",
        suggested_response="Ask about hotels",
    )
    assert rec == before  # not mutated
    assert [g["id"] for g in out["groups"]] == ["new1", "d", "e"]
    new = out["groups"][0]
    assert new["kind"] == "reflection"
    assert new["text"] == "Date: Nov 28, 2026\n* 🔴 merged" and new["tokens"] == 40
    assert new["sources"] == ["a", "r0", "c"]  # one level: the record stays bounded
    assert new["range"] == ["m1", "m9"]
    assert new["observed_at"] == "2026-12-01T00:00:00+00:00"
    assert out["groups"][1:] == groups[3:]
    assert out["generation"] == 3
    assert out["observation_tokens"] == 40 + 60 + 70
    assert out["hints"] == {
        "current_task": "Plan the Lyon trip",
        "suggested_response": "Ask about hotels",
    }
    assert out["buffered"] == rec["buffered"]
    assert out["observed_message_count"] == 42 and out["extracted"] == {"city": "Lyon"}
    assert out["updated_at"] == "2026-12-01T00:00:00+00:00"
    # the new record does not share mutable parts with the old one
    out["groups"][1]["text"] = "changed"
    out["buffered"][0]["text"] = "changed"
    assert rec == before


def test_apply_reflection_keeps_hint_without_suggestion_and_whole_log() -> None:
    rec = make_record([group("a", 10, rng=("m1", "m2")), group("b", 20)])
    out = apply_reflection(
        rec,
        text="t",
        tokens=5,
        covered_group_ids=["a", "b"],
        now=NOW,
        new_group_id="g",
        suggested_response=None,
    )
    assert out["hints"]["suggested_response"] == "old"
    assert [g["id"] for g in out["groups"]] == ["g"]
    assert out["groups"][0]["range"] == ["m1", "m2"]
    assert out["observation_tokens"] == 5


def test_apply_reflection_range_none_when_unknown() -> None:
    rec = make_record([group("a", 10), group("b", 20)])
    out = apply_reflection(
        rec,
        text="t",
        tokens=5,
        covered_group_ids=["a"],
        now=NOW,
        new_group_id="g",
        suggested_response="",
    )
    assert out["groups"][0]["range"] is None
    assert out["hints"]["suggested_response"] == "old"


def test_apply_reflection_clears_consumed_buffered_reflection() -> None:
    rec = make_record([group("a", 10), group("b", 20), group("c", 5)])
    rec["buffered_reflection"] = {
        "id": "br",
        "text": "t",
        "tokens": 4,
        "input_tokens": 30,
        "group_ids": ["a", "b"],
        "created_at": NOW,
    }
    out = apply_reflection(
        rec,
        text="t",
        tokens=4,
        covered_group_ids=["a", "b"],
        now=NOW,
        new_group_id="g",
        suggested_response=None,
    )
    assert out["buffered_reflection"] is None
    assert rec["buffered_reflection"] is not None
    assert [g["id"] for g in out["groups"]] == ["g", "c"]


@pytest.mark.parametrize("covered", [[], ["b"], ["a", "c"], ["a", "b", "c", "z"], ["b", "a"]])
def test_apply_reflection_rejects_non_prefix(covered: list[str]) -> None:
    rec = make_record([group("a", 10), group("b", 20), group("c", 5)])
    with pytest.raises(ValueError):
        apply_reflection(
            rec,
            text="t",
            tokens=1,
            covered_group_ids=covered,
            now=NOW,
            new_group_id="g",
            suggested_response=None,
        )


# ---------------------------------------------------------------------------- slicing


def test_select_slice_examples() -> None:
    gs = [group(f"g{i}", t) for i, t in enumerate([100, 100, 100, 100])]
    assert select_reflection_slice(gs, 200) == ["g0", "g1"]
    assert select_reflection_slice(gs, 240) == ["g0", "g1"]  # 300 is further from 240 than 200
    assert select_reflection_slice(gs, 260) == ["g0", "g1", "g2"]
    assert select_reflection_slice(gs, 10_000) == ["g0", "g1", "g2"]  # newest group stays out
    assert select_reflection_slice(gs, 0) == ["g0"]
    assert select_reflection_slice(gs[:1], 10) == ["g0"]
    assert select_reflection_slice([], 100) == []


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 500), min_size=1, max_size=12), st.integers(-10, 3000))
def test_select_slice_properties(sizes: list[int], budget: int) -> None:
    gs = [group(f"g{i}", t) for i, t in enumerate(sizes)]
    ids = select_reflection_slice(gs, budget)
    assert ids == [g["id"] for g in gs[: len(ids)]]  # a prefix
    assert len(ids) >= 1
    if len(gs) > 1:
        assert len(ids) < len(gs)
    total = sum(g["tokens"] for g in gs[: len(ids)])
    if len(ids) > 1:  # adding the last group did not overshoot more than stopping short
        before = total - gs[len(ids) - 1]["tokens"]
        assert before < budget and total - budget <= budget - before
