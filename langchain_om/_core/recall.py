"""Pure parts of the recall tool: message parts, detail levels, paging, budgets, guidance.

Nothing here touches a store. ``langchain_om.tools`` fetches archived messages and hands them to
these functions; every token count goes through a ``count(text) -> int`` callable.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_om._core.types import OM_META_KEY

Count = Callable[[str], int]
Detail = Literal["low", "high"]
Anchor = Literal["start", "end"]

LOW_TEXT_CHARS = 120
"""Low detail: text parts are cut to this many characters."""
LOW_TOOL_RESULT_TOKENS = 60
"""Low detail: tool results are cut to this many tokens."""
HIGH_TOOL_RESULT_TOKENS = 4000
"""High detail: tool results are cut to this many tokens."""
MAX_LIMIT = 100
"""Largest page size the tool honours."""
ELLIPSIS = "…"

_PART_ALIASES = {
    "tool_invocation": "tool_call",
    "tool_use": "tool_call",
    "function_call": "tool_call",
    "tool_output": "tool_result",
    "thinking": "reasoning",
    "image_url": "image",
}


# --------------------------------------------------------------------------------------------
# Parts
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One part of a message as recall shows it."""

    index: int
    type: str
    """``text``, ``reasoning``, ``tool_call``, ``tool_result``, ``image``, ``file``, … ."""
    text: str
    name: str | None = None
    """Tool name, for ``tool_call`` and ``tool_result`` parts."""


def normalize_part_type(value: str) -> str:
    kind = value.strip().lower().replace("-", "_")
    return _PART_ALIASES.get(kind, kind)


def _block_text(block: Any) -> tuple[str, str]:
    """``(type, text)`` of one content block."""
    if isinstance(block, str):
        return "text", block
    if not isinstance(block, dict):
        return "other", str(block)
    kind = normalize_part_type(str(block.get("type", "other")))
    if kind == "text":
        return "text", str(block.get("text", ""))
    if kind == "reasoning":
        for key in ("reasoning", "thinking", "text", "summary"):
            value = block.get(key)
            if isinstance(value, str) and value:
                return "reasoning", value
        return "reasoning", ""
    return kind, f"[{kind}]"


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    texts = [_block_text(b)[1] for b in content] if isinstance(content, list) else [str(content)]
    return "\n".join(t for t in texts if t)


def message_parts(message: BaseMessage) -> list[Part]:
    """Split a message into the parts recall pages through, numbered from 0."""
    parts: list[Part] = []
    if isinstance(message, ToolMessage):
        text = _content_text(message.content)
        parts.append(Part(0, "tool_result", text, message.name or None))
        return parts
    content = message.content
    blocks: list[Any] = [content] if isinstance(content, str) else list(content)
    for block in blocks:
        if isinstance(block, dict) and normalize_part_type(str(block.get("type"))) == "tool_call":
            continue  # provider-native tool-use blocks duplicate ``tool_calls``
        kind, text = _block_text(block)
        if kind in ("text", "reasoning") and not text:
            continue
        parts.append(Part(len(parts), kind, text))
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            args = json.dumps(call.get("args", {}), ensure_ascii=False, sort_keys=True)
            parts.append(Part(len(parts), "tool_call", args, call["name"]))
    return parts


def message_ts(message: BaseMessage) -> str | None:
    meta = message.response_metadata.get(OM_META_KEY)
    ts = meta.get("ts") if isinstance(meta, dict) else None
    return ts if isinstance(ts, str) else None


def short_ts(ts: str | None) -> str | None:
    """``2026-11-30T14:03:05.120000+00:00`` → ``2026-11-30 14:03:05Z`` (UTC)."""
    if not ts:
        return None
    try:
        return parse_when(ts).strftime("%Y-%m-%d %H:%M:%SZ")
    except ValueError:
        return ts


# --------------------------------------------------------------------------------------------
# Detail levels and filters
# --------------------------------------------------------------------------------------------


def cut_chars(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[: max(limit - 1, 0)].rstrip() + ELLIPSIS, True


def cut_tokens(text: str, max_tokens: int, count: Count) -> tuple[str, bool]:
    """The longest prefix of ``text`` with at most ``max_tokens`` tokens (plus an ellipsis)."""
    if max_tokens <= 0:
        return (ELLIPSIS, True) if text else ("", False)
    if count(text) <= max_tokens:
        return text, False
    lo, hi = 0, len(text)
    while lo < hi:  # largest prefix length that fits
        mid = (lo + hi + 1) // 2
        if count(text[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + ELLIPSIS, True


@dataclass(frozen=True)
class PartFilter:
    """Which parts a page shows: by type, by tool name, or one part by index."""

    part_type: str | None = None
    tool_name: str | None = None
    part_index: int | None = None

    @property
    def narrows_messages(self) -> bool:
        """Whether some messages may not match at all (paging must then scan)."""
        return self.part_type is not None or self.tool_name is not None

    def part_matches(self, part: Part) -> bool:
        if self.part_type is not None and part.type != normalize_part_type(self.part_type):
            return False
        if self.tool_name is not None:
            if part.type not in ("tool_call", "tool_result") or part.name != self.tool_name:
                return False
        return self.part_index is None or part.index == self.part_index

    def message_matches(self, parts: Sequence[Part]) -> bool:
        if not self.narrows_messages:
            return True
        probe = PartFilter(self.part_type, self.tool_name)
        return any(probe.part_matches(p) for p in parts)


def render_part(part: Part, detail: Detail, count: Count) -> dict[str, Any]:
    """One part as a JSON-able dict, at ``detail``."""
    out: dict[str, Any] = {"index": part.index, "type": part.type}
    if part.name is not None:
        out["name"] = part.name
    cut = False
    if part.type == "tool_call":
        text = f"[Tool Call: {part.name}]" if detail == "low" else f"{part.name}({part.text})"
    elif part.type == "tool_result":
        limit = LOW_TOOL_RESULT_TOKENS if detail == "low" else HIGH_TOOL_RESULT_TOKENS
        text, cut = cut_tokens(part.text, limit, count)
    elif detail == "low":
        text, cut = cut_chars(part.text, LOW_TEXT_CHARS)
    else:
        text = part.text
    out["text"] = text
    if cut:
        out["truncated"] = True
    return out


def render_message(
    message: BaseMessage,
    *,
    detail: Detail,
    parts_filter: PartFilter,
    count: Count,
    thread_id: str | None = None,
) -> dict[str, Any]:
    """A message as recall returns it: id, role, time and its (filtered) parts."""
    parts = message_parts(message)
    shown = [render_part(p, detail, count) for p in parts if parts_filter.part_matches(p)]
    entry: dict[str, Any] = {
        "id": message.id,
        "role": message.type,
        "ts": short_ts(message_ts(message)),
    }
    if thread_id is not None:
        entry["thread_id"] = thread_id
    entry["parts"] = shown
    if len(shown) < len(parts):
        entry["part_count"] = len(parts)
    return entry


# --------------------------------------------------------------------------------------------
# Paging
# --------------------------------------------------------------------------------------------


def clamp_limit(limit: int) -> int:
    return max(1, min(int(limit), MAX_LIMIT))


def normalize_page(page: int) -> int:
    return 1 if page == 0 else int(page)


@dataclass(frozen=True)
class PageBounds:
    """The half-open position range ``[lo, hi)`` of one page of a thread."""

    lo: int
    hi: int
    total: int

    @property
    def has_prev(self) -> bool:
        return self.lo > 0

    @property
    def has_next(self) -> bool:
        return self.hi < self.total


def page_bounds(
    total: int, *, start: int | None, anchor: Anchor | None, page: int, limit: int
) -> PageBounds:
    """Positions of a page of ``limit`` messages out of ``total``.

    With a cursor at position ``start``, page 1 begins at the cursor and pages 2, 3, … follow
    it; page -1 is the ``limit`` messages just before the cursor, -2 the ones before those.
    Without a cursor, ``anchor="start"`` (the default) counts pages from the first message,
    ``anchor="end"`` counts them back from the last (page 1 = the newest ``limit``).
    """
    page = normalize_page(page)
    limit = clamp_limit(limit)
    if start is None and anchor == "end":
        hi = total - (abs(page) - 1) * limit
        lo = hi - limit
    else:
        origin = 0 if start is None else start
        if page > 0:
            lo = origin + (page - 1) * limit
            hi = lo + limit
        else:
            hi = origin - (-page - 1) * limit
            lo = hi - limit
    lo = max(0, min(lo, total))
    hi = max(lo, min(hi, total))
    return PageBounds(lo, hi, total)


def filtered_scan_start(
    total: int, *, start: int | None, anchor: Anchor | None, page: int
) -> tuple[int, int]:
    """``(position, step)`` where a filtered scan begins and its direction (+1 or -1)."""
    page = normalize_page(page)
    if start is None and anchor == "end":
        return total - 1, -1
    origin = 0 if start is None else start
    if page > 0:
        return origin, 1
    return origin - 1, -1


# --------------------------------------------------------------------------------------------
# Budget
# --------------------------------------------------------------------------------------------


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def entry_tokens(entry: dict[str, Any], count: Count) -> int:
    return count(json_text(entry))


@dataclass(frozen=True)
class BudgetCut:
    """What fits in the budget: the kept entries and where the cut fell."""

    entries: list[dict[str, Any]]
    truncated: bool
    token_offset: int | None
    """Tokens of page content returned before the cut (``None`` when nothing was cut)."""
    used: int


def fit_budget(entries: Sequence[dict[str, Any]], budget: int, count: Count) -> BudgetCut:
    """Keep whole entries while they fit in ``budget`` tokens.

    When even the first entry does not fit, its longest parts are shortened so that a part of
    it is returned (the cut is still reported).
    """
    kept: list[dict[str, Any]] = []
    used = 0
    for entry in entries:
        cost = entry_tokens(entry, count)
        if used + cost <= budget:
            kept.append(entry)
            used += cost
            continue
        if not kept:
            shrunk = _shrink_entry(entry, budget, count)
            if shrunk is not None:
                kept.append(shrunk)
                used += entry_tokens(shrunk, count)
        return BudgetCut(kept, True, used, used)
    return BudgetCut(kept, False, None, used)


def _shrink_entry(entry: dict[str, Any], budget: int, count: Count) -> dict[str, Any] | None:
    """The entry with its parts' text cut (in order) so that the whole entry fits ``budget``."""
    parts = list(entry.get("parts", []))
    if not parts:
        return None
    skeleton = dict(entry, parts=[dict(p, text="", truncated=True) for p in parts])
    allowance = budget - entry_tokens(skeleton, count)
    while allowance > 0:
        room = allowance
        shrunk_parts = []
        for part in parts:
            cut, was_cut = cut_tokens(str(part.get("text", "")), room, count)
            shrunk_parts.append(dict(part, text=cut, truncated=True) if was_cut else dict(part))
            room = max(room - count(cut), 0)
        shrunk = dict(entry, parts=shrunk_parts)
        over = entry_tokens(shrunk, count) - budget
        if over <= 0:
            return shrunk
        allowance -= over
    return None


# --------------------------------------------------------------------------------------------
# Threads mode
# --------------------------------------------------------------------------------------------


def parse_when(value: str) -> datetime:
    """An ISO date or date-time as an aware UTC datetime (a bare date is its midnight).

    Raises:
        ValueError: ``value`` is not an ISO date.
    """
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_when(value)
    except ValueError:
        return None


def thread_in_window(
    thread: dict[str, Any], *, before: datetime | None, after: datetime | None
) -> bool:
    """Whether a thread was active in ``(after, before)`` (its life span overlaps it)."""
    created = _when(thread.get("created_at"))
    updated = _when(thread.get("updated_at")) or created
    if before is not None and created is not None and created >= before:
        return False
    return not (after is not None and updated is not None and updated <= after)


def sort_threads(threads: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Most recently updated first (unknown times last), then by id."""

    def key(thread: dict[str, Any]) -> tuple[float, str]:
        when = _when(thread.get("updated_at"))
        return (-(when.timestamp()) if when else float("inf"), str(thread.get("thread_id")))

    return sorted(threads, key=key)


# --------------------------------------------------------------------------------------------
# Guidance
# --------------------------------------------------------------------------------------------


CODE_MODE_GUIDANCE = """\
Recall runs as code: you have an `execute_memory_recall` tool instead of `recall`. Pass it ONE \
short Python program that calls `recall(...)` with the keyword arguments described below (as \
often as you need; each call returns the result as a dict) and ends with `return <value>`: \
do the filtering, counting and joining in the program and return only what you need. Only \
`recall`, `print`, basic builtins and plain str/list/dict methods exist."""


def recall_guidance(
    *,
    scope: Literal["thread", "resource"],
    vector: bool,
    extra: str | None = None,
    code_mode: bool = False,
) -> str:
    """Usage guidance for the recall tool, as it goes into the agent's context.

    With ``code_mode`` it first says that recall runs inside ``execute_memory_recall``
    programs (the arguments described stay the same).
    """
    lines = [
        *([CODE_MODE_GUIDANCE] if code_mode else []),
        "You have a `recall` tool that reads the original messages behind your observations."
        if not code_mode
        else "`recall(...)` reads the original messages behind your observations.",
        "Use it when you need exact content that observations only summarise: quotes, numbers, "
        "code, file paths, URLs, names, or the precise wording of an earlier request or result.",
        "- Cursors: each observation group shows a `_range: start:end` of message ids. Pass ONE "
        "id as `cursor` (not the `start:end` pair). Page 1 starts at the cursor and goes "
        "forward; `page=-1` shows the messages just before it; `anchor='start'` or "
        "`anchor='end'` read from the beginning or the end of a thread without a cursor.",
        "- Paging: `limit` messages per page (default 20); follow `has_next_page` / "
        "`has_prev_page`.",
        "- Detail: `detail='low'` (default) shows short previews and `[Tool Call: name]`; "
        "use `detail='high'` for full text, and `part_index` to read one part of a message in "
        "full. `part_type` and `tool_name` show only matching parts.",
        "- Truncation: when a result says `truncated`, it stopped at a token budget; continue "
        "from the `next_cursor` it gives, or ask for fewer messages or one part.",
    ]
    if scope == "resource":
        lines.append(
            "- Other conversations: `mode='threads'` lists this user's other threads (filter "
            "with `before` / `after` ISO dates); pass a `thread_id` to browse one of them. "
            "`thread_id='current'` is this conversation."
        )
    else:
        lines.append("- Recall only covers this conversation.")
    if vector:
        where = "across this user's threads" if scope == "resource" else "in this conversation"
        lines.append(
            f"- Search: when you do not know where something was said, use `mode='search'` "
            f"with a `query` to find it {where}; each result gives a `cursor` to browse from."
        )
    text = "\n".join(lines)
    if extra and extra.strip():
        text += "\n\n" + extra.strip()
    return text


class RetrievalSettings(Protocol):
    """The retrieval options recall guidance depends on."""

    @property
    def scope(self) -> Literal["thread", "resource"]: ...

    @property
    def vector(self) -> bool: ...

    @property
    def instructions(self) -> str | None: ...


def recall_instructions(
    retrieval: RetrievalSettings | None, *, scope: Literal["thread", "resource"] | None = None
) -> str:
    """Usage guidance for the recall tool, for the agent's context (``""`` when retrieval is off).

    It says when to recall and how to use cursors, paging, detail levels and truncation; it
    mentions other threads only in resource scope and search only when vector search is on.
    ``retrieval.instructions`` is appended; ``scope`` overrides ``retrieval.scope``.
    """
    if retrieval is None:
        return ""
    return recall_guidance(
        scope=scope or retrieval.scope,
        vector=retrieval.vector,
        extra=retrieval.instructions,
        code_mode=getattr(retrieval, "code_mode", None) is not None,
    )
