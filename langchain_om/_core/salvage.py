"""What an Observer reply may keep: new, grounded lines, and the messages they cover.

The Observer's reply is read line by line (top-level observation lines with their sub-items,
under ``Date:`` headers):

- a line the log already holds under the same ``Date:`` (the same words once bullets, marks
  and clock times are stripped; a changed number is news, so numbers count) is dropped: a
  reply that re-emits the previous observations keeps only what is new, while the same event
  on another day stays. A line the reply itself wrote before, clock time included, is dropped
  too; the same words at another time are kept: whether that repetition is a loop or faithful
  (a job polled many times) is judged against the source by the loop cut;
- a line the batch does not support (:mod:`.grounding`) is dropped. A reply that ran to its
  end is held to :data:`LOOSE_OVERLAP` (a paraphrase passes; an invented line does not); a
  reply that was cut short (it looped, or ran out of budget) is held to :data:`STRICT_OVERLAP`
  and every name and number of a line must occur in the batch, since the model that wrote it
  was already misbehaving.

A cut reply covers the messages up to the last one that supports a kept line
(:attr:`Kept.covered`): those may leave the window, the rest stay to be observed next cycle.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from langchain_om._core.dates import parse_date_header
from langchain_om._core.degenerate import loop_key
from langchain_om._core.grounding import Grounding, Sources, information

__all__ = [
    "LOOSE_OVERLAP",
    "MIN_INFORMATION",
    "STRICT_OVERLAP",
    "TOKENS_PER_TERM",
    "Kept",
    "information_floor",
    "keep_lines",
]

STRICT_OVERLAP = 0.5
"""Share of a cut reply's line's content words its supporting message(s) must hold."""

LOOSE_OVERLAP = 0.2
"""Share of a complete reply's line's content words the batch must hold (paraphrase passes)."""

MIN_INFORMATION = 1
"""Every accepted observation carries at least this many grounded terms."""

TOKENS_PER_TERM = 100
"""An observation carries at least one grounded term per this many batch tokens."""

MAX_FLOOR = 8
"""The floor never asks for more than this many grounded terms (however long the batch)."""

_TOP_LEVEL = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s")


@dataclass(frozen=True)
class Kept:
    """The lines of a reply that may be committed."""

    text: str
    """The kept observation lines, with their ``Date:`` headers."""
    lines: int
    """Top-level lines kept."""
    repeated: int
    """Top-level lines dropped because the log already holds them."""
    ungrounded: int
    """Top-level lines dropped because the batch does not support them."""
    covered: int | None
    """Messages of the batch the kept lines cover, for a cut reply (``None``: all of them)."""
    information: int
    """Distinct grounded names, numbers and content words the kept lines carry."""


def information_floor(input_tokens: int) -> int:
    """The fewest grounded terms an observation of ``input_tokens`` batch tokens must carry."""
    return max(MIN_INFORMATION, min(MAX_FLOOR, input_tokens // TOKENS_PER_TERM))


def _key(line: str) -> str:
    return loop_key(line)


def _dated_keys(log: str) -> set[tuple[date | None, str]]:
    """``(day, key)`` of every top-level line of ``log`` (the day of its ``Date:`` header).

    Read a paragraph at a time (no line spans a blank line), each memoised with the day it
    starts under: every reply buffered before the next activation is judged against the same
    log, with other buffered chunks after it.
    """
    keys: set[tuple[date | None, str]] = set()
    day: date | None = None
    for paragraph in log.split("\n\n"):
        found, day = _paragraph_keys(paragraph, day)
        keys |= found
    return keys


@functools.lru_cache(maxsize=4096)
def _paragraph_keys(
    text: str, day: date | None
) -> tuple[frozenset[tuple[date | None, str]], date | None]:
    keys: set[tuple[date | None, str]] = set()
    for line in text.splitlines():
        header = parse_date_header(line.strip())
        if header is not None:
            day = header
        elif _TOP_LEVEL.match(line) and (key := _key(line)):
            keys.add((day, key))
    return frozenset(keys), day


def _items(text: str) -> list[list[str]]:
    """``text`` as items: a header, a blank, or a top-level line with its sub-items."""
    items: list[list[str]] = []
    for line in text.split("\n"):
        header = parse_date_header(line.strip()) is not None
        if header or not line.strip() or _TOP_LEVEL.match(line) or not items:
            items.append([line])
        else:
            items[-1].append(line)
    return items


def _without_empty_dates(items: Sequence[list[str]]) -> str:
    out: list[str] = []
    for index, item in enumerate(items):
        if parse_date_header(item[0].strip()) is not None:
            rest = next((i for i in items[index + 1 :] if i[0].strip()), None)
            if rest is None or parse_date_header(rest[0].strip()) is not None:
                continue
        out.extend(item)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")


def _grounding(sources: Sources, line: str, cut: bool) -> Grounding | None:
    """How ``sources`` supports ``line``, or ``None`` when it does not (see the thresholds)."""
    found = sources.ground(line, min_overlap=STRICT_OVERLAP if cut else LOOSE_OVERLAP)
    ok = found.grounded if cut else found.overlap >= LOOSE_OVERLAP
    return found if ok else None


def keep_lines(
    observations: str,
    *,
    sources: Sources | None,
    log: str = "",
    cut: bool = False,
) -> Kept:
    """The lines of ``observations`` that are new and grounded (see the module docstring).

    Args:
        observations: the parsed observation lines of a reply.
        sources: the batch the reply observed; ``None`` skips grounding (and coverage).
        log: the observation log the reply is appended to.
        cut: the reply was stopped early (a loop or its budget): strict grounding and a
            covered prefix.
    """
    known = _dated_keys(log)
    written: set[tuple[date | None, str]] = set()
    kept: list[list[str]] = []
    repeated = ungrounded = lines = 0
    supports: list[int] = []
    day: date | None = None
    for item in _items(observations):
        head = item[0]
        header = parse_date_header(head.strip())
        if header is not None:
            day = header
        if not _TOP_LEVEL.match(head):
            kept.append(item)
            continue
        # The same line twice in one reply, time included, says nothing new (small models do
        # it); the same words at another time are kept (a job polled many times).
        exact = (day, " ".join(head.split()).casefold())
        if (day, _key(head)) in known or exact in written:
            repeated += 1
            continue
        written.add(exact)
        if sources is not None:
            grounding = _grounding(sources, head, cut)
            if grounding is None:
                ungrounded += 1
                continue
            if grounding.support is not None:
                supports.append(grounding.support)
            # Sub-items are claims too: one the batch does not support is dropped alone.
            item = [head, *(sub for sub in item[1:] if _grounding(sources, sub, cut) is not None)]
        kept.append(item)
        lines += 1
    text = _without_empty_dates(kept)
    covered = (max(supports) + 1 if supports else 0) if cut and sources is not None else None
    found = information(text.splitlines(), sources) if sources is not None else lines
    return Kept(text, lines, repeated, ungrounded, covered, found)
