from __future__ import annotations

import copy
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import SystemMessage

from langchain_om._core import render as render_mod
from langchain_om._core.dates import format_date
from langchain_om._core.record import make_group, new_record
from langchain_om._core.render import (
    MEMORY_PREAMBLE,
    MemoryContext,
    annotate_relative_time,
    render_memory,
)
from langchain_om._core.tokens import TokenCounter
from langchain_om._core.types import Hints, ObservationGroup, OMRecord
from langchain_om.errors import OMUsageError

NOW = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)
TODAY = NOW.date()


def group(
    gid: str, text: str, *, rng: list[str] | None = None, kind: str = "observation"
) -> ObservationGroup:
    g = make_group(
        text=text, tokens=len(text) // 4, message_ids=rng or [], observed_at="x", group_id=gid
    )
    if kind == "reflection":
        g["kind"] = "reflection"
    return g


def record(groups: list[ObservationGroup], hints: Hints | None = None, tz: str = "UTC") -> OMRecord:
    rec = new_record(thread_id="t", resource_id=None, timezone=tz, now="2026-11-01T00:00:00+00:00")
    rec["groups"] = groups
    rec["observation_tokens"] = sum(g["tokens"] for g in groups)
    rec["hints"] = hints or {}
    return rec


G1 = group("g1", "Date: Nov 10, 2026\n* 🔴 (09:00) User lives in Lyon\n* 🟡 (09:05) User likes tea")
G2 = group("g2", "Date: Nov 11, 2026\n* ✅ (10:00) Booked the train")
G3 = group("g3", "Date: Nov 27, 2026\n* 🔴 (08:00) User will fly to Rome (meaning Nov 29, 2026)")


# ---------------------------------------------------------------------------- structure


def test_empty_record_renders_nothing() -> None:
    ctx = render_memory(record([]), now=NOW)
    assert ctx.blocks == [] and ctx.text == "" and ctx.is_empty
    with pytest.raises(OMUsageError):
        ctx.to_system_message()


def test_block_layout() -> None:
    hints: Hints = {
        "current_task": "Plan Rome",
        "suggested_response": "Ask about hotels",
        "thread_title": "Trips",
    }
    ctx = render_memory(record([G1, G2], hints), now=NOW)
    assert len(ctx.blocks) == 5
    assert ctx.blocks[0] == MEMORY_PREAMBLE
    assert ctx.blocks[1].startswith(
        "<observations>\nDate: Nov 10, 2026 (2 weeks ago)\n* 🔴 (09:00) User lives in Lyon"
    )
    assert ctx.blocks[2].startswith("Date: Nov 11, 2026 (2 weeks ago)")
    assert ctx.blocks[3] == "</observations>"
    assert ctx.blocks[4] == (
        "<current-task>\nPlan Rome\n</current-task>\n\n"
        "<suggested-response>\nAsk about hotels\n</suggested-response>"
    )
    assert "Trips" not in ctx.text
    assert ctx.text == "\n\n".join(ctx.blocks)


def test_hints_only_those_present_and_last() -> None:
    ctx = render_memory(record([G1], {"suggested_response": "Say hi"}), now=NOW)
    assert ctx.blocks[-1] == "<suggested-response>\nSay hi\n</suggested-response>"
    assert "<current-task>\n" not in ctx.text
    no_hints = render_memory(record([G1]), now=NOW)
    assert no_hints.blocks[-1] == "</observations>"
    assert no_hints.blocks == ctx.blocks[:-1]  # hints never leak into earlier blocks


def test_hints_only_record() -> None:
    ctx = render_memory(record([], {"current_task": "Keep going"}), now=NOW)
    assert ctx.blocks == [MEMORY_PREAMBLE, "<current-task>\nKeep going\n</current-task>"]


def test_hints_do_not_change_earlier_blocks() -> None:
    a = render_memory(record([G1, G2], {"current_task": "A"}), now=NOW)
    b = render_memory(record([G1, G2], {"current_task": "B", "suggested_response": "C"}), now=NOW)
    assert a.blocks[:-1] == b.blocks[:-1] and a.blocks[-1] != b.blocks[-1]


def test_system_message() -> None:
    ctx = render_memory(record([G1, G2], {"current_task": "A"}), now=NOW)
    msg = ctx.to_system_message()
    assert isinstance(msg, SystemMessage)
    # one text part per block; every part but the first opens with the blank line between
    first, *rest = ctx.blocks
    assert msg.content == [
        {"type": "text", "text": first},
        *({"type": "text", "text": "\n\n" + b} for b in rest),
    ]
    assert msg.response_metadata["langchain_om"] == {"kind": "memory"}
    assert msg.text == ctx.text == "\n\n".join(ctx.blocks)
    assert "</observations>\n\n<current-task>" in msg.text


def test_system_message_parts_are_prefix_stable() -> None:
    """A part depends only on its block: changed or dropped hints leave the earlier parts."""
    a = render_memory(record([G1, G2], {"current_task": "A"}), now=NOW).to_system_message()
    b = render_memory(record([G1, G2], {"current_task": "B"}), now=NOW).to_system_message()
    none = render_memory(record([G1, G2]), now=NOW).to_system_message()
    assert a.content[:-1] == b.content[:-1] == none.content
    assert a.content[-1] != b.content[-1]


def test_preamble_guidance() -> None:
    text = MEMORY_PREAMBLE.lower()
    assert "this conversation" in text  # not only "past conversations"
    assert "more recent" in text
    assert "likely happened" in text or "most likely happened" in text
    assert "latest message" in text
    assert "do not mention" in text


def test_recall_instructions_and_ranges() -> None:
    refl = group("r1", "Date: Nov 9, 2026\n* 🔴 older summary", rng=["m1", "m8"], kind="reflection")
    g = group("g9", "Date: Nov 27, 2026\n* 🟡 later", rng=["m9", "m12"])
    nr = group("g10", "Date: Nov 28, 2026\n* 🟢 no range")
    ctx = render_memory(
        record([refl, g, nr]), now=NOW, retrieval=True, recall_instructions="Use recall wisely."
    )
    assert ctx.blocks[0].startswith(MEMORY_PREAMBLE)
    assert ctx.blocks[0].endswith("Use recall wisely.")
    assert "_range" in ctx.blocks[0]
    assert ctx.blocks[1] == (
        "<observations>\n## Group `r1`\n_range: `m1:m8`_\n_kind: reflection_\n\n"
        "Date: Nov 9, 2026 (3 weeks ago)\n* 🔴 older summary"
    )
    assert ctx.blocks[2].startswith(
        "## Group `g9`\n_range: `m9:m12`_\n\n[2 weeks later]\nDate: Nov 27, 2026 (3 days ago)"
    )
    assert "_kind" not in ctx.blocks[2]
    assert ctx.blocks[3].startswith("## Group `g10`\n\nDate: Nov 28, 2026 (2 days ago)")

    plain = render_memory(record([refl, g]), now=NOW)
    assert "## Group" not in plain.text and "_range" not in plain.text
    forced = render_memory(record([refl, g]), now=NOW, show_ranges=True)
    assert "## Group `r1`" in forced.text
    hidden = render_memory(record([refl, g]), now=NOW, retrieval=True, show_ranges=False)
    assert "## Group" not in hidden.text


# ---------------------------------------------------------------------------- relative time


def test_date_labels_and_gaps_across_groups() -> None:
    ctx = render_memory(record([G1, G2, G3]), now=NOW)
    assert "Date: Nov 10, 2026 (2 weeks ago)" in ctx.blocks[1]
    assert "[2 weeks later]" not in ctx.blocks[2]  # Nov 10 -> Nov 11 is consecutive
    assert ctx.blocks[3].startswith("[2 weeks later]\nDate: Nov 27, 2026 (3 days ago)")


def test_gap_inside_group_and_today() -> None:
    text = "Date: Nov 20, 2026\n* 🟡 a\nDate: Nov 30, 2026\n* 🟡 b"
    out, last = annotate_relative_time(text, TODAY)
    assert out == (
        "Date: Nov 20, 2026 (1 week ago)\n* 🟡 a\n"
        "[1 week later]\nDate: Nov 30, 2026 (today)\n* 🟡 b"
    )
    assert last == date(2026, 11, 30)


def test_past_plan_likely_happened() -> None:
    ctx = render_memory(record([G3]), now=NOW)
    assert (
        "User will fly to Rome (meaning Nov 29, 2026 - yesterday, likely already happened)"
        in ctx.text
    )


@pytest.mark.parametrize(
    "verb",
    [
        "will visit",
        "plans to visit",
        "is going to visit",
        "wants to visit",
        "needs to visit",
        "is scheduled to visit",
        "intends to visit",
    ],
)
def test_future_intent_verbs(verb: str) -> None:
    line = f"* 🔴 (08:00) User {verb} the dentist (meaning Nov 20, 2026)"
    out, _ = annotate_relative_time(line, TODAY)
    assert out == (
        f"* 🔴 (08:00) User {verb} the dentist "
        "(meaning Nov 20, 2026 - 1 week ago, likely already happened)"
    )


def test_no_likely_for_future_dates_or_past_facts() -> None:
    future, _ = annotate_relative_time("* 🔴 User will fly to Oslo (meaning Dec 5, 2026)", TODAY)
    assert future == "* 🔴 User will fly to Oslo (meaning Dec 5, 2026 - in 5 days)"
    fact, _ = annotate_relative_time("* 🔴 User moved to Oslo (meaning Nov 2, 2026)", TODAY)
    assert fact == "* 🔴 User moved to Oslo (meaning Nov 2, 2026 - 4 weeks ago)"
    other, _ = annotate_relative_time("* 🟡 User will call (maybe on Friday)", TODAY)
    assert other == "* 🟡 User will call (maybe on Friday)"


def test_timezone_decides_today() -> None:
    late = datetime(2026, 11, 30, 23, 30, tzinfo=UTC)
    utc = render_memory(record([G3]), now=late)
    tokyo = render_memory(record([G3], tz="Asia/Tokyo"), now=late)  # already Dec 1 there
    assert "Date: Nov 27, 2026 (3 days ago)" in utc.text
    assert "Date: Nov 27, 2026 (4 days ago)" in tokyo.text
    override = render_memory(record([G3]), now=late, timezone="Asia/Tokyo")
    assert override.blocks == tokyo.blocks


# ---------------------------------------------------------------------------- stability


def test_same_day_is_byte_identical_and_new_day_changes_labels() -> None:
    rec = record([G1, G2, G3], {"current_task": "x"})
    morning = render_memory(rec, now=NOW.replace(hour=0, minute=1))
    evening = render_memory(rec, now=NOW.replace(hour=23, minute=59))
    assert morning == evening
    tomorrow = render_memory(rec, now=NOW + timedelta(days=1))
    assert tomorrow.blocks[0] == morning.blocks[0]
    assert tomorrow.blocks[3] != morning.blocks[3]


day_offsets = st.lists(st.integers(0, 60), min_size=1, max_size=4)
group_spec = st.tuples(
    day_offsets,
    st.lists(st.sampled_from(["🔴", "🟡", "🟢", "✅"]), min_size=1, max_size=3),
    st.booleans(),
)


def build_groups(specs: list[tuple[list[int], list[str], bool]]) -> list[ObservationGroup]:
    start = date(2026, 9, 1)
    groups = []
    for i, (offsets, marks, plan) in enumerate(specs):
        lines = []
        for off in offsets:
            d = start + timedelta(days=off)
            lines.append(f"Date: {format_date(d)}")
            lines += [f"* {m} (1{j}:00) event {i}-{j}" for j, m in enumerate(marks)]
            if plan:
                lines.append(
                    f"* 🔴 User plans to call Ann (meaning {format_date(d + timedelta(days=3))})"
                )
        groups.append(
            group(
                f"g{i:03d}",
                "\n".join(lines),
                rng=[f"m{i}a", f"m{i}b"],
                kind="reflection" if i == 0 and plan else "observation",
            )
        )
    return groups


@settings(max_examples=120, deadline=None)
@given(
    specs=st.lists(group_spec, min_size=1, max_size=6),
    extra=st.lists(group_spec, min_size=1, max_size=3),
    retrieval=st.booleans(),
    hints=st.fixed_dictionaries(
        {},
        optional={
            "current_task": st.text(min_size=1, max_size=20),
            "suggested_response": st.text(min_size=1, max_size=20),
        },
    ),
    hour=st.integers(0, 23),
)
def test_prefix_stable_under_append(
    specs: list[tuple[list[int], list[str], bool]],
    extra: list[tuple[list[int], list[str], bool]],
    retrieval: bool,
    hints: Hints,
    hour: int,
) -> None:
    groups = build_groups(specs + extra)
    old, new = groups[: len(specs)], groups
    now = datetime(2026, 11, 30, hour, tzinfo=UTC)
    before = render_memory(record(old, hints), now=now, retrieval=retrieval)
    after = render_memory(record(new, hints), now=now, retrieval=retrieval)
    k = 1 + len(old)  # preamble + one block per old group
    assert after.blocks[:k] == before.blocks[:k]
    assert len(after.blocks) == len(before.blocks) + len(extra)
    assert after.blocks[k + len(extra)] == "</observations>"
    # deterministic, and independent of the time of day
    again = render_memory(
        record(new, hints), now=now.replace(hour=(hour + 7) % 24), retrieval=retrieval
    )
    assert again == after
    assert isinstance(after, MemoryContext)
    # every group's text survives (annotations only add)
    for g in new:
        for line in g["text"].split("\n"):
            stem = line.split(" (meaning")[0]
            assert stem in after.text


# ---------------------------------------------------------------------------- memoised


def test_an_unchanged_record_is_rendered_once_per_day() -> None:
    rec = record([G1, G2], {"current_task": "book a hotel"})
    first = render_memory(rec, now=NOW, retrieval=True)
    # A reloaded copy (new objects, equal values) later the same day: the same context.
    again = render_memory(copy.deepcopy(rec), now=NOW + timedelta(hours=2), retrieval=True)
    assert again is first
    # The day, the options, a group's text, range or kind, or the hints: rendered anew, and
    # equal to a render of that record from scratch.
    changed: list[tuple[OMRecord, datetime, bool]] = [
        (rec, NOW + timedelta(days=1), True),
        (rec, NOW, False),
        (record([G1, group("g2", G2["text"] + "\n* 🟢 (10:05) Paid")]), NOW, True),
        (record([G1, group("g2", G2["text"], rng=["m1", "m9"])]), NOW, True),
        (record([G1, group("g2", G2["text"], kind="reflection")]), NOW, True),
        (record([G1, G2], {"current_task": "book a flight"}), NOW, True),
    ]
    for other, now, retrieval in changed:
        ctx = render_memory(other, now=now, retrieval=retrieval)
        assert ctx is not first and ctx.text != first.text
        render_mod._RENDERED.clear()
        assert render_memory(other, now=now, retrieval=retrieval).blocks == ctx.blocks


def _forget_renders() -> None:
    """Clear every render memo (contexts, annotated groups and lines, group sizes)."""
    render_mod._RENDERED.clear()
    render_mod._annotated_group.cache_clear()
    render_mod._LINE_LABELS.clear()
    render_mod._GROUP_SIZES.clear()


def test_memoised_groups_and_lines_render_as_from_scratch() -> None:
    lines = [
        "Date: Nov 2, 2026",
        "* 🔴 (09:00) User flies to Oslo on December 3, 2026",
        "* 🟡 (09:05) User will meet Ana (meaning Nov 10, 2026)",
    ]
    first = record([group("g1", "\n".join(lines))])
    # A reflection rewrites the log from lines already labelled once, plus new ones.
    rewritten = record(
        [
            group("r1", "\n".join([*lines, "* 🟢 (10:00) Paid in 2025"]), kind="reflection"),
            group("g2", "Date: Nov 29, 2026\n* 🔴 (11:00) Booked 2026-12-01"),
        ]
    )
    later = NOW + timedelta(days=40)
    warm: dict[tuple[int, datetime], list[str]] = {}
    _forget_renders()
    options: dict[str, Any] = {"max_observation_tokens": 10_000, "count": len}
    for i, rec in enumerate([first, rewritten, first, rewritten]):
        for now in (NOW, later):
            warm[i % 2, now] = render_memory(rec, now=now, retrieval=True, **options).blocks
    for (i, now), blocks in warm.items():
        _forget_renders()
        cold = render_memory([first, rewritten][i], now=now, retrieval=True, **options)
        assert cold.blocks == blocks
    # The day relabels the same lines.
    assert warm[1, NOW] != warm[1, later]
    assert "Paid in 2025 (last year)" in "".join(warm[1, NOW])
    assert "Paid in 2025 (2 years ago)" in "".join(warm[1, later])


def test_a_log_well_under_its_cap_renders_as_when_the_whole_log_is_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    count = TokenCounter().count_text
    groups = [
        group(
            f"g{i}",
            f"Date: Nov {1 + i % 28}, 2026\n"
            + "\n".join(
                f"* 🔴 (09:{j:02d}) Fact {i}-{j}: parcel {i * 31 + j} to Porto" for j in range(8)
            ),
        )
        for i in range(12)
    ]
    rec = record(groups)
    joined = "\n".join(line for g in groups for line in g["text"].splitlines() if line.strip())
    parts = sum(count(g["text"]) + 1 for g in groups)
    assert abs(count(joined) - parts) <= len(groups)  # newline-joined counts add up
    for cap in (10_000, parts + 20, parts // 2, 60):  # well under, near, over, far over
        _forget_renders()
        quick = render_memory(rec, now=NOW, max_observation_tokens=cap, count=count).blocks
        _forget_renders()
        with monkeypatch.context() as m:
            m.setattr(render_mod, "FIT_MARGIN", 0.0)  # always count the joined log
            exact = render_memory(rec, now=NOW, max_observation_tokens=cap, count=count).blocks
        assert quick == exact
