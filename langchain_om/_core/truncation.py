"""A budgeted view of previous observations, for the Observer's prompt.

The Observer only needs the recent past and the important facts to avoid repeating itself,
so the log it is shown is cut to ``previous_observer_tokens``:

* a contiguous tail of the newest lines is kept;
* older 🔴/✅ lines are kept too, newest first, while they fit (at most as many as the tail);
  the split between tail and important lines maximises kept important lines, then tail length;
* every kept line keeps its ``Date:`` header; hidden stretches become
  ``[N observations hidden here]`` (a single hidden line is shown instead when it fits);
* the result never exceeds the budget; the newest line is always kept, cut with
  ``… [truncated]`` if it alone is too big.

The stored log is never touched: this is only what the Observer reads.

Counting is memoised: the whole view by (log text, budget, counter), so the cycles that see
the same log (buffered chunks before an activation, retries) cut it once, and each line's
cost by (counter, line), so a log that grew by one group only counts the new lines. The
counter must be deterministic (a :class:`~langchain_om._core.tokens.TokenCounter` is).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from langchain_om._core.dates import parse_date_header

__all__ = [
    "TRUNCATED_SUFFIX",
    "TruncatedObservations",
    "cut_to_tokens",
    "hidden_marker",
    "is_important",
    "truncate_observations",
]

TRUNCATED_SUFFIX = "… [truncated]"

_IMPORTANT = ("🔴", "✅")
_ESTIMATE_ROUNDS = 6
_COST_MEMO_MAX = 20_000
_costs: dict[tuple[Callable[[str], int], str], int] = {}


def _cost(count: Callable[[str], int], piece: str) -> int:
    """``count(piece)``, memoised by (counter, piece); the memo starts again when full."""
    key = (count, piece)
    got = _costs.get(key)
    if got is None:
        if len(_costs) >= _COST_MEMO_MAX:
            _costs.clear()
        got = _costs[key] = count(piece)
    return got


@dataclass(frozen=True)
class TruncatedObservations:
    text: str
    """What the Observer is shown."""
    truncated: bool
    """Whether anything was hidden or cut."""
    hidden_lines: int
    """Observation lines (not headers) left out."""
    kept_lines: int
    """Observation lines (not headers) shown, whole or cut."""


def hidden_marker(count: int) -> str:
    """The line that stands for ``count`` hidden observation lines."""
    noun = "observation" if count == 1 else "observations"
    return f"[{count} {noun} hidden here]"


def is_important(line: str) -> bool:
    """Whether an observation line is 🔴 (high priority) or ✅ (completed)."""
    head = line.lstrip(" \t*-+0123456789.)>")[:6]
    return any(mark in head for mark in _IMPORTANT)


def cut_to_tokens(text: str, max_tokens: int, count: Callable[[str], int], suffix: str = "") -> str:
    """The longest prefix of ``text`` (plus ``suffix`` if cut) with at most ``max_tokens``.

    Returns ``text`` unchanged when it fits. The suffix is dropped when even it alone does not
    fit; the result is ``""`` when nothing fits.
    """
    if count(text) <= max_tokens:
        return text
    if suffix and count(suffix) > max_tokens:
        suffix = ""
    if count(suffix) > max_tokens:
        return ""
    lo, hi = 0, len(text)  # invariant: prefix of length lo fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid] + suffix) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + suffix


class _Line(NamedTuple):
    text: str
    header: str | None
    important: bool
    cost: int


def truncate_observations(
    text: str, budget: int | None, count: Callable[[str], int]
) -> TruncatedObservations:
    """Cut an observation log to ``budget`` tokens as measured by ``count``.

    Args:
        text: The observation log (``Date:`` headers and observation lines).
        budget: Token budget; ``None`` = no truncation, ``0`` (or less) = show nothing.
        count: Token counter for a string.

    Returns:
        The view and how many observation lines it hides and keeps (memoised: the same
        arguments return the same object).
    """
    try:
        hash(count)
    except TypeError:  # memo keys need it: an identity-keyed wrapper instead
        count = functools.partial(count)
    return _truncate(text, budget, count)


@functools.lru_cache(maxsize=16)
def _truncate(text: str, budget: int | None, count: Callable[[str], int]) -> TruncatedObservations:
    lines, header_costs = _parse(text, count)
    if budget is None:
        return TruncatedObservations(text, False, 0, len(lines))
    if budget <= 0:
        return TruncatedObservations("", bool(lines), len(lines), 0)
    if not _surely_over(lines, header_costs, budget) and count(text) <= budget:
        return TruncatedObservations(text, False, 0, len(lines))
    if not lines:  # only headers and blank lines, and still too big
        return TruncatedObservations("", False, 0, 0)
    marker_cost = max(0, _cost(count, "\n" + hidden_marker(len(lines))) - _cost(count, ""))
    effective = budget
    for _ in range(_ESTIMATE_ROUNDS):
        kept = _select(lines, effective, marker_cost, header_costs)
        if kept is None:
            break
        rendered = _render(lines, kept)
        real = count(rendered)
        if real <= budget:
            hidden = len(lines) - len(kept)
            return TruncatedObservations(rendered, hidden > 0, hidden, len(kept))
        effective -= max(1, real - budget)
    return _newest_only(lines, budget, count)


def _surely_over(lines: Sequence[_Line], header_costs: dict[str, int], budget: int) -> bool:
    """Whether the log's per-line costs exceed ``budget`` by more than joining could save.

    A line's cost is counted on its own after a newline; joined, a boundary merges at most a
    token or two, so a sum this far over the budget needs no count of the whole log (a
    tokenizer call over thousands of tokens, at every observation).
    """
    boundaries = len(lines) + len(header_costs)
    estimate = sum(line.cost for line in lines) + sum(header_costs.values())
    return estimate - 2 * boundaries > budget


def _parse(text: str, count: Callable[[str], int]) -> tuple[list[_Line], dict[str, int]]:
    """Observation lines (with their header) and the estimated cost of each header.

    The text is read a paragraph at a time (blank lines part them, and no line spans two),
    each paragraph memoised with the header it starts under: a log viewed again with one
    more group, or with other buffered chunks after it, reads only what is new.
    """
    header: str | None = None
    out: list[_Line] = []
    header_costs: dict[str, int] = {}
    for paragraph in text.split("\n\n"):
        key = (count, paragraph, header)
        got = _paragraphs.get(key)
        if got is None:
            if len(_paragraphs) >= _PARAGRAPH_MEMO_MAX:
                _paragraphs.clear()
            got = _paragraphs[key] = _parse_paragraph(paragraph, header, count)
        lines, headers, header = got
        out += lines
        for name, cost in headers:
            header_costs.setdefault(name, cost)
    return out, header_costs


def _parse_paragraph(
    text: str, header: str | None, count: Callable[[str], int]
) -> tuple[tuple[_Line, ...], tuple[tuple[str, int], ...], str | None]:
    """A paragraph's lines, the headers it names (with their cost) and the header it ends under."""
    base = _cost(count, "")
    out: list[_Line] = []
    headers: list[tuple[str, int]] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        kind = _kind(line)
        if kind is None:
            continue
        if kind == "header":
            header = line.strip()
            headers.append((header, max(0, _cost(count, "\n\n" + header) - base)))
            continue
        cost = max(0, _cost(count, "\n" + line) - base)
        out.append(_Line(line, header, kind == "important", cost))
    return tuple(out), tuple(headers), header


_PARAGRAPH_MEMO_MAX = 2_048
_paragraphs: dict[
    tuple[Callable[[str], int], str, str | None],
    tuple[tuple[_Line, ...], tuple[tuple[str, int], ...], str | None],
] = {}


@functools.lru_cache(maxsize=8_192)
def _kind(line: str) -> str | None:
    """``"header"``, ``"important"``, ``"line"`` or ``None`` (blank), memoised: a log is
    viewed again at every observation, most of its lines unchanged."""
    if not line.strip():
        return None
    if parse_date_header(line) is not None:
        return "header"
    return "important" if is_important(line) else "line"


def _select(
    lines: Sequence[_Line], budget: int, marker_cost: int, header_cost: dict[str, int]
) -> set[int] | None:
    """Indices to keep under an additive cost estimate, or ``None`` if the newest won't fit."""
    base = count_headers = 0
    n = len(lines)
    important = [i for i in range(n) if lines[i].important]
    best: tuple[tuple[int, int], int, list[int], int] | None = None
    """(score, tail start, older lines kept, budget left): the set of lines kept and its
    filled gaps are built once, for the best only (most starts improve on the one before)."""
    tail_headers: set[str] = set()
    tail_important = 0
    # The cost of important lines before a tail, without the headers they may bring: it bounds
    # how many can join the tail, and a tail whose bound cannot beat the best is not tried.
    before = [0]
    for j in important:
        before.append(before[-1] + lines[j].cost + marker_cost)
    for t in range(n - 1, -1, -1):
        line = lines[t]
        base += line.cost
        tail_important += line.important
        if line.header is not None and line.header not in tail_headers:
            tail_headers.add(line.header)
            count_headers += header_cost[line.header]
        cost = base + count_headers + (marker_cost if t > 0 else 0)
        if cost > budget:
            break
        older = bisect.bisect_left(important, t)  # important[:older] are the lines before t
        if best is not None:
            # the newest of important[:older] that fit in what the tail leaves
            fit = older - bisect.bisect_left(before, before[older] - (budget - cost), 0, older)
            if tail_important + min(fit, n - t) < best[0][0]:
                continue  # not even every line that could join makes it the best
        chosen: list[int] = []
        added: set[str] = set()  # headers the chosen lines bring beyond the tail's
        for k in range(older - 1, -1, -1):
            j = important[k]
            if len(chosen) >= n - t:
                break
            header = lines[j].header
            extra = lines[j].cost + marker_cost
            new_header = header if header is not None and header not in tail_headers else None
            if new_header is not None and new_header not in added:
                extra += header_cost[new_header]
            if cost + extra > budget:
                break
            chosen.append(j)
            cost += extra
            if new_header is not None:
                added.add(new_header)
        score = (tail_important + len(chosen), n - t)
        if best is None or score > best[0]:
            best = (score, t, chosen, budget - cost)
    if best is None:
        return None
    _, start, chosen, slack = best
    return _fill_single_gaps(lines, set(range(start, n)).union(chosen), slack, marker_cost)


def _fill_single_gaps(
    lines: Sequence[_Line], kept: set[int], slack: int, marker_cost: int
) -> set[int]:
    """Show a lone hidden line instead of its marker when the difference fits."""
    filled = set(kept)
    for i in range(len(lines)):
        if i in kept:
            continue
        alone = (i == 0 or (i - 1) in kept) and (i + 1) in kept
        if alone and lines[i].cost - marker_cost <= slack:
            filled.add(i)
            slack -= max(0, lines[i].cost - marker_cost)
    return filled


def _render(lines: Sequence[_Line], kept: set[int]) -> str:
    out: list[str] = []
    emitted: str | None = None
    hidden = 0
    for i, line in enumerate(lines):
        if i not in kept:
            hidden += 1
            continue
        if hidden:
            out.append(hidden_marker(hidden))
            hidden = 0
        if line.header is not None and line.header != emitted:
            if out:
                out.append("")
            out.append(line.header)
            emitted = line.header
        out.append(line.text)
    if hidden:
        out.append(hidden_marker(hidden))
    return "\n".join(out)


def _newest_only(
    lines: Sequence[_Line], budget: int, count: Callable[[str], int]
) -> TruncatedObservations:
    newest = lines[-1]
    hidden = len(lines) - 1
    marker = [hidden_marker(hidden)] if hidden else []
    header = [newest.header] if newest.header is not None else []
    for parts in (marker + header, header, []):
        candidate = "\n".join([*parts, newest.text])
        if count(candidate) <= budget:
            return TruncatedObservations(candidate, True, hidden, 1)
    cut = cut_to_tokens(newest.text, budget, count, TRUNCATED_SUFFIX)
    return TruncatedObservations(cut, True, hidden, 1)
