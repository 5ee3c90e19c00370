"""Archive mode, the pure part: which groups retire, and the catalog the agent sees of them.

In archive mode the observation log is never rewritten. When it reaches ``after_tokens``, its
oldest whole groups retire into an archive entry (stored by the plan in
:mod:`langchain_om._plans.archive`) and the newest groups, at least ``keep_tokens`` of them,
stay live. The agent sees a *catalog* of retired groups, newest first, within
``max_catalog_tokens``: one row per group with its archive and group ids, its dates, its
message range and the Observer's one-line label of it. Rows that do not fit are hidden behind
a marker naming where they start, and ``recall(mode="observations")`` pages through all of
them and reads any one back word for word.

The record keeps the catalog rows it shows (bounded by the budget) and a short chain of the
newest archive ids, so the catalog renders without a store read and a checkpoint fork sees
exactly the archives of its own history.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_om._core.types import ObservationGroup

__all__ = [
    "CATALOG_CLOSE",
    "CATALOG_OPEN",
    "CHAIN_MAX",
    "ArchivePlan",
    "CatalogRow",
    "catalog_note",
    "catalog_rows",
    "catalog_text",
    "fit_catalog",
    "group_label",
    "plan_archive",
]

CATALOG_OPEN = "<archived-observations>"
CATALOG_CLOSE = "</archived-observations>"
CHAIN_MAX = 50
"""Archive ids a record (and each archive entry) keeps of its chain, newest first."""
LABEL_CHARS = 160
"""Longest catalog label of one group."""

CatalogRow = dict[str, Any]
"""``{"archive_id", "generation", "group_id", "summary", "from", "to", "range"}``."""


@dataclass(frozen=True)
class ArchivePlan:
    """The groups that retire (oldest first) and the live tail that stays."""

    retired: list[ObservationGroup]
    retained: list[ObservationGroup]


def plan_archive(
    groups: Sequence[ObservationGroup], *, after_tokens: int, keep_tokens: int
) -> ArchivePlan | None:
    """Retire the oldest whole groups once the log reaches ``after_tokens``.

    The newest group always stays, and older ones stay until the live tail holds at least
    ``keep_tokens``; everything before it retires. ``None`` when the log is below
    ``after_tokens`` or when the live tail would be the whole log (no progress possible).
    """
    total = sum(int(g["tokens"]) for g in groups)
    if not groups or total < after_tokens:
        return None
    start = len(groups) - 1
    kept = int(groups[start]["tokens"])
    while start > 0 and kept < keep_tokens:
        start -= 1
        kept += int(groups[start]["tokens"])
    if start == 0:
        return None
    return ArchivePlan(list(groups[:start]), list(groups[start:]))


def group_label(group: Mapping[str, Any]) -> str:
    """The catalog label of a group: the Observer's summary, else its date and range."""
    summary = " ".join(str(group.get("summary") or "").split())
    if not summary:
        day = str(group.get("observed_at") or "")[:10]
        bounds = group.get("range") or []
        where = f" ({bounds[0]}:{bounds[-1]})" if bounds else ""
        summary = f"Conversation observed on {day}{where}" if day else f"Conversation{where}"
    if len(summary) > LABEL_CHARS:
        summary = summary[: LABEL_CHARS - 1].rstrip() + "…"
    return summary


def catalog_rows(
    archive_id: str, generation: int, groups: Sequence[ObservationGroup]
) -> list[CatalogRow]:
    """Catalog rows of one archive entry's groups, newest first."""
    rows: list[CatalogRow] = []
    for group in reversed(groups):
        bounds = group.get("range") or []
        rows.append(
            {
                "archive_id": archive_id,
                "generation": generation,
                "group_id": group["id"],
                "summary": group_label(group),
                "from": _date_span(group)[0],
                "to": _date_span(group)[1],
                "range": f"{bounds[0]}:{bounds[-1]}" if bounds else None,
            }
        )
    return rows


def _date_span(group: Mapping[str, Any]) -> tuple[str, str]:
    """First and last ``Date:`` header of a group's text (its observation day otherwise)."""
    days = [
        line.strip()[5:].strip()
        for line in str(group.get("text") or "").splitlines()
        if line.strip().startswith("Date:")
    ]
    fallback = str(group.get("observed_at") or "")[:10]
    return (days[0], days[-1]) if days else (fallback, fallback)


def _escape(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def _row(row: Mapping[str, Any], summary: str | None = None) -> str:
    dates = str(row["from"]) if row["to"] == row["from"] else f"{row['from']} - {row['to']}"
    attributes = [
        f'archive-id="{_escape(str(row["archive_id"]))}"',
        f'group-id="{_escape(str(row["group_id"]))}"',
        f'dates="{_escape(dates)}"',
    ]
    if row.get("range"):
        attributes.append(f'range="{_escape(str(row["range"]))}"')
    text = _escape(row["summary"] if summary is None else summary)
    return f"<archived-observation {' '.join(attributes)}>{text}</archived-observation>"


def _hidden(after: str) -> str:
    return f'<hidden-archive-range older-than="{_escape(after)}" />'


def _assemble(lines: Sequence[str], marker: str | None) -> str:
    return "\n".join([CATALOG_OPEN, *lines, *([marker] if marker else []), CATALOG_CLOSE])


def catalog_text(rows: Sequence[Mapping[str, Any]], hidden_after: str | None) -> str:
    """The catalog block: ``rows`` (newest first), then a marker when older rows are hidden.

    The last row's summary may have been cut by :func:`fit_catalog` (its ``cut`` length).
    """
    if not rows and not hidden_after:
        return ""
    lines = [_row(r, _cut(r)) for r in rows]
    return _assemble(lines, _hidden(hidden_after) if hidden_after else None)


def _cut(row: Mapping[str, Any]) -> str | None:
    cut = row.get("cut")
    summary = str(row["summary"])
    if isinstance(cut, int) and 0 <= cut < len(summary):
        return summary[:cut].rstrip() + "…"
    return None


def fit_catalog(
    rows: Sequence[CatalogRow],
    *,
    older: str | None,
    max_tokens: int,
    count: Callable[[str], int],
) -> tuple[list[CatalogRow], str | None, int]:
    """The rows (newest first) that fit ``max_tokens``, the hidden marker, and the tokens.

    ``older`` is the marker of archived groups beyond ``rows`` (the newest of them, as
    ``archive_id/group_id``), ``None`` when there are none. A row that does not fit whole is
    shown with its label cut to fit, when that leaves any of it; the rest are hidden behind a
    marker naming the newest hidden group. Returns ``([], None, 0)`` when not even the
    wrapper and a marker fit.
    """
    if not rows:
        return [], None, 0

    def fits(shown: Sequence[CatalogRow], marker: str | None) -> bool:
        return count(catalog_text(shown, marker)) <= max_tokens

    shown: list[CatalogRow] = []
    marker: str | None = None
    for index, row in enumerate(rows):
        marker = _marker_for(rows, index + 1, older)  # when the rows after this one hide
        if fits([*shown, row], marker):
            shown.append(dict(row))
            continue
        trimmed = _trimmed(shown, row, marker, max_tokens, count)
        if trimmed is not None:
            shown.append(trimmed)
        else:
            marker = _marker_for(rows, index, older)
        break
    while shown and not fits(shown, marker):  # a longer marker than the row it replaced
        shown.pop()
        marker = _marker_for(rows, len(shown), older)
    if not fits(shown, marker):
        return [], None, 0
    return shown, marker, count(catalog_text(shown, marker))


def _marker_for(rows: Sequence[CatalogRow], index: int, older: str | None) -> str | None:
    """What the hidden marker names when ``rows[index:]`` (and ``older``) are not shown."""
    if index < len(rows):
        return f"{rows[index]['archive_id']}/{rows[index]['group_id']}"
    return older


def _trimmed(
    shown: Sequence[CatalogRow],
    row: CatalogRow,
    marker: str | None,
    max_tokens: int,
    count: Callable[[str], int],
) -> CatalogRow | None:
    """``row`` with the longest cut of its label that still fits, or ``None``."""
    summary = str(row["summary"])
    lo, hi, best = 1, len(summary) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        candidate = {**row, "cut": mid}
        if count(catalog_text([*shown, candidate], marker)) <= max_tokens:
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    return best


CATALOG_NOTE_RECALL = """\
The <archived-observations> catalog lists older observations moved out of this context to \
keep it small, newest first. To read one word for word, call the `recall` tool with \
mode="observations" and its archive_id and group_id; mode="observations" without them pages \
through the whole archive, including groups the catalog hides."""
CATALOG_NOTE = """\
The <archived-observations> catalog lists older observations moved out of this context to \
keep it small, newest first: it tells you what was discussed, not the details."""


def catalog_note(retrieval: bool) -> str:
    """The preamble's note on the catalog (how to read it back when recall is on)."""
    return CATALOG_NOTE_RECALL if retrieval else CATALOG_NOTE
