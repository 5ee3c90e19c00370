"""The memory context the agent's model sees: preamble, observation log, continuation hints.

The context is a list of *blocks* meant to be sent as separate text parts of one system
message, ordered from most to least stable so provider prompt caches keep working::

    [preamble, "<observations>" + group 1, group 2, ..., group n, "</observations>", hints]

* The preamble depends only on the options (and recall instructions).
* Group ``k``'s block depends only on groups ``1..k`` and on the calendar day of ``now``:
  appending a group leaves every earlier block byte-identical, and relative labels such as
  "(3 days ago)" change only when the day changes.
* The hints (``<current-task>``, ``<suggested-response>``) change on every observation, so
  they come last.

Observation and hint text cannot close or forge these blocks: the memory's own markup inside
it (section tags, the preamble's line openings, group headings, and ``Date:`` line starts in
hints) is neutralised by :func:`~langchain_om._core.markup.neutralise` as it is rendered.

Relative-time annotations are added at render time (never stored): ``Date:`` headers (also
ranges such as ``Date: Apr 1, 2025 - May 20, 2025``) get a relative label, a gap line like
``[2 weeks later]`` separates dates more than a day apart (across group boundaries too),
resolved dates such as ``(meaning Nov 20, 2026)`` get a relative label, and so do dates written
inside observation lines: full dates (``January 10, 2025``, ``10 January 2025``,
``2025-01-10``), month and year (``March 2024``, ``late April 2023``), fuzzy years
(``late 2023``, ``mid-2024``) and years after a preposition (``in 2023``). A line that states a
plan or wish ("will", "plans to", "looking forward to", …) for a date already past is marked
``likely already happened``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Generic, TypeVar

from langchain_core.messages import SystemMessage

from langchain_om._core.archive import catalog_note, catalog_text
from langchain_om._core.dates import (
    gap_label,
    make_date,
    month_label,
    month_number,
    parse_date_header,
    parse_date_range_header,
    relative_label,
    to_zone,
    year_label,
)
from langchain_om._core.markup import MEMORY_TAGS, line_openings, neutralise
from langchain_om._core.observer_prompts import ALL_HINTS, HintSwitch
from langchain_om._core.preamble import render_preamble, template_text
from langchain_om._core.types import OM_META_KEY, ObservationGroup, OMRecord
from langchain_om.errors import OMUsageError

__all__ = [
    "BLOCK_SEPARATOR",
    "MEMORY_MESSAGE_KIND",
    "MEMORY_OPENINGS",
    "MEMORY_PREAMBLE",
    "RANGES_NOTE",
    "MemoryContext",
    "annotate_relative_time",
    "bounded_groups",
    "hidden_note",
    "memory_preamble",
    "render_memory",
    "text_parts",
]

MEMORY_MESSAGE_KIND = "memory"
"""``response_metadata["langchain_om"]["kind"]`` of the memory system message."""

_PREAMBLE = """\
The <observations> block below is your memory. It was written while you talked with this \
user: it covers earlier parts of THIS conversation whose messages are no longer shown to you, \
and any past conversations with the same user. Treat it as things you remember, not as \
something the user has just said.

How to use it:
- Use it. When the user refers to anything from before, answer from these observations and \
mention the specific details they hold (names, numbers, dates, decisions) rather than \
speaking in general terms.
- Observations are in date order. When two of them disagree, the more recent one is right.
- Dates carry labels relative to today, like "(3 days ago)". A plan or appointment whose date \
has already passed most likely happened; treat it that way unless the observations say \
otherwise.
- Priorities: 🔴 important facts about the user and open goals, 🟡 useful detail, 🟢 minor \
detail, ✅ done.
{hints}- Do not mention this memory, observations, or the system that keeps them. Continue the \
conversation naturally, as someone who remembers it."""

_HINTS_LINES = {
    (True, True): """\
- <current-task> is what you were working on and <suggested-response> is a hint for how to \
continue. The user's latest message always takes priority over both, and over anything else \
in memory.
""",
    (True, False): """\
- <current-task> is what you were working on. The user's latest message always takes \
priority over it, and over anything else in memory.
""",
    (False, True): """\
- <suggested-response> is a hint for how to continue. The user's latest message always takes \
priority over it, and over anything else in memory.
""",
    (False, False): """\
- The user's latest message always takes priority over anything in memory.
""",
}


def memory_preamble(hints: HintSwitch = ALL_HINTS) -> str:
    """The usage guidance, naming only the continuation hints that are on."""
    return _PREAMBLE.format(hints=_HINTS_LINES[hints.current_task, hints.suggested_response])


MEMORY_PREAMBLE = memory_preamble()
"""The usage guidance that opens the memory context."""

RANGES_NOTE = """\
Each observation group shows the `_range` of message ids it was written from. When you \
need the exact original wording, pass one of those ids as the `cursor` of the `recall` tool."""
"""Added to the preamble when group ranges are shown."""

MEMORY_OPENINGS: tuple[str, ...] = line_openings(
    MEMORY_PREAMBLE, RANGES_NOTE, catalog_note(True), catalog_note(False)
)
"""Line openings of the preamble; text the memory did not write cannot start a line with them."""

OBSERVATIONS_OPEN = "<observations>"
OBSERVATIONS_CLOSE = "</observations>"


BLOCK_SEPARATOR = "\n\n"
"""What stands between two blocks of the memory context: a blank line."""


def text_parts(blocks: Sequence[str], *, first: bool = True) -> list[dict[str, str]]:
    """The blocks as the text parts of a system message, a blank line between each two.

    Providers join a message's text parts as they are, and so does LangChain's
    ``message.text``: without a separator ``</observations>`` would run into
    ``<current-task>``. Every part but the message's first opens with
    :data:`BLOCK_SEPARATOR`, so a block's part never depends on the blocks after it and the
    prefix stays byte-identical when a later block changes or goes.

    Args:
        blocks: the context's blocks.
        first: whether the blocks open the message; ``False`` when they follow other content
            of it (the user's system prompt memory is appended to).
    """
    return [
        {"type": "text", "text": block if first and i == 0 else BLOCK_SEPARATOR + block}
        for i, block in enumerate(blocks)
    ]


@dataclass(frozen=True)
class MemoryContext:
    """The rendered memory, as cache-stable blocks.

    ``text`` and the system message read the same: blocks separated by a blank line.

    An empty context (``blocks == []``) means there is nothing to inject: front doors skip
    the memory message entirely.
    """

    blocks: list[str]
    """Cache-stable chunks, most stable first; the hints block (if any) is last."""
    text: str = field(init=False)
    """All blocks joined by blank lines."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", BLOCK_SEPARATOR.join(self.blocks))

    @property
    def is_empty(self) -> bool:
        """Whether there is nothing to inject."""
        return not self.blocks

    def to_system_message(self) -> SystemMessage:
        """One system message with one text part per block.

        The message is tagged ``response_metadata["langchain_om"] = {"kind": "memory"}`` so
        OM never observes its own memory.

        Raises:
            OMUsageError: the context is empty (check ``is_empty`` first).
        """
        if not self.blocks:
            raise OMUsageError(
                "the memory context is empty; skip injecting it (check MemoryContext.is_empty)"
            )
        content: list[str | dict[str, str]] = [*text_parts(self.blocks)]
        return SystemMessage(
            content=content,
            response_metadata={OM_META_KEY: {"kind": MEMORY_MESSAGE_KIND}},
        )


def render_memory(
    record: OMRecord,
    *,
    now: datetime,
    retrieval: bool = False,
    recall_instructions: str | None = None,
    timezone: str | None = None,
    show_ranges: bool | None = None,
    max_observation_tokens: int | None = None,
    count: Callable[[str], int] | None = None,
    preamble: str | None = None,
    working_memory: str | None = None,
    hints: HintSwitch = ALL_HINTS,
) -> MemoryContext:
    """Render a record as the memory context for the agent's model.

    Args:
        record: the OM record.
        now: the current time; only its calendar day (in ``timezone``) affects the output.
        retrieval: whether recall is on; by default it also shows group ids and ranges.
        recall_instructions: recall usage guidance, appended to the preamble.
        timezone: IANA zone used to decide what "today" is; defaults to the record's zone
            (a naive ``now`` is UTC; an unknown zone counts as UTC).
        show_ranges: show ``## Group`` headings with ``_range`` (defaults to ``retrieval``).
        max_observation_tokens: the most observation tokens shown (the reflection's
            ``block_after``); a log above it while its reflection keeps failing is shown from
            its newest groups (:func:`bounded_groups`), the stored log stays whole.
        count: token counter for ``max_observation_tokens`` (without one, the groups' stored
            ``tokens``).
        preamble: a custom preamble template (see :mod:`langchain_om._core.preamble`) in
            place of the built-in guidance.
        working_memory: the working-memory document, shown in its own block after the log.
        hints: the continuation hints shown (``observation.continuation_hints``); a hint that
            is off is neither shown nor named in the preamble, even when the record holds one.

    Returns:
        The context; empty (no blocks) when the record has no groups and no hints. Contexts
        are memoised by what they are made of (group ids, kinds, texts and ranges, the hints,
        the day, the options), so rendering an unchanged record again on the same day returns
        the same object, byte-identical by construction; do not mutate its ``blocks``.
    """
    today = _today(now, timezone or record.get("timezone"))
    shown = _shown_hints(record, hints)
    groups = record["groups"]
    # Everything the context depends on but the groups, then the groups: by object first (a
    # step that changed nothing holds the same group objects, as the group cache gives them
    # out: one id each to look at), else by content.
    rest = (
        shown.get("current_task") or "",
        shown.get("suggested_response") or "",
        hints,
        _catalog(record),
        today,
        retrieval if show_ranges is None else show_ranges,
        recall_instructions,
        preamble,
        working_memory,
        max_observation_tokens,
        count,
    )
    by_object = (tuple(map(id, groups)), *rest)
    seen = _RENDERED_BY_OBJECT.get(by_object)
    if seen is not None:
        return seen[1]
    # A model call that changes neither the record's log and hints nor the day renders
    # nothing (the hit is the same object).
    key = (
        tuple(
            (g["id"], g["kind"], g["text"], tuple(g["range"]) if g["range"] else None)
            for g in groups
        ),
        *rest,
    )
    context = _RENDERED.get(key)
    if context is None:
        context = _render(
            {**record, "hints": shown},  # type: ignore[typeddict-item]
            today,
            retrieval,
            recall_instructions,
            show_ranges,
            preamble,
            working_memory,
            (max_observation_tokens, count),
            hints,
        )
        if len(_RENDERED) >= _RENDERED_MAX:
            _RENDERED.clear()
        _RENDERED[key] = context
    if len(_RENDERED_BY_OBJECT) >= _RENDERED_MAX:
        _RENDERED_BY_OBJECT.clear()
    _RENDERED_BY_OBJECT[by_object] = (tuple(groups), context)  # the groups held: ids stay theirs
    return context


def _shown_hints(record: OMRecord, hints: HintSwitch) -> dict[str, Any]:
    """The record's hints that ``hints`` shows (the title is never part of the context)."""
    stored = record["hints"]
    return {
        k: v
        for k, v in stored.items()
        if (k != "current_task" or hints.current_task)
        and (k != "suggested_response" or hints.suggested_response)
    }


_RENDERED: dict[tuple[Any, ...], MemoryContext] = {}
_RENDERED_BY_OBJECT: dict[tuple[Any, ...], tuple[tuple[ObservationGroup, ...], MemoryContext]] = {}
"""The same contexts by the ids of the group objects (held in the entry, so no other object
takes one of those ids while it is there)."""
_RENDERED_MAX = 256


def _render(
    record: OMRecord,
    today: date,
    retrieval: bool,
    recall_instructions: str | None,
    show_ranges: bool | None,
    preamble: str | None,
    working_memory: str | None,
    bound: tuple[int | None, Callable[[str], int] | None] = (None, None),
    hints: HintSwitch = ALL_HINTS,
) -> MemoryContext:
    max_observation_tokens, count = bound
    groups = record["groups"]
    hidden = 0
    if max_observation_tokens is not None:
        groups, hidden = bounded_groups(groups, max_observation_tokens, count)
    hints_block = _render_hints(record)
    working = _render_working_memory(working_memory)
    catalog = _catalog(record)
    if not groups and not hints_block and not working and not catalog:
        return MemoryContext(blocks=[])
    ranges = retrieval if show_ranges is None else show_ranges

    guidance = memory_preamble(hints)
    if catalog:
        guidance += "\n\n" + catalog_note(retrieval)
    if ranges and groups:
        guidance += "\n\n" + RANGES_NOTE
    if recall_instructions and recall_instructions.strip():
        guidance += "\n\n" + recall_instructions.strip()
    openings = MEMORY_OPENINGS
    if preamble is not None:
        openings = (*MEMORY_OPENINGS, *line_openings(template_text(preamble)))

    texts = _annotated(groups, today, openings)
    if max_observation_tokens is not None and count is not None:
        groups, texts, hidden = _fit_annotated(
            groups, texts, hidden, max_observation_tokens, count, (today, openings)
        )
    blocks: list[str] = [catalog] if catalog else []
    for index, (group, body) in enumerate(zip(groups, texts, strict=True)):
        if ranges:
            body = _group_heading(group) + "\n\n" + body
        if index == 0:
            if hidden:
                body = hidden_note(hidden) + "\n\n" + body
            body = OBSERVATIONS_OPEN + "\n" + body
        blocks.append(body)
    if groups:
        blocks.append(OBSERVATIONS_CLOSE)
    if working:
        blocks.append(working)
    if preamble is not None:
        return MemoryContext(
            blocks=render_preamble(
                preamble,
                observation_blocks=blocks,
                hints=hints_block,
                today=today,
                default=guidance,
            )
        )
    return MemoryContext(blocks=[guidance, *blocks, *([hints_block] if hints_block else [])])


WORKING_MEMORY_TAG = "working-memory"


def _render_working_memory(text: str | None) -> str:
    body = neutralise(
        (text or "").strip(), tags=(*MEMORY_TAGS, WORKING_MEMORY_TAG), openings=MEMORY_OPENINGS
    )
    if not body:
        return ""
    return f"<{WORKING_MEMORY_TAG}>\n{body}\n</{WORKING_MEMORY_TAG}>"


def _fit_annotated(
    groups: list[ObservationGroup],
    texts: list[str],
    hidden: int,
    max_tokens: int,
    count: Callable[[str], int],
    labels: tuple[date, tuple[str, ...]],
) -> tuple[list[ObservationGroup], list[str], int]:
    """Shown groups whose labelled text (relative dates added) still fits ``max_tokens``.

    The labelled groups are first sized one by one (memoised, so a re-render counts only new
    or relabelled groups); well under the cap that answers, as counts of newline-joined text
    add up to within a token a line. Near or over it the joined text is counted.
    """
    sizes = sum(_group_size(_shown_lines([text]), count) + 1 for text in texts)
    if sizes <= FIT_MARGIN * max_tokens:
        return groups, texts, hidden
    for _ in range(8):
        over = count(_shown_lines(texts)) - max_tokens
        if over <= 0 or not groups:
            break
        if len(groups) > 1:  # the labels made the shown groups too large: one fewer
            hidden += _bullets(groups[0]["text"])
            groups = groups[1:]
        else:
            if _bullets(groups[0]["text"]) <= 1:
                break
            room = count(groups[0]["text"]) - over - 1  # the raw text, less what labels add
            groups, extra = bounded_groups(groups, max(1, room), count)
            hidden += extra
        texts = _annotated(groups, *labels)
    return groups, texts, hidden


FIT_MARGIN = 0.9
"""Share of the cap under which the sum of the labelled groups' sizes is taken as fitting."""


def _shown_lines(texts: Sequence[str]) -> str:
    """The observation lines of ``texts`` (no blank lines), as measured against the cap."""
    return "\n".join(line for text in texts for line in text.splitlines() if line.strip())


def _annotated(
    groups: Sequence[ObservationGroup], today: date, openings: tuple[str, ...] = MEMORY_OPENINGS
) -> list[str]:
    """Each group's text as shown: markup neutralised, dates labelled relative to ``today``."""
    out: list[str] = []
    previous: date | None = None
    for group in groups:
        body, previous = _annotated_group(group["text"], today, previous, openings)
        out.append(body)
    return out


@functools.lru_cache(maxsize=512)
def _annotated_group(
    text: str, today: date, previous: date | None, openings: tuple[str, ...]
) -> tuple[str, date | None]:
    """One group of :func:`_annotated`, memoised: a re-render relabels only what changed."""
    return annotate_relative_time(
        neutralise(text.strip(), openings=openings, dates=False), today, previous
    )


def hidden_note(lines: int) -> str:
    """The line shown where older observations were left out of the memory context."""
    return f"[{lines} older observation lines are not shown while the log is condensed]"


_K = TypeVar("_K")
_V = TypeVar("_V")


class _TextMemo(Generic[_K, _V]):
    """A memo keyed by texts, emptied when its keys pass ``max_chars`` characters."""

    def __init__(self, max_chars: int = 4_000_000) -> None:
        self.entries: dict[_K, _V] = {}
        self.chars = 0
        self.max_chars = max_chars

    def get(self, key: _K, text: str, make: Callable[[], _V]) -> _V:
        """The value for ``key`` (whose text is ``text``), made by ``make`` on a miss."""
        value = self.entries.get(key)
        if value is None:
            value = make()
            if self.chars + len(text) > self.max_chars:
                self.clear()
            self.entries[key] = value
            self.chars += len(text)
        return value

    def clear(self) -> None:
        """Forget every entry."""
        self.entries.clear()
        self.chars = 0


_GROUP_SIZES: _TextMemo[tuple[Callable[[str], int], str], int] = _TextMemo()


def _group_size(text: str, count: Callable[[str], int]) -> int:
    """``count(text)``, memoised (at most ~4 M characters of keys): a re-render after one new
    group recounts only that group, and the newest lines of an unchanged oversized group are
    not measured again."""
    return _GROUP_SIZES.get((count, text), text, lambda: count(text))


def bounded_groups(
    groups: Sequence[ObservationGroup], max_tokens: int, count: Callable[[str], int] | None
) -> tuple[list[ObservationGroup], int]:
    """The newest groups whose observations fit ``max_tokens``, and how many lines were left out.

    The memory context stays bounded even while reflections fail (the stored log keeps
    everything and the next reflection condenses it all). When the newest group alone is too
    large, its newest lines that fit are shown (its first ``Date:`` header kept). A log whose
    stored sizes (``tokens``) are well under the cap (:data:`FIT_MARGIN`) is not counted.
    """
    if count and sum(int(g.get("tokens") or 0) for g in groups) <= FIT_MARGIN * max_tokens:
        return list(groups), 0  # well under the cap by the stored sizes: nothing to count
    sizes = [_group_size(g["text"], count) if count else int(g.get("tokens") or 0) for g in groups]
    if sum(sizes) <= max_tokens:
        return list(groups), 0
    kept: list[ObservationGroup] = []
    total = 0
    for group, size in zip(reversed(groups), reversed(sizes), strict=True):
        if total + size > max_tokens:
            break
        kept.append(group)
        total += size
    kept.reverse()
    if kept:
        return kept, sum(_bullets(g["text"]) for g in groups[: len(groups) - len(kept)])
    hidden = sum(_bullets(g["text"]) for g in groups[:-1])
    newest = groups[-1]
    lines = newest["text"].strip().splitlines()
    measure: Callable[[str], int] = (
        (lambda text: _group_size(text, count)) if count else (lambda text: len(text) // 3 + 1)
    )

    def from_line(k: int) -> list[str]:  # lines[k:] under the Date: header that dates them
        header = next((h for h in reversed(lines[:k]) if h.startswith("Date:")), None)
        return ([header] if header and not lines[k].startswith("Date:") else []) + lines[k:]

    start = len(lines) - 1
    while start > 0 and measure("\n".join(from_line(start - 1))) <= max_tokens:
        start -= 1
    shown = from_line(start)
    hidden += sum(1 for line in lines[:start] if line.strip() and not line.startswith("Date:"))
    cut: ObservationGroup = {
        **newest,
        "text": "\n".join(shown),
        "tokens": measure("\n".join(shown)),
    }
    return [cut], hidden


def _catalog(record: OMRecord) -> str:
    """Archive mode's catalog of retired groups ("" when the record has archived none)."""
    state = record.get("archive")
    if not isinstance(state, dict):
        return ""
    return catalog_text(state.get("rows") or [], state.get("hidden"))


def _bullets(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip() and not line.startswith("Date:"))


def _today(now: datetime, timezone: str | None) -> date:
    return to_zone(now, timezone or "UTC").date()


def _group_heading(group: ObservationGroup) -> str:
    lines = [f"## Group `{group['id']}`"]
    if group["range"]:
        lines.append(f"_range: `{group['range'][0]}:{group['range'][-1]}`_")
    if group["kind"] == "reflection":
        lines.append("_kind: reflection_")
    return "\n".join(lines)


def _render_hints(record: OMRecord) -> str:
    hints = record["hints"]
    parts = []
    task = neutralise((hints.get("current_task") or "").strip(), openings=MEMORY_OPENINGS)
    if task:
        parts.append(f"<current-task>\n{task}\n</current-task>")
    response = neutralise((hints.get("suggested_response") or "").strip(), openings=MEMORY_OPENINGS)
    if response:
        parts.append(f"<suggested-response>\n{response}\n</suggested-response>")
    return "\n\n".join(parts)


# --------------------------------------------------------------------------------------------
# Relative time
# --------------------------------------------------------------------------------------------

_RESOLVED_DATE = re.compile(
    r"\((?P<kind>meaning|estimated|i\.e\.)[:,]?\s+(?P<body>[^()]*?"
    r"(?P<date>[A-Z][a-z]{2,8}\.? \d{1,2}, \d{4})[^()]*?)\)"
)
_FUTURE_INTENT = re.compile(
    r"\b(?:will|won't|shall|going to|gonna|plans? to|planning to|planned to|wants? to|"
    r"wanted to|needs? to|has to|have to|intends? to|intending to|intended to|aims? to|"
    r"hopes? to|expects? to|scheduled|booked|due|upcoming|about to|"
    r"look(?:s|ing)? forward to|looked forward to)\b",
    re.IGNORECASE,
)


def annotate_relative_time(
    text: str, today: date, previous: date | None = None
) -> tuple[str, date | None]:
    """Add relative-time annotations to observation text.

    Args:
        text: observation lines with ``Date:`` headers.
        today: the reference day.
        previous: the last ``Date:`` seen before ``text`` (to insert a gap line before the
            first header of ``text``).

    Returns:
        The annotated text and the last ``Date:`` header date seen (or ``previous``).
    """
    out: list[str] = []
    for line in text.split("\n"):
        header = parse_date_range_header(line.strip())
        if header is not None:
            first, last = header
            if previous is not None:
                gap = gap_label(previous, first)
                if gap:
                    out.append(gap)
            label = relative_label(first, today)
            if last != first:
                label = f"{label} to {relative_label(last, today)}"
            out.append(f"{line.rstrip()} ({label})")
            previous = last
            continue
        out.append(_annotated_line(line, today))
    return "\n".join(out), previous


_LINE_LABELS: _TextMemo[tuple[str, date], str] = _TextMemo()


def _annotated_line(line: str, today: date) -> str:
    """One observation line (not a ``Date:`` header) with its dates labelled, memoised (at
    most ~4 M characters of keys): a line depends only on itself and the day, so a group a
    reflection or a merge rewrote relabels only its new lines."""
    return _LINE_LABELS.get(
        (line, today),
        line,
        lambda: _annotate_resolved_dates(_annotate_inline_dates(line, today), today),
    )


def _annotate_resolved_dates(line: str, today: date) -> str:
    if "(" not in line or _RESOLVED_DATE.search(line) is None:
        return line
    intent = _FUTURE_INTENT.search(_RESOLVED_DATE.sub("", line)) is not None

    def expand(match: re.Match[str]) -> str:
        resolved = parse_date_header("Date: " + match["date"])
        if resolved is None:
            return match[0]
        note = f" - {relative_label(resolved, today)}"
        if intent and resolved < today:
            note += ", likely already happened"
        return f"({match['kind']} {match['body']}{note})"

    return _RESOLVED_DATE.sub(expand, line)


_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_FUZZY = r"(?i:early|mid|late)"
_INLINE_DATE = re.compile(
    rf"\b(?P<m1>{_MONTH})\s+(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y1>\d{{4}})\b"
    rf"|\b(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<m2>{_MONTH}),?\s+(?P<y2>\d{{4}})\b"
    r"|\b(?P<y3>\d{4})-(?P<mo3>\d{2})-(?P<d3>\d{2})\b(?!T?\d)"
    rf"|\b(?:{_FUZZY}[- ](?:(?i:to)[- ]{_FUZZY}[- ])?)?(?P<m4>{_MONTH})\s+(?P<y4>\d{{4}})\b"
    rf"|\b{_FUZZY}[- ](?P<y5>(?:19|20)\d{{2}})\b"
    r"|\b(?i:in|since|by|during|until|till|before|after|from|throughout|of)\s+"
    r"(?P<y6>(?:19|20)\d{2})\b(?![-/:.]\d)"
)
"""Dates written in observation text: day, month and year; month and year; a (fuzzy) year."""
_LABELLED = re.compile(
    r"\s*\((?:[^()]*\b(?:ago|today|yesterday|tomorrow|this|last|next)\b|in \d)[^()]*\)"
)


def _annotate_inline_dates(line: str, today: date) -> str:
    """Add ``(5 months ago)`` after dates in ``line`` (not in ``(meaning …)`` notes)."""
    if not any(ch.isdigit() for ch in line) or parse_date_header(line.strip()) is not None:
        return line
    masked = _RESOLVED_DATE.sub(lambda m: "\x00" * len(m[0]), line)
    matches = [m for m in _INLINE_DATE.finditer(masked) if not _LABELLED.match(masked, m.end())]
    if not matches:
        return line
    intent = _FUTURE_INTENT.search(masked) is not None
    out: list[str] = []
    position = 0
    for match in matches:
        label = _inline_label(match, today, intent)
        if label is None:
            continue
        out.append(line[position : match.end()])
        out.append(f" ({label})")
        position = match.end()
    out.append(line[position:])
    return "".join(out)


def _inline_label(match: re.Match[str], today: date, intent: bool) -> str | None:
    """The relative label of one date mention, or ``None`` if it is not a real date."""
    g = match.groupdict()
    past: bool
    if g["y1"] or g["y2"] or g["y3"]:
        if g["y3"]:
            try:
                day: date | None = date(int(g["y3"]), int(g["mo3"]), int(g["d3"]))
            except ValueError:
                day = None
        else:
            day = make_date(g["m1"] or g["m2"], g["d1"] or g["d2"], g["y1"] or g["y2"])
        if day is None:
            return None
        label, past = relative_label(day, today), day < today
    elif g["y4"]:
        month = month_number(g["m4"])
        if month is None:
            return None
        year = int(g["y4"])
        label = month_label(year, month, today)
        past = (year, month) < (today.year, today.month)
    else:
        year = int(g["y5"] or g["y6"])
        label, past = year_label(year, today), year < today.year
    return f"{label}, likely already happened" if intent and past else label
