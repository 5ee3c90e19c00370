"""The recall modes over observations: ``observations`` (the archive) and ``source`` (receipts).

``mode="observations"`` reads archive mode's retired groups: without ``archive_id`` it lists
the thread's archive entries newest first (``cursor`` continues after an entry; ``before`` /
``after`` and ``text`` filter them, ``query`` searches them by meaning when search is on) and
shows the first matching group's text; with ``archive_id`` (and ``group_id``) it reads that
group word for word, ``char_offset`` continuing a long one. Only the entries on the caller's
own chain are readable: a checkpoint fork never sees the other branch's archive.

``mode="source"`` is the receipt of one observation line (``line``: its id, or its text): the
archived messages the line was written from, on the caller's branch.

:mod:`langchain_om._plans.recall` loads the caller's thread and hands it here as a
:class:`ThreadView`; problems come back as :class:`RecallProblem`, which it turns into the
``{"error": ...}`` the model sees.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage

from langchain_om._core.branches import Segments, branch_at
from langchain_om._core.recall import (
    ELLIPSIS,
    Detail,
    PartFilter,
    clamp_limit,
    cut_tokens,
    fit_budget,
    json_text,
    normalize_page,
    parse_when,
    render_message,
    short_ts,
)
from langchain_om._core.receipts import LineReceipt, find_line, span_count
from langchain_om._plans.effects import Plan, StoreBatch
from langchain_om._plans.storage import (
    archive_get_op,
    archived_message,
    group_get_ops,
    obsarchive_get_ops,
    search_op,
)

__all__ = [
    "ArchiveRecallArgs",
    "Budget",
    "RecallProblem",
    "ThreadView",
    "observations_plan",
    "source_plan",
]

MAX_ENTRIES = 2_000
"""Most archive entries one call walks along a chain."""
MAX_SOURCE = 1_000
"""Most source positions of one line whose message ids are listed."""
ENVELOPE_MARGIN = 32


class RecallProblem(Exception):
    """A problem to show the model as the tool result."""


@dataclass(frozen=True)
class ThreadView:
    """The thread a call reads: its id, owner, branch path, archived count and record."""

    thread_id: str
    resource_id: str | None
    current: bool
    archived: int
    segments: Segments
    record: Mapping[str, Any] | None
    group_keys: Sequence[str] = ()
    """Content keys of the record's groups when graph state named them by key only."""


@dataclass(frozen=True)
class ArchiveRecallArgs:
    """The arguments these modes read (a subset of the tool's)."""

    archive_id: str | None = None
    group_id: str | None = None
    cursor: str | None = None
    limit: int = 20
    page: int = 1
    before: str | None = None
    after: str | None = None
    text: str | None = None
    query: str | None = None
    char_offset: int | None = None
    line: str | None = None
    detail: str = "low"


@dataclass(frozen=True)
class Budget:
    """The result budget and its token counter."""

    tokens: int
    count: Callable[[str], int]
    vector: bool
    archive_mode: bool


# -- the chain of archive entries ------------------------------------------------------------


def _archive_state(view: ThreadView) -> Mapping[str, Any]:
    state = view.record.get("archive") if view.record is not None else None
    return state if isinstance(state, Mapping) else {}


def _owned(entry: Mapping[str, Any], view: ThreadView) -> bool:
    return entry.get("thread_id") == view.thread_id and entry.get("resource_id") == view.resource_id


def _chain(view: ThreadView, *, until: str | None = None) -> Plan[list[Mapping[str, Any]]]:
    """The archive entries of the view's chain, newest first (stops after ``until``)."""
    ids = [str(i) for i in _archive_state(view).get("chain") or []]
    out: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    while ids and len(out) < MAX_ENTRIES:
        fresh = [i for i in ids if i not in seen][: MAX_ENTRIES - len(out)]
        if not fresh:
            break
        seen.update(fresh)
        items = yield StoreBatch(obsarchive_get_ops(view.thread_id, fresh))
        entries = [i.value for i in items if i is not None and _owned(i.value, view)]
        if len(entries) < len(fresh):
            break  # an entry is missing or foreign: the chain ends where it can be trusted
        out.extend(entries)
        if until is not None and any(e.get("archive_id") == until for e in entries):
            break
        ids = [str(i) for i in entries[-1].get("previous") or []]
    return out


def _group_source(group: Mapping[str, Any], thread_id: str) -> dict[str, Any]:
    bounds = group.get("range") or []
    return {
        "thread_id": thread_id,
        "range": f"{bounds[0]}:{bounds[-1]}" if bounds else None,
        "cursor": bounds[0] if bounds else None,
        "source_unavailable": not bounds,
    }


def _dates(group: Mapping[str, Any]) -> list[str]:
    days = [
        line.strip()[5:].strip()
        for line in str(group.get("text") or "").splitlines()
        if line.strip().startswith("Date:")
    ]
    return days or [str(group.get("observed_at") or "")[:10]]


def _matches(group: Mapping[str, Any], args: ArchiveRecallArgs) -> bool:
    if args.text:
        wanted = " ".join(args.text.lower().split())
        haystack = " ".join(
            f"{group.get('summary') or ''} {group.get('text') or ''}".lower().split()
        )
        if wanted not in haystack:
            return False
    if args.before or args.after:
        try:
            before = parse_when(args.before) if args.before else None
            after = parse_when(args.after) if args.after else None
        except ValueError as exc:
            raise RecallProblem(f"before/after must be ISO dates like 2026-11-30: {exc}") from exc
        seen = str(group.get("observed_at") or "")
        try:
            when = parse_when(seen)
        except ValueError:
            return False
        if (before and when >= before) or (after and when <= after):
            return False
    return True


def _entry_row(
    entry: Mapping[str, Any], groups: Sequence[Mapping[str, Any]], thread: str
) -> dict[str, Any]:
    return {
        "archive_id": entry.get("archive_id"),
        "archived_at": short_ts(str(entry.get("archived_at") or "")),
        "generation": entry.get("generation"),
        "groups": [
            {
                "group_id": g.get("id"),
                "summary": g.get("summary") or "",
                "dates": _dates(g),
                "source": _group_source(g, thread),
            }
            for g in reversed(groups)  # newest first, as in the catalog
        ],
    }


def _chunk(
    text: str, offset: int, budget: int, count: Callable[[str], int]
) -> tuple[str, int | None]:
    """``text[offset:]`` within ``budget`` tokens, and where the next chunk starts."""
    if offset < 0 or offset > len(text):
        raise RecallProblem(f"char_offset must be between 0 and {len(text)} for this group.")
    rest = text[offset:]
    cut, truncated = cut_tokens(rest, budget, count)
    if not truncated:
        return rest, None
    if cut.endswith(ELLIPSIS):
        cut = cut[: -len(ELLIPSIS)]
    return cut, offset + len(cut) if cut else offset + 1


def observations_plan(
    budget: Budget, view: ThreadView, args: ArchiveRecallArgs
) -> Plan[dict[str, Any]]:
    """``mode="observations"``: list, search or read the thread's archived groups."""
    if not _archive_state(view).get("chain"):
        if not budget.archive_mode:
            raise RecallProblem(
                "There is no observation archive: archive mode is off (observation.archive). "
                "Your observations are all in your context; use mode='messages' for the "
                "original messages."
            )
        raise RecallProblem(
            "Nothing is archived in this thread yet: every observation is still in your "
            "context. Use mode='messages' for the original messages."
        )
    if args.group_id and not args.archive_id:
        raise RecallProblem("group_id needs the archive_id it belongs to (from the catalog).")
    if args.char_offset is not None and not (args.archive_id and args.group_id):
        raise RecallProblem("char_offset needs archive_id and group_id.")
    limit = min(clamp_limit(args.limit), 20)
    entries = yield from _chain(view, until=args.archive_id)
    next_cursor: str | None = None
    if args.archive_id:
        listed = _direct(entries, args)
    elif args.query:
        listed = yield from _searched(budget, view, entries, args, limit)
    else:
        listed, next_cursor = _listed(entries, args, limit)
    if not listed:
        return {
            "observations": "",
            "archives": [],
            "count": 0,
            "note": "No archived observations match; drop the filters or page from the start.",
        }
    return _read_group(budget, view, args, listed, next_cursor)


Listed = list[tuple[Mapping[str, Any], list[Mapping[str, Any]]]]
"""Archive entries with the groups of each that a call shows."""


def _direct(entries: Sequence[Mapping[str, Any]], args: ArchiveRecallArgs) -> Listed:
    entry = next((e for e in entries if e.get("archive_id") == args.archive_id), None)
    if entry is None:
        raise RecallProblem(
            f"Archive {args.archive_id!r} is not in this thread's archive (ids come from the "
            "<archived-observations> catalog or from mode='observations')."
        )
    return [(entry, list(entry.get("groups") or []))]


def _listed(
    entries: Sequence[Mapping[str, Any]], args: ArchiveRecallArgs, limit: int
) -> tuple[Listed, str | None]:
    """A page of entries (newest first) with their matching groups, and the next cursor."""
    start = 0
    if args.cursor:
        ids = [e.get("archive_id") for e in entries]
        if args.cursor not in ids:
            raise RecallProblem(f"cursor {args.cursor!r} is not an archive id of this thread.")
        start = ids.index(args.cursor) + 1
    listed: Listed = []
    for entry in entries[start:]:
        groups = [g for g in entry.get("groups") or [] if _matches(g, args)]
        if groups:
            if len(listed) == limit:
                return listed, str(listed[-1][0].get("archive_id"))
            listed.append((entry, groups))
    return listed, None


def _read_group(
    budget: Budget,
    view: ThreadView,
    args: ArchiveRecallArgs,
    listed: Listed,
    next_cursor: str | None,
) -> dict[str, Any]:
    """The listing, with the text of the group asked for (else the newest listed)."""
    entry, groups = listed[0]
    if args.group_id:
        group = next((g for g in groups if g.get("id") == args.group_id), None)
        if group is None:
            raise RecallProblem(f"Group {args.group_id!r} is not in archive {args.archive_id!r}.")
    else:
        group = groups[-1]  # the newest group of the newest entry listed
    result: dict[str, Any] = {
        "archive_id": entry.get("archive_id"),
        "group_id": group.get("id"),
        "summary": group.get("summary") or "",
        "source": _group_source(group, view.thread_id),
        "observations": "",
        "char_offset": args.char_offset or 0,
        "truncated": False,
        "archives": [],
        "count": 0,
    }
    rows = [_entry_row(e, g, view.thread_id) for e, g in listed]
    kept = fit_budget(rows, budget.tokens // 2, budget.count).entries or rows[:1]
    result["archives"], result["count"] = kept, len(kept)  # the entry read is always listed
    if len(kept) < len(rows):
        next_cursor = str(kept[-1]["archive_id"])
    if next_cursor:
        result["next_cursor"] = next_cursor
    room = max(budget.tokens - budget.count(json_text(result)) - ENVELOPE_MARGIN, 50)
    text, following = _chunk(
        str(group.get("text") or ""), args.char_offset or 0, room, budget.count
    )
    result["observations"] = text
    if following is not None:
        result["truncated"] = True
        result["next_char_offset"] = following
        result["hint"] = (
            "The group continues: call again with the same archive_id and group_id and "
            f"char_offset={following}."
        )
    return result


def _searched(
    budget: Budget,
    view: ThreadView,
    entries: Sequence[Mapping[str, Any]],
    args: ArchiveRecallArgs,
    limit: int,
) -> Plan[list[tuple[Mapping[str, Any], list[Mapping[str, Any]]]]]:
    """Archive entries whose groups the semantic search ranks for ``query`` (best first)."""
    if not budget.vector:
        raise RecallProblem(
            "Searching observations by meaning needs semantic search (retrieval vector=True); "
            "use `text` to filter by words instead."
        )
    where: dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
    for entry in entries:
        for group in entry.get("groups") or []:
            where[str(group.get("id"))] = (entry, group)
    (hits,) = yield StoreBatch(
        [
            search_op(
                view.resource_id, str(args.query), thread_id=view.thread_id, limit=100, offset=0
            )
        ]
    )
    out: list[tuple[Mapping[str, Any], list[Mapping[str, Any]]]] = []
    for hit in hits:
        value = hit.value
        found = where.get(str(value.get("group_id"))) if isinstance(value, Mapping) else None
        if found is None or value.get("kind") != "observation" or not _matches(found[1], args):
            continue
        if all(found[1] is not g for _, gs in out for g in gs):
            out.append((found[0], [found[1]]))
        if len(out) == limit:
            break
    return out


# -- receipts -------------------------------------------------------------------------------


def _record_groups(view: ThreadView) -> Plan[list[Mapping[str, Any]]]:
    """The view record's groups (read by key when graph state named them by key only)."""
    groups = list(view.record.get("groups") or []) if view.record is not None else []
    if groups or not view.group_keys:
        return groups
    items = yield StoreBatch(group_get_ops(view.thread_id, list(view.group_keys)))
    return [
        i.value["group"] for i in items if i is not None and isinstance(i.value.get("group"), dict)
    ]


def _find_receipt(view: ThreadView, ref: str) -> Plan[tuple[LineReceipt | None, str | None]]:
    """The line ``ref`` names among the live groups, then the archived ones (with its archive)."""
    groups = yield from _record_groups(view)
    found = find_line({"groups": groups}, ref)
    if found is not None:
        return found, None
    if not _archive_state(view).get("chain"):
        return None, None
    for entry in (yield from _chain(view)):
        found = find_line({"groups": list(entry.get("groups") or [])}, ref)
        if found is not None:
            return found, str(entry.get("archive_id"))
    return None, None


def _positions(spans: Sequence[Sequence[int]], archived: int) -> list[int]:
    out: list[int] = []
    for lo, hi in spans:
        out.extend(range(max(0, int(lo)), min(int(hi), archived)))
        if len(out) >= MAX_SOURCE:
            return out[:MAX_SOURCE]
    return out


def _messages_at(view: ThreadView, positions: Sequence[int]) -> Plan[list[tuple[int, BaseMessage]]]:
    """Archived messages at ``positions`` on the view's branch path, owned by its resource."""
    if not positions:
        return []
    items = yield StoreBatch(
        [archive_get_op(view.thread_id, p, branch_at(view.segments, p)) for p in positions]
    )
    out: list[tuple[int, BaseMessage]] = []
    for position, item in zip(positions, items, strict=True):
        if item is None or item.value.get("thread_id") not in (None, view.thread_id):
            continue
        if item.value.get("resource_id") != view.resource_id:
            continue
        out.append((position, archived_message(item)))
    return out


def source_plan(budget: Budget, view: ThreadView, args: ArchiveRecallArgs) -> Plan[dict[str, Any]]:
    """``mode="source"``: the messages the observation line ``args.line`` was written from."""
    ref = (args.line or "").strip()
    if not ref:
        raise RecallProblem(
            "mode='source' needs `line`: an observation line's id (from the memory tool) or "
            "its text as your memory shows it."
        )
    receipt, archive_id = yield from _find_receipt(view, ref)
    if receipt is None:
        raise RecallProblem(
            f"No observation line matches {ref[:80]!r}. Pass the line's id, or a part of its "
            "text exactly as your memory shows it (without the relative-date labels)."
        )
    group = receipt.group
    result: dict[str, Any] = {
        "line_id": receipt.line_id,
        "text": receipt.text,
        "group_id": group["id"],
        "kind": group["kind"],
        "observed_at": short_ts(group.get("observed_at")),
        "thread_id": view.thread_id,
        "message_count": receipt.message_count,
        "message_ids": [],
        "messages": [],
    }
    if archive_id:
        result["archive_id"] = archive_id
    if not receipt.spans:
        bounds = group.get("range") or []
        result["note"] = (
            "This line has no receipt (its group was written before receipts were kept, or in "
            "resource scope)."
            + (
                f" Its group spans {bounds[0]}:{bounds[-1]}: read it with mode='messages' "
                f"cursor={bounds[0]!r}."
                if bounds
                else ""
            )
        )
        return result
    positions = _positions(receipt.spans, view.archived)
    found = yield from _messages_at(view, positions)
    result["message_ids"] = [m.id for _, m in found]
    if span_count(receipt.spans) > len(positions):
        result["message_ids_truncated"] = True
    limit = clamp_limit(args.limit)
    page = abs(normalize_page(args.page))
    shown = found[(page - 1) * limit : page * limit]
    detail: Detail = "high" if args.detail == "high" else "low"
    every = PartFilter(None, None, None)
    entries = [
        render_message(m, detail=detail, parts_filter=every, count=budget.count) for _, m in shown
    ]
    room = max(budget.tokens - budget.count(json_text(result)) - ENVELOPE_MARGIN, 0)
    cut = fit_budget(entries, room, budget.count)
    result["messages"] = cut.entries
    result["page"] = page
    result["has_next_page"] = len(found) > page * limit or cut.truncated
    if cut.truncated:
        result["truncated"] = True
    if found:
        result["cursor"] = found[0][1].id
        result["hint"] = (
            "These are the messages the line was written from. For their full text, use "
            f"mode='messages' with cursor={found[0][1].id!r} and detail='high'."
        )
    return result
