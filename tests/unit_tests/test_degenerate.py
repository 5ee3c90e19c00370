from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_om._core.degenerate import MIN_CHARS, is_degenerate, loop_key

_WORDS = (
    "user asked about flights hotels budget lisbon porto train booking passport visa meeting "
    "deadline project database migration tests failing fixed deployed invoice refund"
).split()


def _legit_log(lines: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    out = ["Date: Nov 1, 2026"]
    for i in range(lines):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 14)))
        out.append(f"* {rng.choice('🔴🟡🟢✅')} ({i // 60 % 24:02d}:{i % 60:02d}) {words} #{i}")
        if i % 7 == 0:
            out.append(f"  * -> detail {rng.randint(0, 10**6)} for item {i}")
    return "\n".join(out)


_BLOCK = "\n".join(
    [
        "* 🟡 (10:00) Assistant ran the test suite again and it failed",
        "  * -> error: connection refused on port 5432",
        "  * -> retried with the same configuration",
        "* 🔴 (10:01) User asked to fix the database connection",
    ]
)


def test_repeated_multiline_block_is_degenerate() -> None:
    text = "Date: Nov 1, 2026\n" + "\n".join([_BLOCK] * 40)
    assert is_degenerate(text)


def test_long_period_loop_after_legit_prefix_is_degenerate() -> None:
    block = _legit_log(12, seed=3).split("\n", 1)[1]  # a 14-line block
    text = _legit_log(30) + "\n" + "\n".join([block] * 40)
    assert is_degenerate(text)


def test_long_legit_log_is_not_degenerate() -> None:
    text = _legit_log(500)
    assert len(text) > 20_000
    assert not is_degenerate(text)


def test_bounded_back_to_back_summary_run_passes() -> None:
    log = _legit_log(60).splitlines()
    text = "\n".join(log[:30] + [_BLOCK] * 5 + log[30:])
    assert not is_degenerate(text)
    # the same run far beyond the bound is a loop
    assert is_degenerate("\n".join(log[:30] + [_BLOCK] * 60 + log[30:]))


def test_repeated_short_lines_are_degenerate() -> None:
    assert is_degenerate("Date: Nov 1, 2026\n" + "\n".join(["* ok"] * 3000))
    assert is_degenerate("\n".join(["a", "b", "c"] * 2000))


def test_single_looping_line_is_degenerate() -> None:
    assert is_degenerate("* 🟡 (10:00) " + "the same phrase again and " * 300)


def test_short_loop_is_degenerate_but_short_repetition_is_not() -> None:
    # Loops are judged by repetition, not by length: small models loop in short replies.
    text = "\n".join(["* 🟡 (10:00) the same line over and over"] * 200)
    assert is_degenerate(text)
    assert is_degenerate(text[: MIN_CHARS - 1])
    assert not is_degenerate("\n".join(["* 🟡 (10:00) the same line over and over"] * 3))


@given(st.lists(st.text(max_size=60), max_size=40, unique_by=loop_key))
def test_short_text_of_distinct_lines_is_never_degenerate(lines: list[str]) -> None:
    text = "\n".join(lines)[: MIN_CHARS - 1]
    assert not is_degenerate(text)


_FRAGMENTS = st.one_of(
    st.sampled_from(["", "* ok", "Date: Nov 1, 2026", *_BLOCK.splitlines()]),
    st.text(max_size=40),
)


@settings(max_examples=100)
@given(st.lists(_FRAGMENTS, max_size=150), st.integers(min_value=1, max_value=60))
def test_arbitrary_long_text_never_raises(lines: list[str], repeats: int) -> None:
    text = _legit_log(30) + "\n" + "\n".join(lines * repeats)
    assert len(text) >= MIN_CHARS
    assert isinstance(is_degenerate(text), bool)
