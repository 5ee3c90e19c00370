"""The stream cut: a reply is stopped as soon as it loops or reaches its budget."""

from __future__ import annotations

from langchain_om._core.loop_cut import RUN_REPEATS, StreamCut, cut_text

GOOD = (
    "<observations>\n"
    "Date: Mar 3, 2026\n"
    "* 🔴 (14:01) Caroline went to an LGBTQ support group on Sunday.\n"
    "* 🔴 (14:02) Caroline is considering a career in counseling.\n"
)


def _alternating(n: int) -> str:
    return "".join(
        f"* ✅ (14:{i:02d}) Caroline said she was off to go swimming with the kids.\n"
        f"* ✅ (14:{i:02d}) Melanie said she was going to paint a sunset.\n"
        for i in range(4, 4 + n)
    )


def test_an_alternating_loop_with_counting_times_is_cut_after_three_rounds() -> None:
    text = GOOD + _alternating(40)
    written, cut = cut_text(text, source="Caroline: swimming with the kids today")
    assert cut is not None and cut.reason == "loop"
    assert cut.kept == GOOD  # exactly the lines before the loop
    assert cut.loop is not None and len(cut.loop.unit) == 2
    assert len(written) < len(GOOD) + len(_alternating(RUN_REPEATS + 1))


def test_a_loop_inside_one_line_keeps_the_text_before_it() -> None:
    head = '{"observations": [{"text": "Sourdough bread and almond croissants", "details": ["'
    text = head + "I am going to make the most of my free time. " * 30
    _, cut = cut_text(text, source="I bake sourdough bread")
    assert cut is not None and cut.reason == "loop"
    assert cut.kept.startswith(head[:40]) and "free time" not in cut.kept[len(head) :]


def test_scattered_repeats_of_one_line_are_a_loop() -> None:
    lines = [
        "* 🟡 (10:00) Melanie bought a red kayak.",
        "* 🟡 (10:01) Melanie talked about her new painting class.",
        "* 🟡 (10:02) Melanie bought a red kayak.",
        "* 🟡 (10:03) Melanie planned a trip to Lisbon.",
        "* 🟡 (10:04) Melanie bought a red kayak.",
        "* 🟡 (10:05) Melanie asked about the weather.",
        "* 🟡 (10:06) Melanie bought a red kayak.",
    ]
    _, cut = cut_text("\n".join(lines) + "\n")
    assert cut is not None and cut.loop is not None and cut.loop.kind == "dominant"
    assert cut.kept == ""  # the repeated line was the first one


def test_repetition_the_source_supports_is_not_cut() -> None:
    reply = "".join(
        f"* 🟡 (10:{i:02d}) Build {i} of the app failed on the linker.\n" for i in range(6)
    )
    source = "\n".join(
        f"Tool Result ci: build {i} of the app failed on the linker" for i in range(6)
    )
    written, cut = cut_text(reply, source=source)
    assert cut is None and written == reply
    # the same reply without its source is a loop (numbers masked)
    assert cut_text(reply, source="nothing like it")[1] is not None


def test_lines_that_only_share_their_shape_are_not_a_loop() -> None:
    reply = (
        "* 🔴 (09:00) Maya moves from Berlin to Lisbon in March.\n"
        "* 🔴 (09:02) Maya's budget is 1,400 EUR a month.\n"
        "* 🔴 (09:04) Maya wants Campo de Ourique or Estrela.\n"
        "* 🔴 (09:06) Maya has a bad knee and needs a lift.\n"
        "* 🔴 (09:09) Maya's cat Pixel moves with her.\n"
    )
    assert cut_text(reply, source=reply)[1] is None


def test_the_budget_stops_the_reply_at_its_last_complete_line() -> None:
    text = GOOD + "".join(
        f"* 🟡 (15:{i:02d}) Fact number {i} about item {i * 7}.\n" for i in range(50)
    )
    guard = StreamCut(budget=60)
    for start in range(0, len(text), 10):
        if guard.feed(text[start : start + 10]):
            break
    assert guard.cut is not None and guard.cut.reason == "budget"
    assert guard.cut.kept.endswith("\n") and guard.cut.tokens <= 60 + 20
    assert len(guard.text) < len(text) // 3


def test_a_stream_fed_one_character_at_a_time_stops_at_the_same_place() -> None:
    text = GOOD + _alternating(20)
    whole = cut_text(text, source="x")[1]
    guard = StreamCut(source="x")
    for ch in text:
        if guard.feed(ch):
            break
    assert guard.cut is not None and whole is not None
    assert guard.cut.kept == whole.kept


def test_units_without_content_words_are_left_to_the_judge() -> None:
    reply = "".join(f"* 🟡 (10:{i:02d}) Assistant said: ok {i}\n" for i in range(12))
    assert cut_text(reply, source="ok")[1] is None


def test_a_finished_stream_judges_its_last_unterminated_line() -> None:
    guard = StreamCut()
    line = "* 🟡 Melanie painted the blue lake again"
    guard.feed(f"{line}\n{line}\n{line}")
    assert guard.cut is None
    assert guard.finish() is not None
