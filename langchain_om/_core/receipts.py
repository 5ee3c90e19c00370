"""Receipts: the messages each observation line was written from, and what memory saved.

Every group a cycle writes keeps, per line, the archive positions of the messages that cycle
observed: ``receipts = [[first_line, [[lo, hi], …]], …]``, oldest line first. Line ``i`` of the
group was written from the messages at sequence numbers ``lo <= seq < hi`` of each span of
the last entry whose ``first_line <= i``. Positions are on the record's archive branch path
(:mod:`langchain_om._core.branches`), which keeps every observed position as it was, so a
receipt is read back exactly from the archive whatever forks follow.

A reflection condenses whole groups, so each of its lines is written from the messages of
every group it merged (their spans, joined). Groups written before receipts existed (or by
resource scope, whose log mixes threads) have none: their lines answer with no positions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_om._core.line_edits import line_id
from langchain_om._core.types import ObservationGroup, OMRecord

__all__ = [
    "LineReceipt",
    "Savings",
    "cycle_receipts",
    "find_line",
    "group_spans",
    "line_spans",
    "merge_spans",
    "parts_receipts",
    "reflection_receipts",
    "savings",
    "span_count",
]

Span = list[int]
"""``[lo, hi]``: archive sequence numbers ``lo <= seq < hi``."""


def merge_spans(spans: Iterable[Sequence[int]]) -> list[Span]:
    """``spans`` sorted, with overlapping and touching spans joined (empty ones dropped)."""
    out: list[Span] = []
    for lo, hi in sorted((int(s[0]), int(s[1])) for s in spans if len(s) == 2 and s[1] > s[0]):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def span_count(spans: Sequence[Sequence[int]]) -> int:
    """How many positions ``spans`` hold."""
    return sum(max(0, int(hi) - int(lo)) for lo, hi in spans)


def cycle_receipts(first_seq: int, count: int) -> list[list[Any]]:
    """The receipts of a group one cycle wrote from ``count`` messages archived at ``first_seq``."""
    return [[0, [[first_seq, first_seq + count]]]] if count > 0 else []


def parts_receipts(first_seq: int, parts: Sequence[tuple[int, int]]) -> list[list[Any]]:
    """Receipts of a group observed in parts: ``parts`` is ``(lines, messages)`` per part.

    Part ``k``'s lines (the ``lines`` that follow the previous parts' lines) were written from
    its ``messages`` (the ones after the previous parts' messages).
    """
    out: list[list[Any]] = []
    line, seq = 0, first_seq
    for lines, messages in parts:
        if messages > 0 and lines > 0:
            out.append([line, [[seq, seq + messages]]])
        line, seq = line + lines, seq + messages
    return out


def _entries(group: Mapping[str, Any]) -> list[tuple[int, list[Span]]]:
    raw = group.get("receipts")
    out: list[tuple[int, list[Span]]] = []
    if isinstance(raw, list):
        for entry in raw:
            if (
                isinstance(entry, (list, tuple))
                and len(entry) == 2
                and isinstance(entry[0], int)
                and isinstance(entry[1], list)
            ):
                spans = [s for s in entry[1] if isinstance(s, (list, tuple)) and len(s) == 2]
                out.append((entry[0], merge_spans(spans)))
    return sorted(out, key=lambda e: e[0])


def group_spans(group: Mapping[str, Any]) -> list[Span]:
    """Every position a group's lines were written from (joined)."""
    return merge_spans(s for _, spans in _entries(group) for s in spans)


def line_spans(group: Mapping[str, Any], index: int) -> list[Span]:
    """The positions line ``index`` of ``group`` was written from (``[]``: not known)."""
    found: list[Span] = []
    for first, spans in _entries(group):
        if first <= index:
            found = spans
    return found


def reflection_receipts(groups: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """The receipts of a reflection of ``groups``: all their messages, for every line."""
    spans = merge_spans(s for g in groups for s in group_spans(g))
    return [[0, spans]] if spans else []


@dataclass(frozen=True)
class LineReceipt:
    """One observation line and where it came from."""

    line_id: str
    text: str
    group: ObservationGroup
    index: int
    spans: list[Span]

    @property
    def message_count(self) -> int:
        """How many archived messages the line was written from."""
        return span_count(self.spans)


def _is_line(text: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith("Date:")


def find_line(record: Mapping[str, Any], ref: str) -> LineReceipt | None:
    """The line ``ref`` names: a line id (``L`` + 6 hex), else the newest line holding ``ref``.

    Text is matched case-insensitively with runs of spaces joined, so a line copied from the
    memory context (relative-date labels aside) finds its line.
    """
    wanted = " ".join(ref.split()).lower()
    if not wanted:
        return None
    groups: list[ObservationGroup] = list(record.get("groups") or [])
    lines = [(g, i, line) for g in groups for i, line in enumerate(g["text"].splitlines())]
    lines = [(g, i, line) for g, i, line in lines if _is_line(line)]
    by_id = (x for x in lines if line_id(x[0]["id"], x[1]).lower() == wanted)
    by_text = (x for x in reversed(lines) if wanted in " ".join(x[2].split()).lower())
    found = next(by_id, None) or next(by_text, None)  # an id names one line exactly
    if found is None:
        return None
    group, index, line = found
    return LineReceipt(
        line_id(group["id"], index), line.strip(), group, index, line_spans(group, index)
    )


@dataclass(frozen=True)
class Savings:
    """Tokens of the messages memory observed against the memory context shown for them."""

    observed_tokens: int
    """Tokens of every message observed so far (they left the window)."""
    context_tokens: int
    """Tokens of the memory the agent is shown in their place (log and archive catalog)."""

    @property
    def tokens_saved(self) -> int:
        """``observed_tokens - context_tokens`` (0 when the memory is larger)."""
        return max(0, self.observed_tokens - self.context_tokens)


def savings(record: OMRecord | Mapping[str, Any]) -> Savings:
    """What the record saves: observed message tokens against its log and catalog tokens."""
    archive = record.get("archive")
    catalog = int(archive.get("catalog_tokens") or 0) if isinstance(archive, Mapping) else 0
    return Savings(
        observed_tokens=int(record.get("total_tokens_observed") or 0),
        context_tokens=int(record.get("observation_tokens") or 0) + catalog,
    )
