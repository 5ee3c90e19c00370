"""No thread can be poisoned: dangling tool calls, oversized messages, oversized batches."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_om._core.observer_input import format_messages_for_observer
from langchain_om._core.oversize import clip_middle, cut_note
from langchain_om._core.tokens import get_default_counter
from langchain_om._core.window import (
    observation_cut,
    safe_cut_points,
    split_batch,
    unanswered_tool_calls,
)

COUNT = get_default_counter().count_text
NOW = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)


def call(i: int, *ids: str) -> AIMessage:
    return AIMessage(
        "", id=f"a{i}", tool_calls=[{"id": c, "name": "search", "args": {"q": c}} for c in ids]
    )


def result(i: int, cid: str) -> ToolMessage:
    return ToolMessage(f"result {cid}", tool_call_id=cid, id=f"t{i}")


# A conversation in which the tool call c1 never got a result: the user moved on.
DANGLING: list[BaseMessage] = [
    HumanMessage("find flights", id="h0"),
    call(1, "c1"),
    HumanMessage("never mind, tell me about Porto", id="h2"),
    AIMessage("Porto is on the Douro.", id="a3"),
    HumanMessage("and Lisbon?", id="h4"),
    call(5, "c2"),
    result(6, "c2"),
    AIMessage("Lisbon is the capital.", id="a7"),
    HumanMessage("thanks", id="h8"),
]


def test_a_dangling_call_is_found() -> None:
    assert unanswered_tool_calls(DANGLING) == {"c1": 1}
    assert unanswered_tool_calls(DANGLING[:6]) == {"c1": 1, "c2": 5}


def test_what_precedes_a_dangling_call_can_always_be_observed() -> None:
    points = safe_cut_points(DANGLING)
    assert points == [0, 1]
    assert observation_cut(DANGLING) == 1


def test_after_block_after_the_dangling_call_is_observed_as_pending() -> None:
    points = safe_cut_points(DANGLING, observe_pending=True)
    assert points == [0, 1, 2, 3, 4, 5, 7, 8, 9]  # never between c2 and its result
    assert observation_cut(DANGLING, observe_pending=True) == 8  # the current turn stays
    assert observation_cut(DANGLING, keep_current_turn=False, observe_pending=True) == 9
    history = format_messages_for_observer(
        DANGLING[:8], timezone="UTC", tool_result_max_tokens=100, count=COUNT, now=NOW
    )
    assert "Tool Result search: [pending]" in history.text


def test_the_late_result_is_observed_on_its_own() -> None:
    window: list[BaseMessage] = [result(10, "c1"), HumanMessage("ok", id="h11")]
    assert safe_cut_points(window) == [1, 2]  # never starts the window with the orphan
    assert observation_cut(window, keep_current_turn=False) == 2
    history = format_messages_for_observer(
        window, timezone="UTC", tool_result_max_tokens=100, count=COUNT, now=NOW
    )
    assert "Tool Result tool" in history.text and "result c1" in history.text


def test_a_call_in_flight_still_blocks_by_default() -> None:
    window: list[BaseMessage] = [HumanMessage("go", id="h0"), call(1, "c1")]
    assert observation_cut(window, keep_current_turn=False) == 1


_KINDS = st.sampled_from(["human", "ai", "call", "result", "orphan"])


@settings(max_examples=300)
@given(st.lists(_KINDS, max_size=25), st.booleans())
def test_cuts_never_split_an_answered_call(kinds: list[str], pending: bool) -> None:
    messages: list[BaseMessage] = []
    open_calls: list[str] = []
    for i, kind in enumerate(kinds):
        if kind == "human":
            messages.append(HumanMessage("h", id=f"m{i}"))
        elif kind == "ai":
            messages.append(AIMessage("a", id=f"m{i}"))
        elif kind == "call":
            open_calls.append(f"c{i}")
            messages.append(call(i, f"c{i}"))
        elif kind == "result" and open_calls:
            messages.append(result(i, open_calls.pop(0)))
        else:
            messages.append(result(i, f"gone{i}"))
    points = safe_cut_points(messages, observe_pending=pending)
    where = {
        cid: i
        for i, m in enumerate(messages)
        if isinstance(m, AIMessage)
        for cid in [c["id"] for c in m.tool_calls]
    }
    for i, m in enumerate(messages):
        if isinstance(m, ToolMessage) and m.tool_call_id in where:
            assert not [p for p in points if where[m.tool_call_id] < p <= i]
    for p in points:
        assert p == len(messages) or not isinstance(messages[p], ToolMessage)
    if pending:  # a dangling call never blocks: every later safe boundary stays open
        assert set(safe_cut_points(messages)) <= set(points)


# ------------------------------------------------------------------ oversized messages

BIG = "\n".join(
    f"line {i}: the quarterly report says revenue grew {i % 7} percent in region {i}"
    for i in range(3_000)
)


def test_clip_middle_keeps_head_and_tail_within_budget() -> None:
    cut = clip_middle(BIG, 1_000, COUNT)
    assert cut.cut and COUNT(cut.text) <= 1_000
    assert cut.text.startswith("line 0: ") and cut.text.endswith("region 2999")
    assert cut_note(cut.cut_tokens) in cut.text
    total = COUNT(BIG)
    assert abs(total - cut.cut_tokens - COUNT(cut.text)) <= 60  # the note itself
    head, tail = cut.text.split(cut_note(cut.cut_tokens))
    assert COUNT(head) > COUNT(tail) > 100  # 60/40
    assert head.rstrip().split("\n")[-1] in BIG.split("\n")  # cut on a line break
    assert tail.lstrip().split("\n")[0] in BIG.split("\n")


@pytest.mark.parametrize("budget", [0, 5, 30, 60, 200, 5_000])
def test_clip_middle_never_exceeds_the_budget(budget: int) -> None:
    cut = clip_middle(BIG, budget, COUNT)
    assert COUNT(cut.text) <= budget
    assert cut.cut_tokens > 0


def test_clip_middle_leaves_fitting_text_alone() -> None:
    assert clip_middle("short", 10, COUNT).text == "short"
    assert not clip_middle("short", 10, COUNT).cut
    with pytest.raises(ValueError, match="head_share"):
        clip_middle(BIG, 100, COUNT, head_share=1.5)


def test_a_poison_message_reaches_the_observer_in_part() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("summarise this:\n" + BIG, id="h0"),
        AIMessage("Revenue grew in every region.", id="a1"),
    ]
    history = format_messages_for_observer(
        messages,
        timezone="UTC",
        tool_result_max_tokens=500,
        count=COUNT,
        now=NOW,
        message_max_tokens=2_000,
    )
    assert COUNT(history.text) < 2_200
    assert "summarise this:" in history.text and "region 2999" in history.text
    assert "tokens of this message were cut here" in history.text
    assert "Revenue grew in every region." in history.text
    whole = format_messages_for_observer(
        messages, timezone="UTC", tool_result_max_tokens=500, count=COUNT, now=NOW
    )
    assert COUNT(whole.text) > 40_000


# ------------------------------------------------------------------ oversized batches


def test_split_batch_keeps_parts_within_budget_and_calls_with_results() -> None:
    messages = DANGLING[3:]  # a3 h4 a5(call c2) t6 a7 h8
    tokens = [100, 100, 100, 100, 100, 100]
    assert split_batch(messages, tokens, 250) == [2, 4, 6]  # c2 stays with its result
    assert split_batch(messages, tokens, 10_000) == [6]
    assert split_batch(messages, tokens, 50) == [1, 2, 4, 5, 6]  # too big parts stand alone
    with pytest.raises(ValueError, match="token counts"):
        split_batch(messages, tokens[:2], 100)
    with pytest.raises(ValueError, match="budget"):
        split_batch(messages, tokens, 0)
    assert split_batch([], [], 10) == []


@settings(max_examples=200)
@given(st.lists(st.integers(0, 500), min_size=1, max_size=30), st.integers(1, 1_000))
def test_split_batch_covers_the_batch_in_order(sizes: list[int], budget: int) -> None:
    messages: list[BaseMessage] = [
        HumanMessage("h", id=f"m{i}") if i % 2 == 0 else AIMessage("a", id=f"m{i}")
        for i in range(len(sizes))
    ]
    ends = split_batch(messages, sizes, budget)
    assert ends[-1] == len(messages) and ends == sorted(set(ends))
    start = 0
    for end in ends:
        part = sum(sizes[start:end])
        assert part <= budget or end - start == 1
        start = end
