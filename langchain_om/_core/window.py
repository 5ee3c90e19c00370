"""Where the message window may be cut without splitting a tool call from its results.

A tool call and its results leave the window together. A call without a result (a tool still
running, or one that will never answer) does not block observation: what precedes it can
always be observed. Once the window has grown to ``block_after``, the caller passes
``observe_pending=True`` and the call is observed as pending (the Observer sees
``[pending]``); its result, when it arrives, is observed later on its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage


def _call_ids(message: BaseMessage) -> set[str]:
    if isinstance(message, AIMessage):
        return {str(c["id"]) for c in message.tool_calls if c.get("id")}
    return set()


def unanswered_tool_calls(messages: Sequence[BaseMessage]) -> dict[str, int]:
    """Tool-call ids without a result in ``messages``, with the index of their AI message."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return {cid: i for i, m in enumerate(messages) for cid in _call_ids(m) if cid not in answered}


def safe_cut_points(messages: Sequence[BaseMessage], *, observe_pending: bool = False) -> list[int]:
    """Indexes ``i`` such that ``messages[:i]`` may leave while ``messages[i:]`` stays.

    A cut is safe when no tool call before it has its result after it (or vice versa), and
    the kept window does not start with a tool result. A call without any result blocks the
    cuts after it, unless ``observe_pending`` (then it leaves as a pending call). ``0`` and
    ``len(messages)`` are included when safe.
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
            if observe_pending:
                continue  # observed as pending; its result is observed when it arrives
            end = n  # nothing from the call onward may be cut away from it
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


def observation_cut(
    messages: Sequence[BaseMessage],
    *,
    keep_current_turn: bool = True,
    observe_pending: bool = False,
) -> int:
    """How many leading messages a synchronous observation takes.

    With ``keep_current_turn`` (a turn in progress): keep the current turn (from the last human
    message on) in the window; when that would observe nothing, take the latest safe cut before
    the end so a single huge turn is still observed. Without it (a manual observation, or a
    single message that crosses the threshold on its own): take everything that can be taken
    safely. ``observe_pending`` lets calls without results leave as pending (see
    :func:`safe_cut_points`). Returns 0 when nothing can be cut safely.
    """
    points = safe_cut_points(messages, observe_pending=observe_pending)
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


def split_batch(
    messages: Sequence[BaseMessage],
    tokens: Sequence[int],
    budget: int,
    *,
    observe_pending: bool = False,
) -> list[int]:
    """End indexes of consecutive parts of ``messages``, each within ``budget`` tokens if it can be.

    Parts end at safe cut points (a tool call stays with its results), so a batch larger than
    every Observer model's input can be observed over several calls. A part that cannot be
    made small enough (one huge message, or a call with its results) stands alone; its
    messages are then cut by :func:`~langchain_om._core.oversize.clip_middle`. The last end
    is always ``len(messages)``.

    Args:
        messages: the batch, oldest first.
        tokens: the token count of each message.
        budget: the largest part, in tokens.
        observe_pending: as in :func:`safe_cut_points`.

    Raises:
        ValueError: ``tokens`` and ``messages`` differ in length, or ``budget`` < 1.
    """
    if len(tokens) != len(messages):
        raise ValueError(f"got {len(tokens)} token counts for {len(messages)} messages")
    if budget < 1:
        raise ValueError(f"budget must be at least 1 token, got {budget}")
    n = len(messages)
    if n == 0:
        return []
    points = [p for p in safe_cut_points(messages, observe_pending=observe_pending) if p > 0]
    if not points or points[-1] != n:
        points.append(n)
    prefix = [0]
    for t in tokens:
        prefix.append(prefix[-1] + max(0, t))
    ends: list[int] = []
    start = 0
    while start < n:
        fitting = [p for p in points if p > start and prefix[p] - prefix[start] <= budget]
        end = fitting[-1] if fitting else next(p for p in points if p > start)
        ends.append(end)
        start = end
    return ends
