from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_om._core.dates import parse_date_header
from langchain_om._core.tokens import count_tokens
from langchain_om._core.truncation import (
    TRUNCATED_SUFFIX,
    _parse,
    _surely_over,
    cut_to_tokens,
    hidden_marker,
    is_important,
    truncate_observations,
)


def quarter(text: str) -> int:
    return len(text) // 4 + 1


COUNTERS: list[Callable[[str], int]] = [quarter, count_tokens]
MARKER = re.compile(r"^\[\d+ observations? hidden here\]$")


@dataclass
class Log:
    text: str
    lines: list[str]
    """Observation lines, oldest first."""
    headers: list[str | None]
    """The header each line sits under."""


def build_log(entries: list[tuple[str, str, bool, bool]]) -> Log:
    out: list[str] = []
    lines: list[str] = []
    headers: list[str | None] = []
    header: str | None = None
    day = 0
    for i, (priority, words, new_day, sub) in enumerate(entries):
        if new_day or (i == 0 and not sub):
            day += 1
            header = f"Date: Nov {day}, 2026"
            out.append(header)
        line = (
            f"  * -> {words} #{i}" if sub and i else f"* {priority} (10:{i % 60:02d}) {words} #{i}"
        )
        out.append(line)
        lines.append(line)
        headers.append(header)
    return Log("\n".join(out), lines, headers)


_WORDS = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=60).map(
    lambda s: " ".join(s.split())
)
_ENTRIES = st.lists(
    st.tuples(st.sampled_from(["🔴", "🟡", "🟢", "✅"]), _WORDS, st.booleans(), st.booleans()),
    min_size=1,
    max_size=50,
)


def kept_indices(result_text: str, log: Log) -> list[int]:
    index = {line: i for i, line in enumerate(log.lines)}
    return [index[row] for row in result_text.splitlines() if row in index]


@pytest.mark.parametrize("count", COUNTERS, ids=lambda c: getattr(c, "__name__", "counter"))
@settings(max_examples=120, deadline=None)
@given(entries=_ENTRIES, budget=st.integers(min_value=1, max_value=500))
def test_truncation_properties(
    count: Callable[[str], int], entries: list[tuple[str, str, bool, bool]], budget: int
) -> None:
    log = build_log(entries)
    result = truncate_observations(log.text, budget, count)

    # never exceeds the budget
    assert count(result.text) <= budget

    if count(log.text) <= budget:
        assert result.text == log.text and not result.truncated
        return
    assert result.truncated

    kept = kept_indices(result.text, log)
    newest = log.lines[-1]
    if not kept:
        # even the newest line alone did not fit: it is cut (with a suffix when that fits)
        cut = result.text.removesuffix(TRUNCATED_SUFFIX)
        assert newest.startswith(cut)
        assert (result.kept_lines, result.hidden_lines) == (1, len(log.lines) - 1)
        return

    # the newest line is always kept, and the counts add up
    assert kept and kept[-1] == len(log.lines) - 1
    assert result.kept_lines == len(kept)
    assert result.hidden_lines == len(log.lines) - len(kept)

    # kept lines keep their order and their date header
    assert kept == sorted(kept)
    # (when only the newest line fits, its header and the marker may have had to go)
    minimal = kept == [len(log.lines) - 1]
    current: str | None = None
    for row in result.text.splitlines():
        if parse_date_header(row) is not None:
            current = row
        elif row in log.lines:
            original = log.headers[log.lines.index(row)]
            if original is not None and not (minimal and current is None):
                assert current == original

    # 🔴/✅ lines are preferred: any hidden one is older than every kept line
    hidden_important = [
        i for i, line in enumerate(log.lines) if i not in kept and is_important(line)
    ]
    assert all(h < kept[0] for h in hidden_important)

    # every gap is marked, with the right count
    rows = [r for r in result.text.splitlines() if r and parse_date_header(r) is None]
    hidden_seen = sum(int(r[1:].split()[0]) for r in rows if MARKER.match(r))
    assert hidden_seen == result.hidden_lines or (minimal and hidden_seen == 0)


@pytest.mark.parametrize("count", COUNTERS, ids=lambda c: getattr(c, "__name__", "counter"))
@settings(max_examples=200, deadline=None)
@given(entries=_ENTRIES)
def test_a_log_judged_surely_over_its_budget_is_over_it(
    count: Callable[[str], int], entries: list[tuple[str, str, bool, bool]]
) -> None:
    # The largest budget the per-line estimate calls "surely over" without counting the log.
    log = build_log(entries)
    lines, header_costs = _parse(log.text, count)
    estimate = sum(line.cost for line in lines) + sum(header_costs.values())
    budget = estimate - 2 * (len(lines) + len(header_costs)) - 1
    assert _surely_over(lines, header_costs, budget)
    assert not _surely_over(lines, header_costs, budget + 1)
    assert count(log.text) > budget  # the whole log, counted, is over it too


def test_no_budget_and_zero_budget() -> None:
    log = build_log([("🔴", "fact", False, False)] * 3).text
    unlimited = truncate_observations(log, None, quarter)
    assert unlimited.text == log and not unlimited.truncated and unlimited.kept_lines == 3
    nothing = truncate_observations(log, 0, quarter)
    assert nothing.text == "" and nothing.truncated and nothing.hidden_lines == 3


def test_fitting_log_is_unchanged() -> None:
    log = build_log([("🟡", "a b c", i % 3 == 0, i % 2 == 1) for i in range(10)]).text
    result = truncate_observations(log, quarter(log), quarter)
    assert result.text == log and not result.truncated and result.hidden_lines == 0


def test_keeps_tail_and_older_important_lines_with_markers() -> None:
    entries = [
        ("🔴" if i in (2, 9) else "🟡", f"observation number {i}", i == 6, False) for i in range(20)
    ]
    log = build_log(entries)
    result = truncate_observations(log.text, 75, quarter)
    # both older 🔴 lines beat a longer tail of 🟡 lines
    assert kept_indices(result.text, log) == [2, 9, 18, 19]
    assert result.text.splitlines() == [
        hidden_marker(2),
        "",
        "Date: Nov 1, 2026",
        log.lines[2],
        hidden_marker(6),
        "",
        "Date: Nov 2, 2026",
        log.lines[9],
        hidden_marker(8),
        *log.lines[18:],
    ]
    assert (result.kept_lines, result.hidden_lines, result.truncated) == (4, 16, True)


def test_plain_lines_of_the_same_age_give_way_to_important_ones() -> None:
    # older lines alternate 🟡 / 🔴: outside the newest tail only the 🔴 ones survive
    entries = [
        ("🔴" if i % 2 else "🟡", f"older observation {i} " + "with detail " * 4, False, False)
        for i in range(30)
    ]
    log = build_log(entries)
    result = truncate_observations(log.text, 160, quarter)
    kept = kept_indices(result.text, log)
    tail_start = min(i for i in kept if all(j in kept for j in range(i, 30)))
    outside = [i for i in kept if i < tail_start]
    assert outside and all(log.lines[i].startswith("* 🔴") for i in outside)
    assert quarter(result.text) <= 160


def test_single_hidden_line_is_shown_instead_of_a_marker_when_it_fits() -> None:
    entries = [("🔴" if i == 1 else "🟡", "x", False, False) for i in range(12)]
    log = build_log(entries)
    # room for everything except a few lines
    result = truncate_observations(log.text, quarter(log.text) - 12, quarter)
    rows = result.text.splitlines()
    assert hidden_marker(1) not in rows
    assert log.lines[0] in rows and log.lines[1] in rows


def test_newest_line_alone_too_big_is_cut() -> None:
    huge = "* 🔴 (10:00) " + "word " * 400
    log = f"Date: Nov 1, 2026\n* 🟡 (09:00) old\n{huge}"
    result = truncate_observations(log, 30, quarter)
    assert result.text.endswith(TRUNCATED_SUFFIX)
    assert quarter(result.text) <= 30
    assert huge.startswith(result.text[: -len(TRUNCATED_SUFFIX)])
    assert (result.kept_lines, result.hidden_lines, result.truncated) == (1, 1, True)


def test_newest_line_keeps_header_and_marker_when_room() -> None:
    log = "Date: Nov 1, 2026\n" + "\n".join(
        f"* 🟡 (09:{i:02d}) line {i} " + "z" * 80 for i in range(5)
    )
    result = truncate_observations(log, 40, quarter)
    assert result.text.splitlines() == [
        hidden_marker(4),
        "",
        "Date: Nov 1, 2026",
        log.splitlines()[-1],
    ]


def test_cut_to_tokens() -> None:
    text = "abcdefghij" * 10
    assert cut_to_tokens(text, 100, quarter) == text
    cut = cut_to_tokens(text, 5, quarter, "…")
    assert quarter(cut) <= 5 and cut.endswith("…") and text.startswith(cut[:-1])
    assert cut_to_tokens(text, 1, quarter, "a long suffix") == "abc"  # suffix dropped
    assert cut_to_tokens(text, 0, quarter) == ""


@pytest.mark.parametrize(
    ("line", "important"),
    [
        ("* 🔴 (10:00) fact", True),
        ("* ✅ (10:00) done", True),
        ("- 🔴 fact", True),
        ("  * -> ✅ sub done", True),
        ("  * -> sub detail", False),
        ("* 🟡 (10:00) mentions 🔴 later", False),
        ("1. ✅ numbered", True),
    ],
)
def test_is_important(line: str, important: bool) -> None:
    assert is_important(line) is important


def test_counting_is_memoised_per_log_and_per_line() -> None:
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return count_tokens(text)

    lines = [
        f"* {'🔴' if i % 3 == 0 else '🟡'} (09:{i % 60:02d}) fact number {i}" for i in range(80)
    ]
    log = "Date: Jan 2, 2026\n" + "\n".join(lines)
    first = truncate_observations(log, 200, count)
    assert truncate_observations(log, 200, count) is first  # the same log: cut once
    grown = log + "\n* 🔴 (10:00) one more fact"
    calls.clear()
    view = truncate_observations(grown, 200, count)
    # Only the new line is counted alone; the rest are whole-view checks.
    assert [c for c in calls if c.startswith("\n* ")] == ["\n* 🔴 (10:00) one more fact"]
    assert count_tokens(view.text) <= 200 and view.text.endswith("one more fact")


def _parse_line_by_line(text: str, count: Callable[[str], int]) -> list[tuple[Any, ...]]:
    """The plain definition: every line in order, under the last header before it."""
    base = count("")
    header: str | None = None
    out: list[tuple[Any, ...]] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        if parse_date_header(line) is not None:
            header = line.strip()
            continue
        out.append((line, header, is_important(line), max(0, count("\n" + line) - base)))
    return out


_PIECES = st.sampled_from(
    [
        "Date: Nov 1, 2026",
        "Date: Nov 2, 2026",
        "* 🔴 (09:00) a",
        "* 🟡 b",
        "  * -> c",
        "",
        " ",
        "\r",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(_PIECES, max_size=30),
    seps=st.lists(st.sampled_from(["\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n"]), max_size=30),
)
def test_a_log_read_a_paragraph_at_a_time_reads_as_line_by_line(
    pieces: list[str], seps: list[str]
) -> None:
    text = "".join(p + (seps[i] if i < len(seps) else "\n") for i, p in enumerate(pieces))
    for count in COUNTERS:
        lines, header_costs = _parse(text, count)
        assert [tuple(line) for line in lines] == _parse_line_by_line(text, count)
        # again, from the memo, and after other text: the same lines
        _parse("Date: Nov 9, 2026\n" + text, count)
        assert [tuple(line) for line in _parse(text, count)[0]] == [tuple(x) for x in lines]
        headers = {line.strip() for line in text.splitlines() if parse_date_header(line.rstrip())}
        assert set(header_costs) == headers
