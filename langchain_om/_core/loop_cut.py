"""Stopping a model reply as soon as it starts to loop or runs past its budget.

A small model stuck in a loop writes the same line (or two lines taking turns) until its output
limit, changing a time or a count on every line. Judging the reply afterwards
(:mod:`.degenerate`) rejects it, but only after the whole loop was generated and paid for.
:class:`StreamCut` reads the reply while it streams and says when to stop:

- **line loops**: each complete line is reduced to its loop key (:func:`~.degenerate.loop_key`:
  bullets, marks and clock times stripped; with a ``source``, every digit masked too, so a
  count that goes up on every line does not hide a loop), ``Date:`` headers and lone tags
  skipped. A block of up to
  :data:`MAX_PERIOD` keys repeated back to back :data:`RUN_REPEATS` times, or one key of at
  least :data:`KEY_MIN_CHARS` characters seen :data:`SCATTERED_REPEATS` times anywhere, is a
  loop (a block of :data:`LONG_UNIT_CHARS` or more, twice in a row);
- **in-line loops** (inside one long line or a JSON string): the end of the text, digits
  masked, is one piece of :data:`MIN_UNIT_CHARS` to :data:`MAX_UNIT_CHARS` characters written
  :data:`RUN_REPEATS` times in a row;
- **the budget**: the reply reached ``budget`` tokens.

Repetition the source supports is not a loop (a conversation that polls a job many times is
observed as many similar lines): with ``source`` given, a repeated unit whose content words
appear in at least half as many source lines is let through (and checked again as it goes on).

On a loop, :attr:`StreamCut.kept` is the text before the loop's first occurrence, cut back to
the last complete line: what a salvage may still use. On a budget stop it is the text up to the
last complete line.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from langchain_om._core.dates import parse_date_header
from langchain_om._core.degenerate import Loop, content_words, loop_key, supported_by

__all__ = [
    "CHECK_EVERY_CHARS",
    "KEY_MIN_CHARS",
    "LONG_UNIT_CHARS",
    "MAX_PERIOD",
    "MAX_UNIT_CHARS",
    "MIN_UNIT_CHARS",
    "RUN_REPEATS",
    "SCATTERED_REPEATS",
    "Cut",
    "StreamCut",
    "cut_text",
]

MAX_PERIOD = 8
"""Longest block of lines (in lines) whose back-to-back repetition is looked for."""

RUN_REPEATS = 3
"""A block (of lines, or of characters within a line) written this many times in a row is a
loop. Faithful observations rarely repeat a whole line three times in a row once times and
numbers are masked; when the source does, the source excuses it."""

LONG_UNIT_CHARS = 120
"""A block of lines at least this long (its keys' characters) is a loop when written twice in
a row: faithful observations do not repeat that much text back to back."""

SCATTERED_REPEATS = 4
"""One line key seen this many times anywhere in the reply is a loop (unless supported)."""

KEY_MIN_CHARS = 12
"""Keys shorter than this never count as scattered repeats ("ok", "done")."""

MIN_UNIT_CHARS = 16
"""Shortest repeated piece of text that counts as an in-line loop."""

MAX_UNIT_CHARS = 320
"""Longest repeated piece of text looked for within a line."""

CHECK_EVERY_CHARS = 48
"""How often (in characters of an unfinished line) the in-line check runs."""

_DIGIT = re.compile(r"\d")
_LONE_TAG = re.compile(r"^\s*</?[A-Za-z][\w-]*\s*>\s*$")
_JSON_MEMBER = re.compile(r'^"[^"]{1,40}"\s*:\s*(.*)$')

CutReason = Literal["loop", "budget"]


@dataclass(frozen=True)
class Cut:
    """Why and where a reply was stopped."""

    reason: CutReason
    kept: str
    """The reply before the loop (or up to the last complete line before the budget)."""
    loop: Loop | None
    """The loop found (``None`` for a budget stop)."""
    tokens: int
    """Tokens of the reply when it was stopped (an estimate while streaming)."""


def _mask(text: str) -> str:
    return _DIGIT.sub("#", text)


def _key(line: str, masked: bool) -> str:
    key = loop_key(line)
    return _mask(key) if masked else key


def _skipped(line: str) -> bool:
    """Lines that carry no claim of their own: blanks, lone tags, ``Date:`` headers, and the
    short members of a JSON reply (``"priority": "high",`` repeats in every observation)."""
    stripped = line.strip()
    if not stripped or _LONE_TAG.match(stripped):
        return True
    member = _JSON_MEMBER.match(stripped)
    if member is not None and len(member.group(1).strip(' ,"[]{}')) < KEY_MIN_CHARS:
        return True
    return parse_date_header(stripped.strip("*#_ ").strip()) is not None


class StreamCut:
    """Watches a streaming reply; :meth:`feed` returns ``True`` when generation should stop.

    Args:
        budget: stop once the reply holds this many tokens (``None``: no budget).
        count: the token counter (used per complete line; unfinished text is estimated).
        source: the text the reply is written from; repetition it supports is not a loop.
    """

    def __init__(
        self,
        *,
        budget: int | None = None,
        count: Callable[[str], int] | None = None,
        source: str | None = None,
    ) -> None:
        self.budget = budget
        self._count = count or (lambda text: (len(text) + 3) // 4)
        self._source = source
        self.text = ""
        self.cut: Cut | None = None
        self._line_start = 0
        self._checked_at = 0
        self._tokens = 0
        self._keys: list[tuple[str, int]] = []
        """(key, start offset) of every counted line."""
        self._key_list: list[str] = []
        """The keys of ``_keys`` alone."""
        self._seen: Counter[str] = Counter()
        self._excused: dict[tuple[str, ...], int] = {}

    # -- feeding --------------------------------------------------------------------------------

    def feed(self, delta: str) -> bool:
        """Add ``delta`` to the reply; ``True`` once the reply should stop (then stays ``True``)."""
        if self.cut is not None:
            return True
        if not delta:
            return False
        start = len(self.text)
        self.text += delta
        position = start
        while self.cut is None:
            newline = self.text.find("\n", position)
            if newline < 0:
                break
            self._line_done(self.text[self._line_start : newline], self._line_start)
            self._line_start = position = newline + 1
            self._checked_at = self._line_start
        if self.cut is None:
            self._inline_check()
        return self.cut is not None

    def finish(self) -> Cut | None:
        """Judge the last, unterminated line (call once the stream ended)."""
        if self.cut is None and self._line_start < len(self.text):
            self._line_done(self.text[self._line_start :], self._line_start)
            self._line_start = len(self.text)
        return self.cut

    def stop_at_budget(self) -> Cut:
        """Record that the provider stopped the reply at its output limit (a budget cut)."""
        if self.cut is None:
            self._stop("budget", len(self.text), None)
        assert self.cut is not None
        return self.cut

    @property
    def tokens(self) -> int:
        """Tokens of the complete lines so far plus an estimate of the unfinished one."""
        return self._tokens + (len(self.text) - self._line_start + 3) // 4

    # -- checks ---------------------------------------------------------------------------------

    def _line_done(self, line: str, offset: int) -> None:
        self._tokens += self._count(line) + 1 if line.strip() else 1
        if self._inline_loop(line, offset):
            return
        if not _skipped(line):
            key = _key(line, self._source is not None)
            if key:
                self._keys.append((key, offset))
                self._key_list.append(key)
                self._seen[key] += 1
                if self._run_loop() or self._scattered_loop(key):
                    return
        if self.budget is not None and self._tokens >= self.budget:
            self._stop("budget", offset + len(line) + 1, None)

    def _inline_check(self) -> None:
        if len(self.text) - self._checked_at < CHECK_EVERY_CHARS:
            return
        self._checked_at = len(self.text)
        if self._inline_loop(self.text[self._line_start :], self._line_start):
            return
        if self.budget is not None and self.tokens >= self.budget:
            self._stop("budget", len(self.text), None)

    def _run_loop(self) -> bool:
        keys = self._key_list
        n = len(keys)
        for period in range(1, min(MAX_PERIOD, n // 2) + 1):
            if keys[n - 1 - period] != keys[n - 1]:
                continue  # the newest line does not come back at this period
            unit = keys[n - period :]
            # A long block written twice in a row is already a loop; a short one, three times.
            need = 2 if sum(len(k) for k in unit) >= LONG_UNIT_CHARS else RUN_REPEATS
            if n < need * period:
                continue
            if any(keys[n - (r + 1) * period : n - r * period] != unit for r in range(need)):
                continue
            repeats, first = need, n - need * period
            while first - period >= 0 and keys[first - period : first] == unit:
                repeats += 1
                first -= period
            # The loop starts where the repeated unit first appears (it may be rotated).
            while first > 0 and keys[first - 1] == keys[first - 1 + period]:
                first -= 1
            if self._flag(Loop("run", tuple(unit), repeats), self._keys[first][1]):
                return True
        return False

    def _scattered_loop(self, key: str) -> bool:
        repeats = self._seen[key]
        if repeats < SCATTERED_REPEATS or len(key) < KEY_MIN_CHARS:
            return False
        first = next(offset for k, offset in self._keys if k == key)
        return self._flag(Loop("dominant", (key,), repeats), first)

    def _inline_loop(self, line: str, offset: int) -> bool:
        masked = _mask(line.rstrip())
        size = len(masked)
        for unit in range(MIN_UNIT_CHARS, min(MAX_UNIT_CHARS, size // RUN_REPEATS) + 1):
            if masked[size - 1 - unit] != masked[size - 1]:
                continue  # the last character does not come back at this distance
            piece = masked[size - unit :]
            if not piece.strip() or masked[size - 2 * unit : size - unit] != piece:
                continue
            if masked[size - 3 * unit : size - 2 * unit] != piece:
                continue
            start = size - 3 * unit
            while start - unit >= 0 and masked[start - unit : start] == piece:
                start -= unit
            while start > 0 and masked[start - 1] == masked[start - 1 + unit]:
                start -= 1
            repeats = (size - start) // unit
            if self._flag(Loop("long-line", (piece.strip(),), repeats), offset, inline=start):
                return True
            return False
        return False

    def _flag(self, loop: Loop, line_offset: int, *, inline: int | None = None) -> bool:
        """Stop at ``loop`` unless the source supports it (asked again as it grows).

        A unit with no content word (``ok``, numbers) claims nothing: it is left to the budget
        and to the judge of the whole reply.
        """
        if not any(content_words(key) for key in loop.unit):
            return False
        if self._source is not None:
            asked = self._excused.get(loop.unit)
            if asked is not None and loop.repeats < 2 * asked:
                return False
            if supported_by(loop, self._source):
                self._excused[loop.unit] = loop.repeats
                return False
        if inline is not None:
            # A loop inside a line keeps the line's text before the loop when the line is the
            # reply's only one (a JSON reply); otherwise the line is dropped whole.
            cut_at = line_offset + inline if "\n" not in self.text[:line_offset] else line_offset
        else:
            cut_at = line_offset
        self._stop("loop", cut_at, loop)
        return True

    def _stop(self, reason: CutReason, at: int, loop: Loop | None) -> None:
        kept = self.text[:at]
        if reason == "budget":
            newline = kept.rfind("\n")
            if newline >= 0:  # keep whole lines; a one-line reply (JSON) keeps its text
                kept = kept[: newline + 1]
        self.cut = Cut(reason, kept, loop, self.tokens)


def cut_text(
    text: str,
    *,
    budget: int | None = None,
    count: Callable[[str], int] | None = None,
    source: str | None = None,
) -> tuple[str, Cut | None]:
    """``text`` as a stream cut by :class:`StreamCut` would leave it: ``(text, cut)``.

    The text returned is what the model would have written before it was stopped (all of
    ``text`` when nothing stopped it); ``cut.kept`` is what a salvage may use.
    """
    guard = StreamCut(budget=budget, count=count, source=source)
    step = 16
    for start in range(0, len(text), step):
        if guard.feed(text[start : start + step]):
            break
    cut = guard.cut or guard.finish()
    return (guard.text if cut is not None else text), cut
