"""Detection of repetition loops in Observer/Reflector output.

A model stuck in a loop writes the same line or block of lines again and again until it hits
its output limit. Such output must never replace memory. Legitimate logs do repeat a little
(a tool summary written twice back-to-back, the same sub-bullet under several parents), so the
detector first collapses *bounded* back-to-back repetitions and only then looks for loops:

(a) windows of 200 characters sampled at the starts of long lines: too many identical windows;
(b) enough long lines, and more than half of them exact duplicates;
(c) short lines repeated within a short distance, adding up to more than 10,000 characters;
(d) a single very long line that is itself a loop (it compresses far better than prose).

Only text of at least :data:`MIN_CHARS` characters is ever degenerate.
"""

from __future__ import annotations

import zlib

__all__ = ["MIN_CHARS", "is_degenerate"]

MIN_CHARS = 2_000
"""Shorter text is never degenerate."""

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
"""Longest block (in lines) whose back-to-back repetitions are collapsed."""

MAX_COLLAPSED_REPEATS = 8
"""A block repeated back-to-back at most this many times is legitimate and collapsed."""

LONG_SINGLE_LINE = 1_500
SINGLE_LINE_COMPRESSION = 8.0


def is_degenerate(text: str) -> bool:
    """Whether ``text`` looks like a repetition loop (only possible for >= 2,000 characters)."""
    if len(text) < MIN_CHARS:
        return False
    lines = [line.strip() for line in text.splitlines()]
    lines = _collapse_bounded_runs([line for line in lines if line])
    return (
        _window_duplicates(lines)
        or _duplicate_long_lines(lines)
        or _short_line_runs(lines)
        or _looping_long_line(lines)
    )


def _collapse_bounded_runs(lines: list[str]) -> list[str]:
    """Replace a block repeated back-to-back 2..MAX_COLLAPSED_REPEATS times by one copy.

    Longer runs are loops and are kept as they are, so the checks below see them.
    """
    out: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        period, repeats = _repetition_at(lines, i)
        if period == 0:
            out.append(lines[i])
            i += 1
            continue
        span = period * repeats
        if repeats <= MAX_COLLAPSED_REPEATS:
            out.extend(lines[i : i + period])
        else:
            out.extend(lines[i : i + span])
        i += span
    return out


def _repetition_at(lines: list[str], i: int) -> tuple[int, int]:
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


def _window_duplicates(lines: list[str]) -> bool:
    long_lines = [line for line in lines if len(line) >= LONG_LINE]
    if not long_lines:
        return False
    joined = "\n".join(long_lines)
    starts: list[int] = []
    offset = 0
    for line in long_lines:
        starts.append(offset)
        offset += len(line) + 1
    # Only windows that are complete: a short tail window says nothing about repetition.
    starts = [s for s in starts if s + WINDOW_CHARS <= len(joined)]
    if len(starts) < MIN_WINDOW_SAMPLES:
        return False
    step = max(1, len(starts) // WINDOW_SAMPLES)
    sampled = starts[::step][:WINDOW_SAMPLES]
    windows = [joined[s : s + WINDOW_CHARS] for s in sampled]
    duplicates = len(windows) - len(set(windows))
    return duplicates / len(windows) > WINDOW_DUPLICATE_RATIO


def _duplicate_long_lines(lines: list[str]) -> bool:
    long_lines = [line for line in lines if len(line) >= LONG_LINE]
    if len(long_lines) < MIN_LONG_LINES:
        return False
    duplicates = len(long_lines) - len(set(long_lines))
    return duplicates / len(long_lines) > LINE_DUPLICATE_RATIO


def _short_line_runs(lines: list[str]) -> bool:
    total = 0
    for i, line in enumerate(lines):
        if len(line) >= LONG_LINE:
            continue
        if line in lines[max(0, i - MAX_PERIOD) : i]:
            total += len(line) + 1
            if total > SHORT_RUN_CHARS:
                return True
    return False


def _looping_long_line(lines: list[str]) -> bool:
    for line in lines:
        if len(line) < LONG_SINGLE_LINE:
            continue
        raw = line.encode("utf-8")
        if len(raw) / len(zlib.compress(raw, 6)) > SINGLE_LINE_COMPRESSION:
            return True
    return False
