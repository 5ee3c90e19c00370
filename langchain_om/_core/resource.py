"""Resource scope, the pure part: one observation log shared by all threads of a resource.

No I/O here. The plan in :mod:`langchain_om._plans.resource` loads and stores what these
functions compute:

- :func:`thread_label`: the id a thread has in observation text (a stable short hash unless
  ids are shown as they are);
- :func:`plan_batches`: which threads to observe, in which batches (a thread is never split);
- :func:`split_threads` and :func:`merge_sections`: the Observer's per-thread answer, merged
  into the log by thread and date;
- :func:`bounded_log`: the newest part of the log that fits what the agent may be shown;
- :class:`ResourceDelta` and :func:`apply_delta`: what one observation adds, applied to the
  latest stored record — the same way whether the record changed since it was read or not, so
  a compare-and-set conflict is retried without calling the Observer again, and a message
  already observed (by another process) is never applied twice.

Buffered observations (:class:`ResourceChunk`) wait in the record itself until they are
activated; :mod:`langchain_om._core.resource_chunks` adds and activates them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from langchain_om._core.observer import BUILTIN_SECTIONS, split_sections, title_hint

__all__ = [
    "RESOURCE_RECORD_VERSION",
    "ResourceChunk",
    "ResourceDelta",
    "ResourceRecord",
    "Section",
    "ThreadPending",
    "ThreadSection",
    "apply_delta",
    "apply_reflection",
    "bounded_log",
    "log_text",
    "merge_sections",
    "new_resource_record",
    "observed_ids",
    "plan_batches",
    "sections_text",
    "split_threads",
    "thread_label",
    "thread_titles",
    "with_extracted",
]

RESOURCE_RECORD_VERSION = 1
"""Layout version of :class:`ResourceRecord` (not the compare-and-set version)."""

_DATE = re.compile(r"^Date: (.+)$", re.MULTILINE)
_OPEN = re.compile(r'^<thread id="([^"]+)">$')


class ThreadSection(TypedDict):
    """The observations of one thread for one date, as kept in the shared log."""

    thread: str
    """The thread's label (see :func:`thread_label`)."""
    date: str
    """The ``Date:`` header's value (``"Nov 30, 2026"``), or ``""`` when the text had none."""
    lines: list[str]
    """Observation lines, oldest first."""


class ChunkSection(ThreadSection):
    """A section of a buffered chunk, with its tokens (the chunk's size when parts drop)."""

    tokens: int


class ResourceChunk(TypedDict):
    """Observations buffered in the background, stored in the record until activated.

    A chunk is a delta (:class:`ResourceDelta`) kept for later: activating it applies it to
    the log and removes it from the record in one compare-and-set write, so it is applied
    exactly once.
    """

    id: str
    """The delta's id (in ``applied`` once activated)."""
    observed: dict[str, list[str]]
    """Per thread id, the ids of the messages it covers, oldest first."""
    after: dict[str, str]
    """Per thread id, the last message id covered before it (``""``: none), so the chunks
    of a thread form a chain that starts at its cursor."""
    sections: list[ChunkSection]
    labels: dict[str, str]
    hints: dict[str, str]
    thread_tokens: dict[str, int]
    """Per thread id, the tokens of the messages it covers."""
    message_tokens: int
    """Tokens of all the messages it covers."""
    tokens: int
    """Tokens of its observations."""
    created_at: str
    titles: NotRequired[dict[str, str]]
    """Per thread id, the title the Observer proposed for it (``observation.thread_title``)."""
    extracted: NotRequired[dict[str, Any]]
    """The extracted entries its cycle changed."""
    extracted_before: NotRequired[dict[str, Any]]
    """Those entries as the cycle read them: an entry changed since (by the application or
    another writer) keeps the newer value when the chunk is activated."""


class ResourceRecord(TypedDict):
    """The store value of a resource: its log, its per-thread cursors and its version."""

    v: int
    resource_id: str
    version: int
    """Compare-and-set version: +1 per committed write."""
    sections: list[ThreadSection]
    """The shared observation log, in the order sections were first written."""
    generation: int
    """Reflection generation of the shared log."""
    hints: dict[str, str]
    """Continuation hints of the latest observation."""
    extracted: dict[str, Any]
    """Extracted values of the resource."""
    cursors: dict[str, list[str]]
    """Per thread id: ids of its messages observed so far, oldest first."""
    applied: list[str]
    """Ids of the deltas committed (the last 200), so a replayed commit is a no-op."""
    chunks: list[ResourceChunk]
    """Buffered observations not activated yet, oldest first."""
    titles: dict[str, str]
    """Per thread id, the title the Observer proposed last (``observation.thread_title``)."""


def new_resource_record(resource_id: str) -> ResourceRecord:
    """An empty record for ``resource_id`` at version 0 (not stored yet)."""
    return ResourceRecord(
        v=RESOURCE_RECORD_VERSION,
        resource_id=resource_id,
        version=0,
        sections=[],
        generation=0,
        hints={},
        extracted={},
        cursors={},
        applied=[],
        chunks=[],
        titles={},
    )


def thread_label(thread_id: str, *, obscure: bool) -> str:
    """How a thread is named in observation text: a stable 8-hex hash, or the id itself."""
    if not obscure:
        return thread_id
    return hashlib.blake2b(thread_id.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


# -- which threads, in which batches -------------------------------------------------------


@dataclass(frozen=True)
class ThreadPending:
    """A thread with unobserved messages."""

    thread_id: str
    tokens: int
    """Tokens of its unobserved messages."""
    oldest: str
    """ISO time of its oldest unobserved message (batches are ordered by it)."""


def plan_batches(
    threads: Sequence[ThreadPending], *, threshold: int, max_tokens_per_batch: int
) -> list[list[ThreadPending]]:
    """The batches of threads to observe now.

    Threads are taken largest first until their tokens reach ``threshold`` (all of them when
    the total is below it), ordered by their oldest unobserved message, and packed in that
    order into batches of at most ``max_tokens_per_batch`` tokens. A thread is never split:
    one larger than the cap is a batch of its own.
    """
    chosen: list[ThreadPending] = []
    total = 0
    for thread in sorted(threads, key=lambda t: (-t.tokens, t.thread_id)):
        if thread.tokens <= 0:
            continue
        if total >= threshold > 0:
            break
        chosen.append(thread)
        total += thread.tokens
    batches: list[list[ThreadPending]] = []
    size = 0
    for thread in sorted(chosen, key=lambda t: (t.oldest, t.thread_id)):
        if not batches or size + thread.tokens > max_tokens_per_batch:
            batches.append([])
            size = 0
        batches[-1].append(thread)
        size += thread.tokens
    return batches


# -- the Observer's answer, merged by thread and date ---------------------------------------


@dataclass(frozen=True)
class Section:
    """New observation lines of one thread for one date."""

    thread: str
    date: str
    lines: tuple[str, ...]


def _by_date(thread: str, text: str) -> list[Section]:
    out: list[Section] = []
    date, lines = "", list[str]()
    for line in text.splitlines():
        match = _DATE.match(line.strip())
        if match:
            if lines:
                out.append(Section(thread, date, tuple(lines)))
            date, lines = match.group(1).strip(), []
        elif line.strip():
            lines.append(line.rstrip())
    if lines:
        out.append(Section(thread, date, tuple(lines)))
    return out


def split_threads(text: str, labels: Sequence[str]) -> list[Section]:
    """The Observer's observations, per thread and date.

    A ``<thread id="…">`` line opens its thread's block, which runs to ``</thread>`` or the
    next opening line (the parser of the Observer's answer drops closing tags). Text outside
    any block belongs to the batch's only thread, or, when the batch had several, to all of
    them jointly (labelled with every label, so nothing is attributed to the wrong thread).
    """
    blocks: list[tuple[str, list[str]]] = [(",".join(labels), [])]
    for line in text.splitlines():
        opening = _OPEN.match(line.strip())
        if opening:
            blocks.append((opening.group(1).strip(), []))
        elif line.strip() == "</thread>":
            blocks.append((",".join(labels), []))
        else:
            blocks[-1][1].append(line)
    sections: list[Section] = []
    for label, lines in blocks:
        sections.extend(_by_date(label, "\n".join(lines)))
    return sections


def sections_text(sections: Sequence[Section]) -> str:
    """``sections`` (of one thread) as thread scope's observation text: ``Date:`` headers,
    then their lines (no ``<thread id>`` blocks); :func:`split_threads` reads it back."""
    blocks = []
    for s in sections:
        head = f"Date: {s.date}\n" if s.date else ""
        blocks.append(head + "\n".join(s.lines))
    return "\n\n".join(blocks)


def merge_sections(log: Sequence[ThreadSection], new: Sequence[Section]) -> list[ThreadSection]:
    """``log`` with ``new`` merged in: into the section of the same thread and date, else
    appended."""
    merged: list[ThreadSection] = [
        ThreadSection(thread=s["thread"], date=s["date"], lines=list(s["lines"])) for s in log
    ]
    index = {(s["thread"], s["date"]): s for s in merged}
    for section in new:
        found = index.get((section.thread, section.date))
        if found is None:
            found = ThreadSection(thread=section.thread, date=section.date, lines=[])
            merged.append(found)
            index[(section.thread, section.date)] = found
        found["lines"].extend(section.lines)
    return merged


def log_text(sections: Sequence[ThreadSection]) -> str:
    """The shared log as the agent and the Observer read it."""
    blocks = []
    for s in sections:
        head = f"Date: {s['date']}\n" if s["date"] else ""
        blocks.append(
            f'<thread id="{s["thread"]}">\n{head}' + "\n".join(s["lines"]) + "\n</thread>"
        )
    return "\n\n".join(blocks)


def bounded_log(
    sections: Sequence[ThreadSection], max_tokens: int, count: Callable[[str], int]
) -> tuple[str, int]:
    """The shared log's text within ``max_tokens``, and how many lines were left out.

    The memory context stays bounded while the log's reflection keeps failing (the stored log
    keeps everything; the next reflection condenses it all): the newest sections are kept
    whole, then the newest lines of the one that no longer fits. Binary searches keep the
    number of counts logarithmic in the log's size.
    """
    text = log_text(sections)
    if count(text) <= max_tokens:
        return text, 0

    def fits(part: Sequence[ThreadSection]) -> bool:
        return count(log_text(part)) <= max_tokens

    first = _first_fitting(len(sections), lambda k: fits(sections[k:]))
    kept = list(sections[first:])
    if first > 0:  # the newest lines of the section that no longer fits whole
        section = sections[first - 1]
        lines = section["lines"]
        start = _first_fitting(len(lines), lambda k: fits([{**section, "lines": lines[k:]}, *kept]))
        if start < len(lines):
            kept.insert(0, {**section, "lines": lines[start:]})
    shown = sum(len(s["lines"]) for s in kept)
    return log_text(kept), sum(len(s["lines"]) for s in sections) - shown


def _first_fitting(n: int, fits: Callable[[int], bool]) -> int:
    """The smallest ``k`` in ``[0, n]`` with ``fits(k)`` (``fits`` is monotonic, ``fits(n)``)."""
    low, high = 0, n
    while low < high:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle + 1
    return low


_TITLE_LINE = re.compile(r'^<thread id="([^"]+)">\s*(.*?)\s*(?:</thread>)?\s*$')
MIN_TITLE_CHARS = 3
"""A proposed title shorter than this is not kept (as in thread scope)."""


def thread_titles(raw: str, labels: Mapping[str, str]) -> dict[str, str]:
    """Per thread id, the title the Observer's answer ``raw`` proposes for it.

    The ``<thread-title>`` section holds one ``<thread id="…">title</thread>`` line per
    thread (``labels``: thread id to its label); a batch of one thread may give the bare
    title, as in thread scope. A line naming no thread of the batch is ignored, so a title is
    never given to another thread.
    """
    sections, _ = split_sections(raw, BUILTIN_SECTIONS)
    by_label = {label: tid for tid, label in labels.items()}
    out: dict[str, str] = {}
    for name, content in sections:
        if name != "thread-title":
            continue
        for line in content.splitlines():
            match = _TITLE_LINE.match(line.strip())
            if match is not None and match.group(1) in by_label:
                title = title_hint(match.group(2))
                if title and len(title) >= MIN_TITLE_CHARS:
                    out.setdefault(by_label[match.group(1)], title)
        if not out and len(labels) == 1 and not _TITLE_LINE.match(content.strip()):
            title = title_hint(content)
            if title and len(title) >= MIN_TITLE_CHARS:
                out[next(iter(labels))] = title
    return out


# -- committing: a delta applied to the latest record ---------------------------------------


@dataclass(frozen=True)
class ResourceDelta:
    """What one observation of several threads adds to the resource record."""

    delta_id: str
    observed: Mapping[str, Sequence[str]]
    """Per thread id, the ids of the messages this observation covered."""
    sections: Sequence[Section]
    """Its observations, per thread and date."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Per thread id, its label in ``sections``."""
    hints: Mapping[str, str] = field(default_factory=dict)
    extracted: Mapping[str, Any] = field(default_factory=dict)
    titles: Mapping[str, str] = field(default_factory=dict)
    """Per thread id, the title the Observer proposed for it."""


def observed_ids(record: ResourceRecord) -> dict[str, set[str]]:
    """Per thread id, the set of its observed message ids."""
    return {tid: set(ids) for tid, ids in record["cursors"].items()}


_APPLIED_KEPT = 200


def apply_delta(latest: ResourceRecord, delta: ResourceDelta) -> tuple[ResourceRecord, bool]:
    """``latest`` with ``delta`` applied, at the next version; and whether anything changed.

    A thread any of whose messages ``latest`` already counts as observed (another writer
    observed them first) contributes nothing: its sections are dropped and its cursor stays,
    so no message is observed twice, and its messages not observed yet stay for the next
    cycle, so none is lost. A delta already committed (same ``delta_id``) is a no-op.
    """
    if delta.delta_id in latest["applied"]:
        return latest, False
    seen = observed_ids(latest)
    # A thread any of whose messages is observed already is dropped whole: its sections
    # describe those messages too. Its other messages stay unobserved for the next cycle.
    fresh = {
        tid: list(ids) if seen.get(tid, set()).isdisjoint(ids) else []
        for tid, ids in delta.observed.items()
    }
    if not any(fresh.values()):
        return latest, False
    stale = {delta.labels.get(tid, tid) for tid, ids in fresh.items() if not ids}
    keep = [s for s in delta.sections if stale.isdisjoint(s.thread.split(","))]
    cursors = {tid: list(ids) for tid, ids in latest["cursors"].items()}
    titles = dict(latest.get("titles") or {})
    for tid, ids in fresh.items():
        if ids:
            cursors[tid] = cursors.get(tid, []) + ids
            if delta.titles.get(tid):
                titles[tid] = delta.titles[tid]
    out = ResourceRecord(
        v=RESOURCE_RECORD_VERSION,
        resource_id=latest["resource_id"],
        version=latest["version"] + 1,
        sections=merge_sections(latest["sections"], keep),
        generation=latest["generation"],
        hints={**latest["hints"], **dict(delta.hints)},
        extracted={**latest["extracted"], **dict(delta.extracted)},
        cursors=cursors,
        applied=[*latest["applied"], delta.delta_id][-_APPLIED_KEPT:],
        chunks=list(latest["chunks"]),
        titles=titles,
    )
    return out, True


def with_extracted(latest: ResourceRecord, changes: Mapping[str, Any]) -> ResourceRecord:
    """``latest`` with the extracted entries ``changes`` replaced, at the next version."""
    return ResourceRecord(
        **{
            **latest,
            "version": latest["version"] + 1,
            "extracted": {**latest["extracted"], **changes},
        }
    )


def coerce_resource_record(value: Any, resource_id: str) -> ResourceRecord:
    """A stored value as a record (a new one when nothing usable is stored)."""
    if isinstance(value, Mapping) and value.get("v") == RESOURCE_RECORD_VERSION:
        return {**new_resource_record(resource_id), **value}
    return new_resource_record(resource_id)


def apply_reflection(
    latest: ResourceRecord,
    base: ResourceRecord,
    condensed: Sequence[Section],
    extracted: Mapping[str, Any] | None = None,
) -> tuple[ResourceRecord, bool]:
    """``latest`` with the sections of ``base`` replaced by ``condensed`` (a reflection).

    What was observed after ``base`` was read (lines appended to its sections, new sections)
    is kept, after the condensed log; ``extracted`` (the values the reflection filled)
    replaces those entries. When another writer reflected first (the generation moved),
    nothing changes: the log is not condensed twice.
    """
    if latest["generation"] != base["generation"]:
        return latest, False
    known = {(s["thread"], s["date"]): len(s["lines"]) for s in base["sections"]}
    later = [
        Section(s["thread"], s["date"], tuple(s["lines"][known.get((s["thread"], s["date"]), 0) :]))
        for s in latest["sections"]
    ]
    out = ResourceRecord(
        **{
            **latest,
            "version": latest["version"] + 1,
            "generation": latest["generation"] + 1,
            "sections": merge_sections(
                merge_sections([], condensed), [s for s in later if s.lines]
            ),
            "extracted": {**latest["extracted"], **(extracted or {})},
        }
    )
    return out, True
