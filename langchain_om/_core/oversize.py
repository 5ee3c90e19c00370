"""Messages too large for the Observer: keep the head and the tail, say what was cut.

A message larger than the Observer's budget would fail every cycle (the call exceeds the
model's context) and block its thread for good. It is observed in part instead: the beginning
and the end are kept (questions and conclusions usually sit there) and the middle is replaced
by a note giving the number of tokens left out. The raw message stays whole in the archive,
where recall can page it back; only the Observer's view is cut.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from langchain_om._core.truncation import cut_to_tokens

__all__ = ["HEAD_SHARE", "MiddleCut", "clip_middle", "cut_note"]

HEAD_SHARE = 0.6
"""Share of the budget given to the head; the tail gets the rest."""

_SNAP_CHARS = 200
"""How far a cut may move back to a line break or space, so words are not split."""


def cut_note(tokens: int) -> str:
    """The note that stands for ``tokens`` tokens cut from the middle of a message."""
    return (
        f"[… {tokens:,} tokens of this message were cut here to fit the Observer; "
        "the full message is kept in the archive …]"
    )


@dataclass(frozen=True)
class MiddleCut:
    """A message's text as the Observer is shown it."""

    text: str
    cut_tokens: int
    """Tokens left out (0 when the text fitted)."""
    head_chars: int
    """Characters kept from the start."""
    tail_chars: int
    """Characters kept from the end."""

    @property
    def cut(self) -> bool:
        """Whether anything was left out."""
        return self.cut_tokens > 0


def _snap_head(text: str, end: int) -> int:
    window = text[max(0, end - _SNAP_CHARS) : end]
    for mark in ("\n", " "):
        at = window.rfind(mark)
        if at >= 0:
            return end - len(window) + at + 1
    return end


def _snap_tail(text: str, start: int) -> int:
    window = text[start : start + _SNAP_CHARS]
    for mark in ("\n", " "):
        at = window.find(mark)
        if at >= 0:
            return start + at + 1
    return start


def _longest_suffix(text: str, max_tokens: int, count: Callable[[str], int]) -> int:
    """Start index of the longest suffix of ``text`` within ``max_tokens``."""
    lo, hi = 0, len(text)  # invariant: the suffix from hi fits
    if max_tokens <= 0:
        return len(text)
    while lo < hi:
        mid = (lo + hi) // 2
        if count(text[mid:]) <= max_tokens:
            hi = mid
        else:
            lo = mid + 1
    return hi


def clip_middle(
    text: str, max_tokens: int, count: Callable[[str], int], *, head_share: float = HEAD_SHARE
) -> MiddleCut:
    """``text`` within ``max_tokens``: its head and tail around a :func:`cut_note`.

    Returns the text unchanged when it fits. Cuts fall on a line break or space when one is
    near. The result never exceeds ``max_tokens`` (when even the note does not fit, the head
    alone is kept).

    Raises:
        ValueError: ``head_share`` is not between 0 and 1.
    """
    if not 0.0 <= head_share <= 1.0:
        raise ValueError(f"head_share must be between 0 and 1, got {head_share}")
    total = count(text)
    if total <= max_tokens:
        return MiddleCut(text, 0, len(text), 0)
    budget = max(0, max_tokens)
    note_cost = count("\n" + cut_note(total) + "\n")
    if note_cost >= budget:
        head = cut_to_tokens(text, budget, count)
        return MiddleCut(head, max(1, total - count(head)), len(head), 0)
    room = budget - note_cost
    for _ in range(6):
        head_budget = int(room * head_share)
        head = cut_to_tokens(text, head_budget, count)
        head_end = _snap_head(text, len(head)) if len(head) < len(text) else len(head)
        rest = text[head_end:]
        tail_start = _longest_suffix(rest, room - count(text[:head_end]), count)
        if 0 < tail_start < len(rest):
            tail_start = _snap_tail(rest, tail_start)
        head_text, tail_text = text[:head_end].rstrip(), rest[tail_start:].lstrip()
        cut = max(1, total - count(head_text) - count(tail_text))
        joined = "\n".join(part for part in (head_text, cut_note(cut), tail_text) if part)
        if count(joined) <= budget:
            return MiddleCut(joined, cut, len(head_text), len(tail_text))
        room -= max(1, count(joined) - budget)
        if room <= 0:
            break
    head = cut_to_tokens(text, budget, count)
    return MiddleCut(head, max(1, total - count(head)), len(head), 0)
