"""Grounding, salvage and the information floor of Observer replies; the stream reader."""

from __future__ import annotations

from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessageChunk

from langchain_om._core.acceptance import judge_observation
from langchain_om._core.dates import parse_date_header
from langchain_om._core.degenerate import loop_key
from langchain_om._core.grounding import Sources, content_terms, information
from langchain_om._core.loop_cut import StreamCut
from langchain_om._core.observer import parse_observer_output
from langchain_om._core.output_budget import (
    CEILING_TOKENS,
    FLOOR_TOKENS,
    observer_budget,
    reflector_budget,
)
from langchain_om._core.salvage import _dated_keys, information_floor, keep_lines
from langchain_om._core.stream_reader import CUT_KEY, STREAM_KEY, StreamReader, cut_of
from langchain_om._core.tokens import TokenCounter

MESSAGES = [
    "Maya: Hi! I'm moving from Berlin to Lisbon in March.",
    "Jon: Nice! Have you found a flat yet?",
    "Maya: My budget is 1,400 EUR a month and I need a quiet office room.",
    "Jon: Campo de Ourique is quiet.",
    "Maya: My cat Pixel comes with me, and I have a bad knee, so I need a lift.",
]


def test_lines_drawn_from_the_messages_are_grounded_and_point_at_their_message() -> None:
    sources = Sources(MESSAGES)
    grounded = sources.ground(
        "* 🔴 (09:00) Maya is moving from Berlin to Lisbon in March", min_overlap=0.5
    )
    assert grounded.grounded and grounded.support == 0
    budget = sources.ground("* 🔴 (09:02) Maya's budget is 1,400 EUR a month", min_overlap=0.5)
    assert budget.grounded and budget.support == 2
    cat = sources.ground("* 🔴 Maya's cat Pixel moves with her; she needs a lift", min_overlap=0.5)
    assert cat.grounded and cat.support == 4


def test_invented_names_numbers_and_content_are_not_grounded() -> None:
    sources = Sources(MESSAGES)
    assert not sources.ground("* 🔴 Maya's budget is 1,500 EUR", min_overlap=0.5).grounded
    assert not sources.ground("* 🟡 Maya flew to Paris with Kevin", min_overlap=0.5).grounded
    assert not sources.ground("* 🟡 (10:00) User talked.", min_overlap=0.5).grounded
    assert not sources.ground("* 🔴 (14:30) User said …", min_overlap=0.2).grounded


def test_inflections_of_a_word_ending_in_e_ground_each_other() -> None:
    # like / likes / liked / liking are one word to the grounding (the final e of "like" once
    # kept it apart from the others, so "User likes tea" was not grounded in "I like tea").
    terms = [content_terms(w) for w in ("like", "likes", "liked", "liking")]
    assert all(t == terms[0] for t in terms)
    assert content_terms("agree") == content_terms("agreed") == content_terms("agreeing")
    sources = Sources(["Maya: I like green tea and long walks."])
    assert sources.ground("* 🔴 Maya likes green tea", min_overlap=0.5).grounded
    assert sources.ground("* 🔴 Maya liked long walks", min_overlap=0.5).grounded
    assert not sources.ground("* 🔴 Maya hates black coffee", min_overlap=0.5).grounded


def test_keep_lines_drops_log_repeats_and_ungrounded_lines() -> None:
    sources = Sources(MESSAGES)
    reply = (
        "Date: Mar 3, 2026\n"
        "* 🔴 (09:00) Maya is moving from Berlin to Lisbon in March\n"
        "* 🔴 (09:02) Maya's budget is 1,400 EUR a month\n"
        "  * -> she needs a quiet office room\n"
        "* 🟡 (09:05) Assistant booked a flight to Tokyo for Kevin\n"
    )
    log = "Date: Mar 3, 2026\n* 🔴 (08:00) Maya is moving from Berlin to Lisbon in March"
    kept = keep_lines(reply, sources=sources, log=log)
    assert kept.repeated == 1 and kept.ungrounded == 1 and kept.lines == 1
    assert "1,400 EUR" in kept.text and "quiet office" in kept.text and "Tokyo" not in kept.text
    assert kept.covered is None  # a complete reply covers the whole batch


def test_a_line_written_twice_in_one_reply_is_kept_once_but_the_same_words_later_stay() -> None:
    # the local 1.5B model writes the same line twice, time included; a job polled at
    # different times is the same words at other times, and each is kept
    sources = Sources([*MESSAGES, "Jon: The build job 42 is still running."])
    twice = "* 🔴 (09:02) Maya's budget is 1,400 EUR a month\n" * 2
    kept = keep_lines("Date: Mar 3, 2026\n" + twice, sources=sources)
    assert kept.lines == 1 and kept.repeated == 1
    polled = "".join(f"* 🟡 (09:{m:02d}) Jon: the build job 42 is still running\n" for m in (5, 6))
    kept = keep_lines("Date: Mar 3, 2026\n" + polled, sources=sources)
    assert kept.lines == 2 and kept.repeated == 0


def test_a_changed_number_is_news_not_a_repeat() -> None:
    sources = Sources([*MESSAGES, "Maya: The landlord dropped it to 1,350 EUR a month."])
    log = "* 🔴 (09:02) Maya's budget is 1,400 EUR a month"
    kept = keep_lines("* 🔴 (09:30) Maya's rent is 1,350 EUR a month", sources=sources, log=log)
    assert kept.lines == 1 and kept.repeated == 0


def test_a_cut_reply_covers_the_messages_up_to_its_last_supported_line() -> None:
    sources = Sources(MESSAGES)
    reply = (
        "* 🔴 (09:00) Maya is moving from Berlin to Lisbon in March\n"
        "* 🔴 (09:02) Maya's budget is 1,400 EUR a month and she needs a quiet office room\n"
    )
    kept = keep_lines(reply, sources=sources, cut=True)
    assert kept.lines == 2 and kept.covered == 3


def test_cut_replies_are_held_to_strict_grounding() -> None:
    sources = Sources(MESSAGES)
    paraphrase = "* 🔴 Maya relocates soon; money matters"  # loose paraphrase, weak overlap
    assert keep_lines(paraphrase, sources=sources, cut=True).lines == 0


def test_the_information_floor_grows_with_the_batch_and_is_capped() -> None:
    assert information_floor(10) == 1
    assert information_floor(2_000) > information_floor(400) >= 2
    assert information_floor(10**6) == information_floor(10**7)


def test_a_lazy_generic_observation_is_rejected_as_uninformative() -> None:
    counter = TokenCounter()
    batch = [
        f"Maya: item {i} is the {w} lamp for the {v} room"
        for i, (w, v) in enumerate(
            [("green", "office"), ("brass", "kitchen"), ("paper", "hall"), ("steel", "bath")] * 6
        )
    ]
    sources = Sources(batch)
    tokens = counter.count_text("\n".join(batch))
    lazy = parse_observer_output(
        "<observations>\n* 🟡 (10:00) Maya mentioned lamps.\n</observations>"
    )
    verdict = judge_observation(
        lazy,
        input_tokens=tokens,
        observation_tokens=4_000,
        count=counter.count_text,
        sources=sources,
    )
    assert not verdict.accepted and verdict.reason == "uninformative"
    rich = parse_observer_output(
        "<observations>\n* 🟡 (10:00) Maya listed lamps: green lamp for the office, brass lamp "
        "for the kitchen, paper lamp for the hall, steel lamp for the bath\n</observations>"
    )
    verdict = judge_observation(
        rich,
        input_tokens=tokens,
        observation_tokens=4_000,
        count=counter.count_text,
        sources=sources,
    )
    assert verdict.accepted and (verdict.information or 0) >= information_floor(tokens)


def test_a_reply_that_only_re_emits_the_log_is_rejected_and_one_with_news_keeps_the_news() -> None:
    counter = TokenCounter()
    sources = Sources(MESSAGES)
    log = "\n".join(
        [
            "Date: Mar 3, 2026",
            "* 🔴 (09:00) Maya is moving from Berlin to Lisbon in March",
            "* 🔴 (09:02) Maya's budget is 1,400 EUR a month",
        ]
    )
    only = parse_observer_output(f"<observations>\n{log}\n</observations>")
    verdict = judge_observation(
        only,
        input_tokens=80,
        observation_tokens=100,
        count=counter.count_text,
        sources=sources,
        log=log,
    )
    assert not verdict.accepted and verdict.reason == "echo"
    news = parse_observer_output(
        f"<observations>\n{log}\n"
        "* 🔴 (09:09) Maya's cat Pixel comes with her and she needs a lift\n</observations>"
    )
    verdict = judge_observation(
        news,
        input_tokens=80,
        observation_tokens=100,
        count=counter.count_text,
        sources=sources,
        log=log,
    )
    assert verdict.accepted and verdict.repeated == 2 and "Pixel" in verdict.observations
    assert "Berlin" not in verdict.observations


def test_a_cut_reply_with_grounded_lines_is_salvaged_and_one_without_is_rejected() -> None:
    counter = TokenCounter()
    sources = Sources(MESSAGES)
    kept = parse_observer_output(
        "<observations>\nDate: Mar 3, 2026\n"
        "* 🔴 (09:00) Maya is moving from Berlin to Lisbon in March\n"
    )
    verdict = judge_observation(
        kept,
        input_tokens=80,
        observation_tokens=2_000,
        count=counter.count_text,
        sources=sources,
        cut="loop",
    )
    assert verdict.accepted and verdict.salvaged and verdict.covered == 1
    invented = parse_observer_output(
        "<observations>\n* 🔴 (09:00) Assistant called search_flights\n"
    )
    verdict = judge_observation(
        invented,
        input_tokens=80,
        observation_tokens=2_000,
        count=counter.count_text,
        sources=sources,
        cut="loop",
    )
    assert not verdict.accepted and verdict.reason == "degenerate"
    empty = parse_observer_output("")
    assert (
        judge_observation(
            empty, input_tokens=80, observation_tokens=2_000, count=counter.count_text, cut="budget"
        ).reason
        == "oversized"
    )


def test_information_counts_distinct_grounded_terms() -> None:
    sources = Sources(MESSAGES)
    assert information(
        ["* Maya budget 1,400 EUR", "* Maya budget 1,400 EUR"], sources
    ) == information(["* Maya budget 1,400 EUR"], sources)
    assert information(["* Kevin flew to Tokyo"], sources) == 0


def test_output_budgets_follow_the_input_and_the_setting() -> None:
    assert observer_budget(100, sections=2) == FLOOR_TOKENS + 300
    assert observer_budget(20_000, sections=0) == 6_000
    assert observer_budget(10**7, sections=0) == CEILING_TOKENS
    assert observer_budget(20_000, sections=2, setting=900) == 900
    assert observer_budget(20_000, sections=2, setting=False) is None
    assert reflector_budget(30_000, target_tokens=8_000, sections=0) == 8_000
    assert reflector_budget(500, target_tokens=8_000, sections=0) == FLOOR_TOKENS  # never below
    assert reflector_budget(3_000, target_tokens=8_000, sections=0) == 3_000  # at most the log


def test_the_stream_reader_keeps_the_salvage_and_records_the_cut() -> None:
    reader = StreamReader(StreamCut(source="Caroline swims"))
    text = (
        "<observations>\n* 🔴 (14:01) Caroline went to a support group.\n"
        + "* ✅ (14:02) Caroline said she was off to go swimming with the kids.\n" * 10
    )
    for start in range(0, len(text), 7):
        if reader.add(AIMessageChunk(content=text[start : start + 7])):
            break
    message = reader.message()
    cut = cut_of(message)
    assert cut is not None and cut["reason"] == "loop" and cut["loop"]
    assert message.content == "<observations>\n* 🔴 (14:01) Caroline went to a support group.\n"
    assert cut["generated"].startswith(str(message.content)) and len(cut["generated"]) < len(text)
    assert message.response_metadata[STREAM_KEY]["output_tokens"] > 0


def test_the_stream_reader_treats_a_length_stop_as_a_budget_cut() -> None:
    reader = StreamReader(StreamCut())
    reader.add(AIMessageChunk(content="* 🔴 (09:00) Maya moves to Lisbon.\n* 🔴 (09:01) Maya"))
    reader.add(AIMessageChunk(content="", response_metadata={"finish_reason": "length"}))
    message = reader.message()
    assert message.content == "* 🔴 (09:00) Maya moves to Lisbon.\n"
    assert message.response_metadata[CUT_KEY]["reason"] == "budget"


def test_a_stream_that_ends_normally_is_the_models_message() -> None:
    reader = StreamReader(StreamCut())
    reader.add(AIMessageChunk(content="* 🔴 Maya moves to Lisbon.\n"))
    message = reader.message()
    assert cut_of(message) is None and message.content == "* 🔴 Maya moves to Lisbon.\n"


_LOG_PIECES = st.sampled_from(
    [
        "Date: Nov 1, 2026",
        "Date: Nov 2, 2026",
        "* 🔴 (09:00) a fact",
        "* 🟡 b",
        "  * -> c",
        "",
        "\r",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.tuples(_LOG_PIECES, st.sampled_from(["\n", "\n\n", "\n\n\n", "\r\n"]))),
)
def test_a_log_read_a_paragraph_at_a_time_knows_the_lines_read_one_by_one(
    pieces: list[tuple[str, str]],
) -> None:
    log = "".join(piece + sep for piece, sep in pieces)
    expected: set[tuple[date | None, str]] = set()
    day: date | None = None
    for line in log.splitlines():
        header = parse_date_header(line.strip())
        if header is not None:
            day = header
        elif line.startswith("*") and loop_key(line):
            expected.add((day, loop_key(line)))
    assert _dated_keys(log) == expected
    assert _dated_keys("Date: Nov 9, 2026\n" + log) >= {k for k in expected if k[0] is not None}
