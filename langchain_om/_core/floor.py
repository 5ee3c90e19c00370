"""The ``keep_last_messages`` floor: the N most recent messages never leave the window.

Whatever removes messages (a synchronous observation, an activation of buffered chunks, the
recovery after a context overflow) takes at most ``len(window) - N`` leading messages, and
only at a safe cut (no tool call separated from its result).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from langchain_om._core.window import safe_cut_points

__all__ = ["floor_chunks", "floor_cut"]


def floor_cut(messages: Sequence[BaseMessage], cut: int, keep_last: int) -> int:
    """``cut`` lowered so the last ``keep_last`` messages stay (a safe cut, or 0)."""
    if keep_last <= 0 or cut <= 0:
        return cut
    limit = len(messages) - keep_last
    if cut <= limit:
        return cut
    points = [p for p in safe_cut_points(messages) if 0 < p <= limit]
    return points[-1] if points else 0


def floor_chunks(chunks: Sequence[Mapping[str, Any]], window_len: int, keep_last: int) -> int:
    """How many leading ``chunks`` may activate with the last ``keep_last`` messages kept."""
    if keep_last <= 0:
        return len(chunks)
    limit, taken = window_len - keep_last, 0
    for count, chunk in enumerate(chunks):
        taken += len(chunk["message_ids"])
        if taken > limit:
            return count
    return len(chunks)
