"""The ``recall`` tool's modes, as plans of store batches.

:func:`recall_plan` runs one tool call: it finds the caller's resource and thread, then pages
archived messages (``mode="messages"``: cursor lookup through the id index, page bounds,
filtered scans), lists the resource's threads (``mode="threads"``) or searches the vector
index (``mode="search"``), and fits the result into the token budget. Problems the model should
see come back as ``{"error": ...}``. The plans only yield
:class:`~langchain_om._plans.effects.StoreBatch` effects, so :mod:`langchain_om.tools` drives
the same code sync or async.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from langchain_core.messages import BaseMessage
from langgraph.prebuilt import InjectedState
from langgraph.store.base import Item, SearchItem
from pydantic import BaseModel, Field

from langchain_om._core.branches import ROOT_BRANCH, Segments, branch_at, segments_of, split_key
from langchain_om._core.recall import (
    Anchor,
    Count,
    Detail,
    PartFilter,
    clamp_limit,
    cut_chars,
    filtered_scan_start,
    fit_budget,
    json_text,
    message_parts,
    normalize_page,
    page_bounds,
    parse_when,
    render_message,
    short_ts,
    sort_threads,
    thread_in_window,
)
from langchain_om._core.sanitize import restore_text
from langchain_om._plans.effects import Plan, StoreBatch
from langchain_om._plans.recall_archive import (
    ArchiveRecallArgs,
    Budget,
    RecallProblem,
    ThreadView,
    observations_plan,
    source_plan,
)
from langchain_om._plans.storage import (
    archive_find_op,
    archive_get_op,
    archived_message,
    indexed_seq,
    migrate_legacy_plan,
    msgindex_get_ops,
    on_path,
    registry_get_op,
    registry_list_op,
    search_op,
    state_get_op,
    thread_owner_plan,
    unpack_state,
)

__all__ = ["Caller", "RecallInput", "RecallSettings", "nonempty_str", "recall_plan"]

SCAN_CHUNK = 100
"""Messages fetched per batch when a filter makes paging scan."""
MAX_SCAN = 2000
"""Most messages one filtered call looks at."""
MAX_THREADS = 1000
"""Most threads listed or searched for a cursor."""
ENVELOPE_MARGIN = 32
"""Tokens kept free for the result's own fields."""
SEARCH_OVERFETCH = 3
"""Search asks for this many times the page, as hits on other branches are dropped."""
MAX_SEARCH = 300
"""Most search hits one call looks at."""


# --------------------------------------------------------------------------------------------
# Who is asking, with what settings, about which thread
# --------------------------------------------------------------------------------------------


class RecallInput(BaseModel):
    """Arguments of the ``recall`` tool."""

    mode: Literal["messages", "threads", "search", "observations", "source"] = Field(
        default="messages",
        description="messages: a page of one thread; threads: list conversations; "
        "search: find messages by meaning (needs semantic search); observations: read "
        "archived observation groups (archive mode); source: the messages one observation "
        "line was written from.",
    )
    query: str | None = Field(default=None, description="What to search for (mode='search').")
    cursor: str | None = Field(
        default=None,
        description="One message id to page from (e.g. the start or end of a `_range`).",
    )
    thread_id: str | None = Field(
        default=None, description="Thread to read; 'current' or omitted = this conversation."
    )
    anchor: Literal["start", "end"] | None = Field(
        default=None, description="Without a cursor: read from the start or the end of the thread."
    )
    page: int = Field(
        default=1, description="Page from the cursor: 1, 2, … forward; -1, -2, … backward."
    )
    limit: int = Field(default=20, description="Messages (or threads, results) per page.")
    detail: Literal["low", "high"] = Field(
        default="low", description="low: short previews; high: full text of each part."
    )
    part_type: str | None = Field(
        default=None,
        description="Only parts of this type: text, reasoning, tool_call, tool_result, image, …",
    )
    tool_name: str | None = Field(
        default=None, description="Only tool calls and results of this tool."
    )
    part_index: int | None = Field(
        default=None, description="Only this part (0-based) of each message, in full."
    )
    before: str | None = Field(
        default=None, description="Threads mode: threads active before this ISO date."
    )
    after: str | None = Field(
        default=None, description="Threads mode: threads active after this ISO date."
    )
    archive_id: str | None = Field(
        default=None, description="Observations mode: an archive id from the catalog."
    )
    group_id: str | None = Field(
        default=None, description="Observations mode: a group id of that archive (with archive_id)."
    )
    text: str | None = Field(
        default=None, description="Observations mode: only groups whose text holds these words."
    )
    char_offset: int | None = Field(
        default=None, description="Observations mode: continue a long group from this offset."
    )
    line: str | None = Field(
        default=None,
        description="Source mode: an observation line's id, or its text as your memory shows it.",
    )
    state: Annotated[dict[str, Any] | None, InjectedState] = None


@dataclass(frozen=True)
class Caller:
    """Who calls the recall tool: their thread and resource, and what the tool can see."""

    thread_id: str | None
    resource_id: str | None
    scope: Literal["thread", "resource"]
    window: list[BaseMessage] | None = None
    """The current thread's unobserved messages, when the tool can see them (agent state)."""
    record: Mapping[str, Any] | None = None
    group_keys: tuple[str, ...] = ()
    """Content keys of ``record``'s groups when graph state names them by key only."""


@dataclass(frozen=True)
class RecallSettings:
    """How a recall tool was built: search on or off, result budget, token counting."""

    vector: bool
    token_budget: int
    count: Count
    min_score: float = 0.25
    """Search hits scoring below this (cosine similarity) are not results."""
    archive_mode: bool = False
    """Whether archive mode (``observation.archive``) is on."""


@dataclass(frozen=True)
class _Thread:
    thread_id: str
    current: bool
    archived: int
    window: list[BaseMessage] = field(default_factory=list)
    info: Mapping[str, Any] | None = None
    segments: Segments = field(default_factory=lambda: [(ROOT_BRANCH, 0)])
    """The archive branch path of the record read (forks keep their own messages)."""
    record: Mapping[str, Any] | None = None
    """The record read (agent state first, then the stored one), when there is one."""

    @property
    def total(self) -> int:
        return self.archived + len(self.window)


class _RecallError(Exception):
    """A problem to report to the model as the tool result (never raised to the caller)."""


def nonempty_str(value: Any) -> str | None:
    """``value`` as text, or ``None`` when it is missing or empty."""
    return str(value) if value is not None and value != "" else None


# --------------------------------------------------------------------------------------------
# The plan (one implementation, driven sync or async)
# --------------------------------------------------------------------------------------------


def recall_plan(
    settings: RecallSettings, caller: Caller, args: RecallInput
) -> Plan[dict[str, Any]]:
    """The whole tool call as a plan of store batches; problems become ``{"error": ...}``."""
    try:
        if caller.thread_id is not None:
            yield from migrate_legacy_plan(caller.thread_id, caller.resource_id)
        caller = yield from _bind_resource(caller)
        if args.mode == "threads":
            return (yield from _threads_mode(settings, caller, args))
        if args.mode == "search":
            return (yield from _search_mode(settings, caller, args))
        if args.mode in ("observations", "source"):
            return (yield from _observation_modes(settings, caller, args))
        return (yield from _messages_mode(settings, caller, args))
    except (_RecallError, RecallProblem) as exc:
        return {"error": str(exc), "mode": args.mode}


def _bind_resource(caller: Caller) -> Plan[Caller]:
    """Check the caller against the current thread's owner in the store.

    Without a resource id in the config, the owner the store names (the thread's standalone
    record, else its archive) is the caller's resource. A record that came with the call
    (agent state) is used only when it names the caller's resource.
    """
    if caller.thread_id is None:
        return caller
    found, owner = yield from thread_owner_plan(caller.thread_id)
    resource = caller.resource_id
    if found and resource is not None and owner != resource:
        raise _RecallError(
            "The current thread belongs to another resource: recall reads only the caller's "
            "own threads. Give each user their own thread ids."
        )
    if resource is None and found:
        resource = nonempty_str(owner)
    record, window, keys = caller.record, caller.window, caller.group_keys
    if record is not None and nonempty_str(record.get("resource_id")) != resource:
        record, window, keys = None, None, ()
    return Caller(caller.thread_id, resource, caller.scope, window, record, keys)


def _effective_scope(caller: Caller) -> Literal["thread", "resource"]:
    return "resource" if caller.scope == "resource" and caller.resource_id else "thread"


def _owned(value: Mapping[str, Any], caller: Caller, thread: _Thread) -> bool:
    if value.get("thread_id") not in (None, thread.thread_id):
        return False
    owner = value.get("resource_id")
    return owner == caller.resource_id or (thread.current and owner is None)


def _load_thread(caller: Caller, requested: str | None) -> Plan[_Thread]:
    """Resolve ``thread_id`` (``None``/``"current"`` = the caller's) and check it is theirs."""
    if requested in (None, "", "current") or requested == caller.thread_id:
        if caller.thread_id is None:
            raise _RecallError(
                "No current thread: run the tool with config={'configurable': {'thread_id': ...}}"
                " or pass a thread_id from mode='threads'."
            )
        thread_id, current = caller.thread_id, True
    else:
        assert requested is not None
        if _effective_scope(caller) == "thread":
            raise _RecallError(
                f"Thread {requested!r} is not available: recall is limited to the current thread."
            )
        thread_id, current = requested, False
        yield from migrate_legacy_plan(thread_id, caller.resource_id)
    ops = [registry_get_op(caller.resource_id, thread_id)]
    if current and caller.resource_id is not None:
        ops.append(registry_get_op(None, thread_id))
    ops.append(state_get_op(thread_id))
    results = yield StoreBatch(ops)
    registry = _registry_value(results[0], caller.resource_id)
    if registry is None and current and caller.resource_id is not None:
        registry = _registry_value(results[1], None)
    if registry is None and not current:
        raise _RecallError(
            f"Unknown thread {requested!r}. Use mode='threads' to list the available threads."
        )
    record, window = unpack_state(results[-1])
    owner = record.get("resource_id") if record else None
    if record is not None and not (owner == caller.resource_id or (current and owner is None)):
        record, window = None, []
    if current and caller.window is not None:
        window = list(caller.window)
    # Totals and the branch come from the record (checkpointed with the thread), never from
    # the registry when a record is at hand: the registry may be ahead of a resumed record.
    source = _count_source(caller, current, record, registry)
    archived = int(source.get("observed_message_count") or 0)
    segments = segments_of(source)
    used = caller.record if current and caller.record is not None else record
    return _Thread(thread_id, current, archived, window, registry, segments, used)


def _count_source(
    caller: Caller,
    current: bool,
    record: Mapping[str, Any] | None,
    registry: Mapping[str, Any] | None,
) -> Mapping[str, Any]:
    """The record (agent state first, then the stored one) else the registry entry."""
    for candidate in (caller.record if current else None, record):
        if candidate is not None and isinstance(candidate.get("observed_message_count"), int):
            return candidate
    if registry is not None:
        return {
            "observed_message_count": registry.get("archived_messages"),
            "branches": registry.get("branches"),
        }
    return {}


def _registry_value(item: Item | None, resource_id: str | None) -> Mapping[str, Any] | None:
    if item is None or not isinstance(item.value, Mapping):
        return None
    return item.value if item.value.get("resource_id") == resource_id else None


# -- observations and source modes ----------------------------------------------------------


def _observation_modes(
    settings: RecallSettings, caller: Caller, args: RecallInput
) -> Plan[dict[str, Any]]:
    """``mode="observations"`` (the archive) or ``mode="source"`` (a line's receipt)."""
    thread = yield from _load_thread(caller, args.thread_id)
    keys = caller.group_keys if thread.current and thread.record is caller.record else ()
    view = ThreadView(
        thread.thread_id,
        caller.resource_id,
        thread.current,
        thread.archived,
        thread.segments,
        thread.record if _owns(thread.record, caller, thread) else None,
        keys,
    )
    budget = Budget(settings.token_budget, settings.count, settings.vector, settings.archive_mode)
    wanted = ArchiveRecallArgs(
        archive_id=nonempty_str(args.archive_id),
        group_id=nonempty_str(args.group_id),
        cursor=nonempty_str(args.cursor),
        limit=args.limit,
        page=args.page,
        before=nonempty_str(args.before),
        after=nonempty_str(args.after),
        text=nonempty_str(args.text),
        query=nonempty_str(args.query),
        char_offset=args.char_offset,
        line=nonempty_str(args.line),
        detail=args.detail,
    )
    if args.mode == "source":
        result = yield from source_plan(budget, view, wanted)
    else:
        result = yield from observations_plan(budget, view, wanted)
    return {"mode": args.mode, **result}


def _owns(record: Mapping[str, Any] | None, caller: Caller, thread: _Thread) -> bool:
    """Whether ``record`` is the read thread's and the caller's (its groups may be shown)."""
    if record is None or record.get("thread_id") not in (None, thread.thread_id):
        return False
    owner = record.get("resource_id")
    return owner == caller.resource_id or (thread.current and owner is None)


# -- messages mode -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Located:
    thread: _Thread
    seq: int


def _find_in_thread(
    caller: Caller, thread: _Thread, message_id: str, *, scan: bool = True
) -> Plan[int | None]:
    """Position of ``message_id`` in ``thread``: window, then the id index, then a search."""
    for offset, message in enumerate(thread.window):
        if message.id == message_id:
            return thread.archived + offset
    *items, marker = yield StoreBatch(
        msgindex_get_ops(thread.thread_id, message_id, thread.segments)
    )
    seq = indexed_seq(items, thread.segments)
    if isinstance(seq, int) and 0 <= seq < thread.archived:
        return seq
    if not scan or marker is not None:
        return None
    (found,) = yield StoreBatch([archive_find_op(thread.thread_id, message_id)])
    for hit in found:
        seq = hit.value.get("seq")
        if (
            _owned(hit.value, caller, thread)
            and on_path(hit.value, thread.segments)
            and isinstance(seq, int)
            and seq < thread.archived
        ):
            return seq
    return None


def _locate(caller: Caller, thread: _Thread, cursor: str, explicit: bool) -> Plan[_Located | None]:
    """Find ``cursor`` in ``thread``, then (resource scope, no explicit thread) in the others."""
    seq = yield from _find_in_thread(caller, thread, cursor)
    if seq is not None:
        return _Located(thread, seq)
    if explicit or _effective_scope(caller) == "thread":
        return None
    others = [t for t in (yield from _registry_threads(caller)) if t != thread.thread_id]
    if not others:
        return None
    hits = yield StoreBatch([op for t in others for op in msgindex_get_ops(t, cursor)])
    candidates = [t for t, item in zip(others, hits[::2], strict=True) if item is not None]
    unindexed = [t for t, mark in zip(others, hits[1::2], strict=True) if mark is None]
    if not candidates and unindexed:
        found = yield StoreBatch([archive_find_op(t, cursor) for t in unindexed])
        candidates = [t for t, items in zip(unindexed, found, strict=True) if items]
    for thread_id in candidates:
        other = yield from _load_thread(caller, thread_id)
        seq = yield from _find_in_thread(caller, other, cursor)
        if seq is not None:
            return _Located(other, seq)
    return None


def _registry_threads(caller: Caller) -> Plan[list[str]]:
    values = yield from _registry_values(caller)
    return [restore_text(str(v["thread_id"])) for v in values]


def _registry_values(caller: Caller) -> Plan[list[Mapping[str, Any]]]:
    if caller.resource_id is None:
        return []
    (items,) = yield StoreBatch([registry_list_op(caller.resource_id, MAX_THREADS)])
    return [
        item.value
        for item in items
        if isinstance(item.value, Mapping)
        and item.value.get("resource_id") == caller.resource_id
        and item.value.get("thread_id") is not None
    ]


def _fetch(
    caller: Caller, thread: _Thread, positions: Sequence[int]
) -> Plan[list[tuple[int, BaseMessage]]]:
    """Messages at ``positions`` (archive first, then the window), owned by the caller."""
    archived = [p for p in positions if 0 <= p < thread.archived]
    items: list[Item | None] = []
    if archived:
        items = yield StoreBatch(
            [archive_get_op(thread.thread_id, p, branch_at(thread.segments, p)) for p in archived]
        )
    by_pos: dict[int, BaseMessage] = {}
    for pos, item in zip(archived, items, strict=True):
        if item is not None and _owned(item.value, caller, thread):
            by_pos[pos] = archived_message(item)
    for pos in positions:
        if thread.archived <= pos < thread.total:
            by_pos[pos] = thread.window[pos - thread.archived]
    return [(p, by_pos[p]) for p in positions if p in by_pos]


def _parse_cursor(cursor: str | None) -> tuple[str | None, str | None, str | None]:
    """``(cursor, range_end, hint)``: a ``start:end`` range keeps its start and adds a hint."""
    if cursor is None or not cursor.strip():
        return None, None, None
    cursor = cursor.strip().strip("`")
    start, sep, end = cursor.partition(":")
    if not sep or not start or not end:
        return cursor, None, None
    hint = (
        f"`{cursor}` is a range: cursor takes ONE message id. Showing from its start "
        f"`{start}`; the range ends at `{end}` (cursor='{end}' with page=-1 shows the "
        "messages just before it)."
    )
    return start, end, hint


@dataclass
class _Page:
    """A page of messages: what was found, and where paging can go from it."""

    found: list[tuple[int, BaseMessage]]
    has_prev: bool
    has_next: bool
    after: BaseMessage | None
    """The first message after the page (its id is the next cursor)."""


def _resolve_cursor(
    caller: Caller, thread: _Thread, args: RecallInput
) -> Plan[tuple[_Thread, int | None, str | None, str | None]]:
    """``(thread, start, cursor, hint)``: where the cursor points (thread and position)."""
    cursor, _, hint = _parse_cursor(args.cursor)
    if cursor is None:
        return thread, None, None, hint
    # An id with a colon may be a real id: try it whole before splitting it as a range.
    whole = args.cursor.strip().strip("`") if args.cursor else cursor
    if hint is not None:
        seq = yield from _find_in_thread(caller, thread, whole, scan=False)
        if seq is not None:
            return thread, seq, whole, None
    located = yield from _locate(caller, thread, cursor, args.thread_id is not None)
    if located is None:
        message = f"Message {cursor!r} was not found in the threads you can read."
        raise _RecallError(f"{hint} {message}" if hint else message)
    return located.thread, located.seq, cursor, hint


def _bounded_page(
    caller: Caller,
    thread: _Thread,
    *,
    start: int | None,
    anchor: Anchor | None,
    page: int,
    limit: int,
) -> Plan[_Page]:
    """An unfiltered page: the positions ``page_bounds`` gives, plus the one after it."""
    bounds = page_bounds(thread.total, start=start, anchor=anchor, page=page, limit=limit)
    positions = list(range(bounds.lo, bounds.hi))
    if bounds.has_next:
        positions.append(bounds.hi)
    fetched = yield from _fetch(caller, thread, positions)
    found = [(p, m) for p, m in fetched if p < bounds.hi]
    after = next((m for p, m in fetched if p == bounds.hi), None)
    return _Page(found, bounds.has_prev, bounds.has_next, after)


def _join(*hints: str | None) -> str | None:
    return " ".join(h for h in hints if h) or None


def _messages_mode(
    settings: RecallSettings, caller: Caller, args: RecallInput
) -> Plan[dict[str, Any]]:
    thread = yield from _load_thread(caller, args.thread_id)
    thread, start, cursor, hint = yield from _resolve_cursor(caller, thread, args)
    limit = clamp_limit(args.limit)
    page_number = normalize_page(args.page)
    detail: Detail = "high" if args.part_index is not None else args.detail
    parts_filter = PartFilter(args.part_type, args.tool_name, args.part_index)
    anchor: Anchor | None = args.anchor if cursor is None else None
    if parts_filter.narrows_messages:
        found, has_prev, has_next, after, note = yield from _scan_page(
            caller, thread, parts_filter, start=start, anchor=anchor, page=page_number, limit=limit
        )
        page = _Page(found, has_prev, has_next, after)
        hint = _join(hint, note)
    else:
        page = yield from _bounded_page(
            caller, thread, start=start, anchor=anchor, page=page_number, limit=limit
        )
    result: dict[str, Any] = {
        "thread_id": thread.thread_id,
        "messages": [],
        "count": 0,
        "cursor": cursor,
        "page": page_number,
        "limit": limit,
        "detail": detail,
        "has_next_page": page.has_next,
        "has_prev_page": page.has_prev,
        "truncated": False,
        "token_offset": None,
        "total_messages": thread.total,
    }
    entries = [
        render_message(m, detail=detail, parts_filter=parts_filter, count=settings.count)
        for _, m in page.found
    ]
    hint = _join(hint, _fit_messages(settings, result, entries, page))
    if args.part_index is not None and len(page.found) == 1:
        hint = _join(hint, _next_part_hint(page.found[0][1], args.part_index))
    if hint:
        result["hint"] = hint
    return result


def _fit_messages(
    settings: RecallSettings, result: dict[str, Any], entries: list[dict[str, Any]], page: _Page
) -> str | None:
    """Put the entries that fit the budget into ``result``; return a hint when it cut them."""
    cut = fit_budget(entries, _room(settings, result), settings.count)
    result["messages"] = cut.entries
    result["count"] = len(cut.entries)
    next_cursor: str | None = page.after.id if page.after is not None else None
    hint = None
    if cut.truncated:
        result["truncated"] = True
        result["token_offset"] = cut.token_offset
        shown = len(cut.entries)
        if shown and cut.entries[-1] != entries[shown - 1]:
            resume: BaseMessage | None = page.found[shown - 1][1]  # cut inside this message
        else:
            resume = page.found[shown][1] if shown < len(page.found) else None
        next_cursor = resume.id if resume is not None else next_cursor
        hint = (
            f"Output stopped at {cut.token_offset} tokens (budget {settings.token_budget}). "
            "Continue with cursor=next_cursor and page=1, or use a smaller limit, "
            "detail='low' or part_index."
        )
    if next_cursor is not None and (page.has_next or cut.truncated):
        result["next_cursor"] = next_cursor
    return hint


def _next_part_hint(message: BaseMessage, part_index: int) -> str | None:
    total_parts = len(message_parts(message))
    if part_index + 1 < total_parts:
        return f"This message has {total_parts} parts; part_index={part_index + 1} is next."
    return None


def _room(settings: RecallSettings, envelope: dict[str, Any]) -> int:
    return max(settings.token_budget - settings.count(json_text(envelope)) - ENVELOPE_MARGIN, 0)


def _scan_page(
    caller: Caller,
    thread: _Thread,
    parts_filter: PartFilter,
    *,
    start: int | None,
    anchor: Anchor | None,
    page: int,
    limit: int,
) -> Plan[tuple[list[tuple[int, BaseMessage]], bool, bool, BaseMessage | None, str | None]]:
    """A filtered page: scan from the origin for matching messages (at most ``MAX_SCAN``).

    Returns ``(page, has_prev, has_next, next_message, note)``; pages count matches, so page 2
    skips the first ``limit`` matches in the scan direction.
    """
    pos, step = filtered_scan_start(thread.total, start=start, anchor=anchor, page=page)
    origin = pos if step > 0 else pos + 1
    skip = (abs(page) - 1) * limit
    wanted = skip + limit + 1
    matches: list[tuple[int, BaseMessage]] = []
    scanned = 0
    while 0 <= pos < thread.total and scanned < MAX_SCAN and len(matches) < wanted:
        end = pos + step * SCAN_CHUNK
        chunk = [p for p in range(pos, end, step) if 0 <= p < thread.total]
        scanned += len(chunk)
        for p, message in (yield from _fetch(caller, thread, chunk)):
            if parts_filter.message_matches(message_parts(message)):
                matches.append((p, message))
        pos = end
    unscanned = 0 <= pos < thread.total
    page_items = matches[skip : skip + limit]
    beyond = matches[skip + limit] if len(matches) > skip + limit else None
    further = beyond is not None or unscanned  # more matches may lie in the scan direction
    behind = skip > 0 or (origin > 0 if step > 0 else origin < thread.total)
    note = None
    if unscanned and beyond is None:
        note = (
            f"Stopped after scanning {scanned} messages for matching parts; page on or move "
            "the cursor to look further."
        )
    if step > 0:
        following = beyond[1] if beyond is not None else None
        return page_items, behind, further, following, note
    page_items.reverse()
    return page_items, further, behind, None, note


# -- threads mode ------------------------------------------------------------------------------


def _threads_mode(
    settings: RecallSettings, caller: Caller, args: RecallInput
) -> Plan[dict[str, Any]]:
    try:
        before = parse_when(args.before) if args.before else None
        after = parse_when(args.after) if args.after else None
    except ValueError as exc:
        raise _RecallError(f"before/after must be ISO dates like 2026-11-30: {exc}") from exc
    values: list[Mapping[str, Any]] = []
    if _effective_scope(caller) == "resource":
        values = list((yield from _registry_values(caller)))
    rows: dict[str, dict[str, Any]] = {}
    for value in values:
        thread_id = restore_text(str(value["thread_id"]))
        rows[thread_id] = {
            "thread_id": thread_id,
            "title": value.get("title"),
            "created_at": value.get("created_at"),
            "updated_at": value.get("updated_at"),
            "messages": int(value.get("archived_messages") or 0),
            "current": thread_id == caller.thread_id,
        }
    if caller.thread_id is not None:
        current = yield from _load_thread(caller, None)
        info = current.info or {}
        rows[current.thread_id] = {
            "thread_id": current.thread_id,
            "title": info.get("title"),
            "created_at": info.get("created_at"),
            "updated_at": info.get("updated_at"),
            "messages": current.total,
            "current": True,
        }
    listed = [r for r in rows.values() if thread_in_window(r, before=before, after=after)]
    listed = sort_threads(listed)
    limit = clamp_limit(args.limit)
    page = abs(normalize_page(args.page))
    chunk = listed[(page - 1) * limit : page * limit]
    result: dict[str, Any] = {
        "threads": [],
        "count": 0,
        "page": page,
        "has_more": len(listed) > page * limit,
        "total_threads": len(listed),
    }
    cut = fit_budget(chunk, _room(settings, result), settings.count)
    result["threads"] = cut.entries
    result["count"] = len(cut.entries)
    if cut.truncated:
        result["truncated"] = True
        result["token_offset"] = cut.token_offset
        result["has_more"] = True
    return result


# -- search mode -------------------------------------------------------------------------------


def _search_mode(
    settings: RecallSettings, caller: Caller, args: RecallInput
) -> Plan[dict[str, Any]]:
    if not settings.vector:
        raise _RecallError(
            "Search is off (retrieval vector=False). Use mode='messages' with a cursor from "
            "an observation group's _range, or mode='threads'."
        )
    query = (args.query or "").strip()
    if not query:
        raise _RecallError("mode='search' needs a query.")
    limit = clamp_limit(args.limit)
    page = abs(normalize_page(args.page))
    only: str | None = None
    if args.thread_id not in (None, ""):
        only = (yield from _load_thread(caller, args.thread_id)).thread_id
    elif _effective_scope(caller) == "thread":
        if caller.thread_id is None:
            raise _RecallError("No current thread to search: pass a thread id in the run config.")
        only = caller.thread_id
    # Hits on other branches (checkpoint forks) are dropped after the search: ask for more.
    fetch = min(page * limit * SEARCH_OVERFETCH + limit, MAX_SEARCH)
    (hits,) = yield StoreBatch(
        [search_op(caller.resource_id, query, thread_id=only, limit=fetch, offset=0)]
    )
    if hits and all(hit.score is None for hit in hits):
        raise _RecallError(
            "The store has no vector index: build it with index={'embed': ..., 'dims': ..., "
            "'fields': ['text']} to search."
        )
    relevant = [h for h in hits if h.score is not None and h.score >= settings.min_score]
    threads: dict[str, _Thread | None] = {}
    kept: list[SearchItem] = []
    for hit in relevant:
        if _search_owned(hit, caller, only) and (yield from _on_branch(caller, hit, threads)):
            kept.append(hit)
    results = [_search_entry(hit) for hit in kept[(page - 1) * limit : page * limit]]
    result: dict[str, Any] = {"results": [], "count": 0, "page": page, "query": query}
    if not results:
        result["note"] = (
            f"Nothing matched the query (no message or observation scored at least "
            f"{settings.min_score}). Try other words, or mode='threads' / mode='messages'."
        )
    cut = fit_budget(results, _room(settings, result), settings.count)
    result["results"] = cut.entries
    result["count"] = len(cut.entries)
    more_scored = len(hits) == fetch and len(relevant) == len(hits)
    result["has_more"] = len(kept) > page * limit or more_scored
    if cut.truncated:
        result["truncated"] = True
        result["token_offset"] = cut.token_offset
    return result


def _on_branch(caller: Caller, hit: SearchItem, threads: dict[str, _Thread | None]) -> Plan[bool]:
    """Whether a search hit is on the caller's branch of its thread (not a fork's).

    A message document names its archive branch and position; a group's names those of the
    messages it was written from (and a reflection's, the generation it made). A position the
    caller's record has not archived, or holds on another branch, is not the caller's.
    """
    value = hit.value
    thread_id = str(value.get("thread_id"))
    if thread_id not in threads:
        try:
            threads[thread_id] = yield from _load_thread(caller, thread_id)
        except _RecallError:
            threads[thread_id] = None
    thread = threads[thread_id]
    if thread is None:
        return False
    if value.get("kind") == "observation":
        return (yield from _group_on_branch(caller, thread, value))
    seq = value.get("seq")
    branch = value.get("branch")
    if branch is None:  # indexed before documents named their branch: it is in the key
        prefix = f"m:{value.get('thread_id')}:"
        branch = split_key(hit.key[len(prefix) :] if hit.key.startswith(prefix) else "")[0]
    return (
        isinstance(seq, int) and seq < thread.archived and branch_at(thread.segments, seq) == branch
    )


def _group_on_branch(caller: Caller, thread: _Thread, value: Mapping[str, Any]) -> Plan[bool]:
    generation = value.get("generation")
    known = thread.record.get("generation") if thread.record is not None else None
    if isinstance(generation, int) and isinstance(known, int) and generation > known:
        return False  # a reflection made after the caller's checkpoint
    end = value.get("end_seq")
    if isinstance(end, int):
        return 0 < end <= thread.archived and branch_at(thread.segments, end - 1) == value.get(
            "branch"
        )
    bounds = value.get("range") or []  # indexed before groups named their positions
    if not bounds:
        return False
    seq = yield from _find_in_thread(caller, thread, str(bounds[-1]), scan=False)
    return seq is not None


def _search_owned(hit: SearchItem, caller: Caller, only: str | None) -> bool:
    value = hit.value
    if not isinstance(value, Mapping) or value.get("resource_id") != caller.resource_id:
        return False
    return only is None or value.get("thread_id") == only


def _search_entry(hit: SearchItem) -> dict[str, Any]:
    value = hit.value
    preview, _ = cut_chars(" ".join(str(value.get("text", "")).split()), 200)
    entry: dict[str, Any] = {
        "thread_id": value.get("thread_id"),
        "score": round(float(hit.score), 4) if hit.score is not None else None,
        "kind": value.get("kind"),
        "preview": preview,
    }
    if value.get("kind") == "observation":
        bounds = value.get("range") or []
        entry["cursor"] = bounds[0] if bounds else None
        if bounds:
            entry["range"] = f"{bounds[0]}:{bounds[-1]}"
        entry["group_id"] = value.get("group_id")
    else:
        entry["cursor"] = value.get("message_id")
        entry["role"] = value.get("role")
    entry["ts"] = short_ts(value.get("ts"))
    return entry
