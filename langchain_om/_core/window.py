"""Where the message window may be cut without splitting a tool call from its results."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage


def _call_ids(message: BaseMessage) -> set[str]:
    if isinstance(message, AIMessage):
        return {str(c["id"]) for c in message.tool_calls if c.get("id")}
    return set()


def safe_cut_points(messages: Sequence[BaseMessage]) -> list[int]:
    """Indexes ``i`` such that ``messages[:i]`` may leave while ``messages[i:]`` stays.

    A cut is safe when no tool call before it has its result after it (or vice versa), and
    the kept window does not start with a tool result. ``0`` and ``len(messages)`` are
    included when safe.
    """
    n = len(messages)
    # For each tool-call id: the index of the call and of its last result.
    call_at: dict[str, int] = {}
    last_result: dict[str, int] = {}
    for i, m in enumerate(messages):
        for cid in _call_ids(m):
            call_at[cid] = i
        if isinstance(m, ToolMessage) and m.tool_call_id:
            last_result[m.tool_call_id] = i
    # A span [call, last_result] must not contain a cut strictly inside it.
    blocked = [False] * (n + 1)
    for cid, start in call_at.items():
        end = last_result.get(cid)
        if end is None:
            # pending call: nothing from the call onward may be cut away from it
            end = n
        for j in range(start + 1, min(end, n) + 1):
            blocked[j] = True
    # A result whose call is not in the window: never start the window with it.
    points = []
    for i in range(n + 1):
        if blocked[i]:
            continue
        if i < n and isinstance(messages[i], ToolMessage):
            continue
        points.append(i)
    return points


def pending_tool_call(messages: Sequence[BaseMessage]) -> bool:
    """True when the newest AI message has tool calls without results yet."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    for m in reversed(messages):
        if isinstance(m, AIMessage):
            return any(c.get("id") not in answered for c in m.tool_calls)
    return False


def observation_cut(messages: Sequence[BaseMessage], *, keep_current_turn: bool = True) -> int:
    """How many leading messages a synchronous observation takes.

    With ``keep_current_turn`` (a turn in progress): keep the current turn (from the last human
    message on) in the window; when that would observe nothing, take the latest safe cut before
    the end so a single huge turn is still observed. Without it (a manual observation): take
    everything that can be taken safely. Returns 0 when nothing can be cut safely.
    """
    points = safe_cut_points(messages)
    if not messages or not points:
        return 0
    if not keep_current_turn:
        return points[-1]
    if keep_current_turn:
        last_human = max(
            (i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=None
        )
        if last_human is not None:
            before = [p for p in points if 0 < p <= last_human]
            if before:
                return before[-1]
    inner = [p for p in points if 0 < p < len(messages)]
    if inner:
        return inner[-1]
    return 0
