"""Buffered observations of a resource, the pure part: added and activated in the record.

A background Observer call over the resource's uncovered messages gives a
:class:`~langchain_om._core.resource.ResourceDelta`; instead of committing it, the buffer
stores it as a :class:`~langchain_om._core.resource.ResourceChunk` in the resource record.
Both writes are compare-and-set commits of these functions' results (under the resource's
lock), so:

- :func:`add_chunk` keeps only the threads whose part still continues their chain (the
  chunk's ``after`` is still the last message covered, by the log or an earlier chunk):
  two buffers racing for the same messages store them once;
- :func:`activate_chunks` applies chunks to the log and removes them from the record in the
  same write: a chunk is activated exactly once, whoever tries;
- :func:`prune_chunks` drops the part of a chunk whose messages were observed another way,
  left the thread (``forget``), or follow such a part: a thread's chain never has a hole.

A chunk keeps everything its background Observer call gave, so activating it has the effects
of a synchronous observation: its sections and observed ids, its continuation hints, the
titles it proposed for its threads and the extracted values its cycle changed (an entry
changed since the chunk was computed keeps the newer value). The next buffer reads the
record as it will be once the chunks before it are activated (:func:`with_chunks`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from langchain_om._core.resource import (
    ChunkSection,
    ResourceChunk,
    ResourceDelta,
    ResourceRecord,
    Section,
    ThreadSection,
    apply_delta,
    merge_sections,
    observed_ids,
)

__all__ = [
    "activate_chunks",
    "add_chunk",
    "chunk_delta",
    "chunk_sections",
    "covered_ids",
    "last_covered",
    "new_chunk",
    "prune_chunks",
    "with_chunks",
]


def new_chunk(
    delta: ResourceDelta,
    *,
    after: Mapping[str, str],
    thread_tokens: Mapping[str, int],
    section_tokens: Sequence[int],
    created_at: str,
    extracted_before: Mapping[str, Any] | None = None,
) -> ResourceChunk:
    """``delta`` kept as a chunk (``section_tokens``: the tokens of each of its sections).

    ``extracted_before`` is the extracted values the cycle read (its delta's ``extracted``
    holds the entries it changed). A thread none of whose sections names it is left out:
    its messages stay unobserved, since nothing would cover them.
    """
    sections = [
        ChunkSection(thread=s.thread, date=s.date, lines=list(s.lines), tokens=n)
        for s, n in zip(delta.sections, section_tokens, strict=True)
    ]
    named = {label for s in sections for label in s["thread"].split(",")}
    observed = {
        tid: list(ids)
        for tid, ids in delta.observed.items()
        if ids and delta.labels.get(tid, tid) in named
    }
    tokens = {tid: int(thread_tokens.get(tid, 0)) for tid in observed}
    return ResourceChunk(
        id=delta.delta_id,
        observed=observed,
        after={tid: after.get(tid, "") for tid in observed},
        sections=sections,
        labels={tid: delta.labels.get(tid, tid) for tid in observed},
        hints=dict(delta.hints),
        thread_tokens=tokens,
        message_tokens=sum(tokens.values()),
        tokens=sum(section_tokens),
        created_at=created_at,
        titles={tid: str(delta.titles[tid]) for tid in observed if delta.titles.get(tid)},
        extracted=dict(delta.extracted),
        extracted_before={k: (extracted_before or {}).get(k) for k in delta.extracted},
    )


def chunk_delta(chunk: ResourceChunk, extracted: Mapping[str, Any]) -> ResourceDelta:
    """The delta a chunk applies when activated to a record whose values are ``extracted``.

    Its extracted entries are applied where the record still holds what the chunk's cycle
    read; one changed since (an update of the working memory, another writer) keeps the
    newer value.
    """
    return ResourceDelta(
        delta_id=chunk["id"],
        observed=chunk["observed"],
        sections=[Section(s["thread"], s["date"], tuple(s["lines"])) for s in chunk["sections"]],
        labels=chunk["labels"],
        hints=chunk["hints"],
        extracted=_still_applying(chunk, extracted),
        titles=chunk.get("titles") or {},
    )


def _still_applying(chunk: ResourceChunk, extracted: Mapping[str, Any]) -> dict[str, Any]:
    """The chunk's extracted entries whose value in ``extracted`` is the one its cycle read."""
    before = chunk.get("extracted_before") or {}
    return {
        k: v for k, v in (chunk.get("extracted") or {}).items() if extracted.get(k) == before.get(k)
    }


def chunk_sections(record: ResourceRecord) -> list[ThreadSection]:
    """The log with the record's chunks merged in."""
    new = [Section(s.thread, s.date, s.lines) for c in record["chunks"] for s in _sections(c)]
    return merge_sections(record["sections"], new)


def with_chunks(record: ResourceRecord) -> ResourceRecord:
    """``record`` as it will be once its chunks are activated (what the next buffer reads).

    The log with the chunks' sections merged in, and their hints, titles and extracted values
    over the record's, as their activation applies them (the chunks stay, so the next buffer
    continues their chains).
    """
    hints, titles = dict(record["hints"]), dict(record["titles"])
    extracted = dict(record["extracted"])
    for chunk in record["chunks"]:
        hints.update(chunk["hints"])
        titles.update(chunk.get("titles") or {})
        extracted.update(_still_applying(chunk, extracted))
    return ResourceRecord(
        **{
            **record,
            "sections": chunk_sections(record),
            "hints": hints,
            "titles": titles,
            "extracted": extracted,
        }
    )


def _sections(chunk: ResourceChunk) -> list[Section]:
    return [Section(s["thread"], s["date"], tuple(s["lines"])) for s in chunk["sections"]]


def covered_ids(record: ResourceRecord) -> dict[str, set[str]]:
    """Per thread id, its messages observed or buffered in a chunk."""
    covered = observed_ids(record)
    for chunk in record["chunks"]:
        for tid, ids in chunk["observed"].items():
            covered.setdefault(tid, set()).update(ids)
    return covered


def last_covered(record: ResourceRecord) -> dict[str, str]:
    """Per thread id, the last message id its latest chunk covers, else its cursor's last."""
    last = {tid: ids[-1] for tid, ids in record["cursors"].items() if ids}
    for chunk in record["chunks"]:
        last.update({tid: ids[-1] for tid, ids in chunk["observed"].items() if ids})
    return last


def _restricted(chunk: ResourceChunk, threads: Collection[str]) -> ResourceChunk | None:
    """``chunk`` with only the parts of ``threads`` (``None`` when none is left).

    A section labelled with a dropped thread goes too (it may describe that thread's messages).
    """
    kept = [tid for tid in chunk["observed"] if tid in threads]
    if not kept:
        return None
    if len(kept) == len(chunk["observed"]):
        return chunk
    dropped = {chunk["labels"].get(t, t) for t in chunk["observed"] if t not in threads}
    sections = [s for s in chunk["sections"] if dropped.isdisjoint(s["thread"].split(","))]
    tokens = {tid: chunk["thread_tokens"].get(tid, 0) for tid in kept}
    return ResourceChunk(
        id=chunk["id"],
        observed={tid: chunk["observed"][tid] for tid in kept},
        after={tid: chunk["after"].get(tid, "") for tid in kept},
        sections=sections,
        labels={tid: chunk["labels"].get(tid, tid) for tid in kept},
        hints=chunk["hints"],
        thread_tokens=tokens,
        message_tokens=sum(tokens.values()),
        tokens=sum(s["tokens"] for s in sections),
        created_at=chunk["created_at"],
        titles={t: v for t, v in (chunk.get("titles") or {}).items() if t in kept},
        extracted=dict(chunk.get("extracted") or {}),
        extracted_before=dict(chunk.get("extracted_before") or {}),
    )


def prune_chunks(
    record: ResourceRecord, present: Mapping[str, Collection[str]] | None = None
) -> list[ResourceChunk]:
    """The record's chunks without the parts that no longer apply.

    A thread's part goes when one of its messages is observed already, when one is not in
    ``present`` (the thread's messages as the step sees them: ``None`` checks nothing), or
    when an earlier chunk's part of that thread went (it continues that part).
    """
    seen = observed_ids(record)
    broken: set[str] = set()
    out: list[ResourceChunk] = []
    for chunk in record["chunks"]:
        for tid, ids in chunk["observed"].items():
            here = present.get(tid, ()) if present is not None else None
            if (
                tid in broken
                or not seen.get(tid, set()).isdisjoint(ids)
                or (here is not None and not set(ids) <= set(here))
            ):
                broken.add(tid)
        kept = _restricted(chunk, [t for t in chunk["observed"] if t not in broken])
        if kept is not None:
            out.append(kept)
    return out


def add_chunk(latest: ResourceRecord, chunk: ResourceChunk) -> tuple[ResourceRecord, bool]:
    """``latest`` with ``chunk`` stored, at the next version; and whether anything changed.

    Only the threads whose part continues their chain are kept: nothing of theirs is covered
    yet and the last message covered is still the chunk's ``after``. Another buffer or an
    observation that got there first keeps its own.
    """
    if chunk["id"] in latest["applied"] or any(c["id"] == chunk["id"] for c in latest["chunks"]):
        return latest, False
    covered, last = covered_ids(latest), last_covered(latest)
    fits = [
        tid
        for tid, ids in chunk["observed"].items()
        if last.get(tid, "") == chunk["after"].get(tid, "")
        and covered.get(tid, set()).isdisjoint(ids)
    ]
    kept = _restricted(chunk, fits)
    if kept is None:
        return latest, False
    out = ResourceRecord(
        **{**latest, "version": latest["version"] + 1, "chunks": [*latest["chunks"], kept]}
    )
    return out, True


def activate_chunks(
    latest: ResourceRecord,
    chunk_ids: Collection[str],
    present: Mapping[str, Collection[str]] | None = None,
) -> tuple[ResourceRecord, list[ResourceChunk]]:
    """``latest`` with the chunks ``chunk_ids`` applied to the log and removed, in one write.

    The chunks are pruned first (:func:`prune_chunks` with ``present``). Returns the new
    record (``latest`` itself when none of the chunks is stored any more: another writer
    activated them) and the chunks activated, as applied.
    """
    chunks = prune_chunks(latest, present)
    wanted = [c for c in chunks if c["id"] in chunk_ids]
    if not wanted:
        if len(chunks) == len(latest["chunks"]) and chunks == latest["chunks"]:
            return latest, []
        pruned = ResourceRecord(**{**latest, "version": latest["version"] + 1, "chunks": chunks})
        return pruned, []
    ids = {c["id"] for c in wanted}
    new = ResourceRecord(**{**latest, "chunks": [c for c in chunks if c["id"] not in ids]})
    for chunk in wanted:
        new, _ = apply_delta(new, chunk_delta(chunk, new["extracted"]))
    return ResourceRecord(**{**new, "version": latest["version"] + 1}), wanted
