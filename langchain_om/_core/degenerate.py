"""Detection of repetition loops in Observer/Reflector output.

A model stuck in a loop writes the same line or block of lines again and again until it hits
its output limit. Small models loop in short replies too, and often change a number on every
line (``* ✅ (14:04) Caroline went swimming.``, then ``(14:05)``, ``(14:07)`` …), so lines are
judged by their *loop key*: the line with list bullets, numbering (``3.``, ``#3``, ``Step 3:``),
priority marks and clock times stripped, whitespace collapsed and case folded.

On loop keys the detector looks for

(a) a block of up to :data:`MAX_PERIOD` lines repeated back-to-back more than
    :data:`MAX_COLLAPSED_REPEATS` times (shorter runs are legitimate: a tool summary written
    twice, the same sub-bullet under two parents);
(b) one line that makes up most of the reply (:data:`DOMINANT_SHARE` of the lines, at least
    :data:`DOMINANT_MIN_REPEATS` times).

Long text (at least :data:`MIN_CHARS` characters) is also checked the older way, on whole lines:
too many identical 200-character windows, more than half of the long lines duplicated, short
lines repeated within a short distance for more than 10,000 characters, or a single very long
line that is itself a loop (it compresses far better than prose).

Repetition can be faithful: a conversation that polls a job sixty times is observed as many
similar lines. Give the Observer's input as ``source`` and a repeated line is spared when the
source holds at least half as many lines with the same content words. Without a source only
the loop keys decide, so lines that differ by more than their time (a job id, an attempt
count, a status) are never taken for a loop; with a source, numbers are also masked (a loop
that counts up on every line is caught) and the source decides. Never pass the observation log
as the source of a reflection: a loop already in the log must not excuse a Reflector that copies it.
"""

from __future__ import annotations

import functools
import math
import re
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MIN_CHARS",
    "Loop",
    "find_loop",
    "is_degenerate",
    "content_words",
    "loop_key",
    "supported_by",
]

MIN_CHARS = 2_000
"""Text at least this long also gets the whole-line checks (short text only the loop keys)."""

LONG_LINE = 24
"""Lines at least this long (stripped) count as long lines."""

WINDOW_CHARS = 200
WINDOW_SAMPLES = 50
MIN_WINDOW_SAMPLES = 10
WINDOW_DUPLICATE_RATIO = 0.4

MIN_LONG_LINES = 20
LINE_DUPLICATE_RATIO = 0.5

SHORT_RUN_CHARS = 10_000

MAX_PERIOD = 40
"""Longest block (in lines) whose back-to-back repetitions are looked for."""

MAX_COLLAPSED_REPEATS = 8
"""A block repeated back-to-back at most this many times is legitimate."""

DOMINANT_MIN_REPEATS = 6
"""A single loop key must occur at least this often to dominate a reply."""

DOMINANT_SHARE = 0.5
"""Share of a reply's lines one loop key must reach to count as a loop."""

DOMINANT_MIN_KEY_CHARS = 12
"""Loop keys shorter than this ("ok", "-> done") never dominate: they carry no claim."""

LONG_SINGLE_LINE = 1_500
SINGLE_LINE_COMPRESSION = 8.0

SOURCE_WORD_SHARE = 0.5
"""A source line supports a repeated line when it holds this share of its content words."""

_BULLET = re.compile(
    r"^(?:[-*+•>→]+|\d{1,4}[.)]|#\d+[.):]?|\(\d{1,4}\)|(?:step|item|no\.?)\s*\d+[.):]?)\s*",
    re.IGNORECASE,
)
_MARKS = re.compile("[🔴🟡🟢✅⚠❌\ufe0f]")
_CLOCK = re.compile(r"\(?\b\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]\.?m\.?)?\)?", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_DIGITS = re.compile(r"(?<![^\W\d_])\d+(?:[.,]\d+)*")
"""Standalone numbers (not the digits of a token such as ``w123`` or ``h2o``)."""
_WORD = re.compile(r"[^\W\d_]{3,}")
_STOPWORDS = frozenset(
    "the and for that this with was were are has have had not but from they their them then "
    "than its it's into onto about again also said says user assistant tool result call".split()
)


@dataclass(frozen=True)
class Loop:
    """A repetition loop found in a reply."""

    kind: str
    """Which check found it: ``"run"``, ``"dominant"``, ``"windows"``, ``"long-lines"``,
    ``"short-lines"`` or ``"long-line"``."""
    unit: tuple[str, ...]
    """The repeated loop keys (one line, or the block)."""
    repeats: int
    """How often the unit occurs."""


@functools.lru_cache(maxsize=4096)
def loop_key(line: str) -> str:
    """The part of a line that a loop repeats: bullets, numbering, marks and times removed.

    Memoised: a log's lines are checked again by every reply judged against it.
    """
    text = line.strip()
    previous = None
    while text and text != previous:
        previous = text
        text = _MARKS.sub("", _BULLET.sub("", text, count=1)).strip()
    text = _CLOCK.sub(" ", text)
    return _SPACE.sub(" ", text).strip(" .,;:-").casefold()


def is_degenerate(text: str, *, source: str | None = None) -> bool:
    """Whether ``text`` looks like a repetition loop (see :func:`find_loop`)."""
    return _is_degenerate(text, source)


@functools.lru_cache(maxsize=64)
def _is_degenerate(text: str, source: str | None) -> bool:
    """:func:`is_degenerate`, memoised: parsing a reply and judging it check the same text."""
    return find_loop(text, source=source) is not None


def find_loop(text: str, *, source: str | None = None) -> Loop | None:
    """The repetition loop in ``text``, or ``None``.

    Args:
        text: a model reply (Observer or Reflector output).
        source: the text the reply was written from (the Observer's rendered input). A repeated
            line the source repeats as often (at least half as many similar lines) is faithful,
            not a loop.
    """
    raw_lines = [line.strip() for line in text.splitlines()]
    raw_lines = [line for line in raw_lines if line]
    if not raw_lines:
        return None
    keys = [loop_key(line) for line in raw_lines]
    keys = [key for key in keys if key]
    found = _keyed_run(keys) or _dominant(keys)
    if found is None and len(text) >= MIN_CHARS:
        found = _whole_line_checks(raw_lines)
    if found is None and source is not None:
        # With a source to excuse faithful repetition, a number that changes on every line
        # (``Item 1 was checked``, ``Item 2 was checked`` …) no longer hides a loop.
        numbered = [_DIGITS.sub("#", key) for key in keys]
        found = _keyed_run(numbered) or _dominant(numbered)
    if found is None or source is None or found.kind == "long-line":
        return found
    return None if supported_by(found, source) else found


# --------------------------------------------------------------------------------------------
# Checks on loop keys
# --------------------------------------------------------------------------------------------


def _repetition_at(lines: Sequence[str], i: int) -> tuple[int, int]:
    """Smallest period p such that ``lines[i:i+p]`` repeats right after itself, and the count."""
    n = len(lines)
    for period in range(1, min(MAX_PERIOD, (n - i) // 2) + 1):
        if lines[i] != lines[i + period]:
            continue
        if lines[i : i + period] != lines[i + period : i + 2 * period]:
            continue
        repeats = 2
        block = lines[i : i + period]
        start = i + 2 * period
        while start + period <= n and lines[start : start + period] == block:
            repeats += 1
            start += period
        return period, repeats
    return 0, 0


def _keyed_run(keys: Sequence[str]) -> Loop | None:
    i, n = 0, len(keys)
    while i < n:
        period, repeats = _repetition_at(keys, i)
        if period == 0:
            i += 1
            continue
        if repeats > MAX_COLLAPSED_REPEATS:
            return Loop("run", tuple(keys[i : i + period]), repeats)
        i += period * repeats
    return None


def _dominant(keys: Sequence[str]) -> Loop | None:
    counts = Counter(key for key in keys if len(key) >= DOMINANT_MIN_KEY_CHARS)
    if not counts:
        return None
    key, repeats = counts.most_common(1)[0]
    if repeats >= DOMINANT_MIN_REPEATS and repeats >= DOMINANT_SHARE * len(keys):
        return Loop("dominant", (key,), repeats)
    return None


# --------------------------------------------------------------------------------------------
# Whole-line checks for long text
# --------------------------------------------------------------------------------------------


def _collapse_bounded_runs(lines: list[str]) -> list[str]:
    """Replace a block repeated back-to-back 2..MAX_COLLAPSED_REPEATS times by one copy."""
    out: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        period, repeats = _repetition_at(lines, i)
        if period == 0:
            out.append(lines[i])
            i += 1
            continue
        span = period * repeats
        out.extend(lines[i : i + (period if repeats <= MAX_COLLAPSED_REPEATS else span)])
        i += span
    return out


def _whole_line_checks(raw_lines: list[str]) -> Loop | None:
    lines = _collapse_bounded_runs(raw_lines)
    long_lines = [line for line in lines if len(line) >= LONG_LINE]
    for check in (_window_duplicates, _duplicate_long_lines):
        found = check(long_lines)
        if found is not None:
            return found
    return _short_line_runs(lines) or _looping_long_line(lines)


def _most_common(lines: Sequence[str]) -> tuple[tuple[str, ...], int]:
    key, repeats = Counter(loop_key(line) for line in lines).most_common(1)[0]
    return (key,), repeats


def _window_duplicates(long_lines: list[str]) -> Loop | None:
    if not long_lines:
        return None
    joined = "\n".join(long_lines)
    starts: list[int] = []
    offset = 0
    for line in long_lines:
        starts.append(offset)
        offset += len(line) + 1
    # Only windows that are complete: a short tail window says nothing about repetition.
    starts = [s for s in starts if s + WINDOW_CHARS <= len(joined)]
    if len(starts) < MIN_WINDOW_SAMPLES:
        return None
    step = max(1, len(starts) // WINDOW_SAMPLES)
    sampled = starts[::step][:WINDOW_SAMPLES]
    windows = [joined[s : s + WINDOW_CHARS] for s in sampled]
    duplicates = len(windows) - len(set(windows))
    if duplicates / len(windows) <= WINDOW_DUPLICATE_RATIO:
        return None
    return Loop("windows", *_most_common(long_lines))


def _duplicate_long_lines(long_lines: list[str]) -> Loop | None:
    if len(long_lines) < MIN_LONG_LINES:
        return None
    duplicates = len(long_lines) - len(set(long_lines))
    if duplicates / len(long_lines) <= LINE_DUPLICATE_RATIO:
        return None
    return Loop("long-lines", *_most_common(long_lines))


def _short_line_runs(lines: list[str]) -> Loop | None:
    total = 0
    repeated: list[str] = []
    for i, line in enumerate(lines):
        if len(line) >= LONG_LINE:
            continue
        if line in lines[max(0, i - MAX_PERIOD) : i]:
            total += len(line) + 1
            repeated.append(line)
            if total > SHORT_RUN_CHARS:
                return Loop("short-lines", *_most_common(repeated))
    return None


def _looping_long_line(lines: list[str]) -> Loop | None:
    for line in lines:
        if len(line) < LONG_SINGLE_LINE:
            continue
        raw = line.encode("utf-8")
        if len(raw) / len(zlib.compress(raw, 6)) > SINGLE_LINE_COMPRESSION:
            return Loop("long-line", (line[:80],), 1)
    return None


# --------------------------------------------------------------------------------------------
# Faithful repetition
# --------------------------------------------------------------------------------------------


def content_words(text: str) -> set[str]:
    """Words of three or more letters of ``text``, stop words and memory verbs left out."""
    return _content_words(text)


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if w not in _STOPWORDS}


def supported_by(loop: Loop, source: str) -> bool:
    """Whether ``source`` repeats the loop's content about as often as the reply does.

    The loop's longest unit supplies the content words (stop words dropped); the source must
    hold at least half of them in at least half as many lines as the loop has repeats.
    """
    words = max((_content_words(key) for key in loop.unit), key=len)
    if not words:
        return False
    need_words = max(1, math.ceil(len(words) * SOURCE_WORD_SHARE))
    need_lines = max(2, loop.repeats // 2)
    found = 0
    for line in source.splitlines():
        if len(words & _content_words(line)) >= need_words:
            found += 1
            if found >= need_lines:
                return True
    return False
