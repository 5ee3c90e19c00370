"""Pure parts of the transform hooks: checking what a hook returned, the archive's view.

The hooks themselves run as effects (see :mod:`langchain_om._plans.transforms`); this module
only decides what their results mean:

* ``before_observation`` must return a sequence of messages (possibly empty);
* ``after_observation`` / ``after_reflection`` return a string (the new text), ``None`` (keep
  the text) or ``False`` (veto);
* ``before_reflection`` returns a string or ``None``.

A result of any other type is a hook failure (``reason="hook_failed"``), so a typo never turns
into silently dropped memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_om.errors import HookError

__all__ = [
    "VETO",
    "WITHHELD_TEXT",
    "MEMORY_TOOL",
    "archive_view",
    "check_messages",
    "check_text",
    "without_memory_tool",
]

MEMORY_TOOL = "memory"
"""Name of the agent's own memory tool, whose calls and results the Observer never sees."""

WITHHELD_TEXT = "[withheld by before_observation]"
"""Content archived in place of a message ``before_observation`` dropped."""

VETO: Literal[False] = False
"""What an ``after_*`` hook returns to veto the new text."""


def check_messages(hook: str, result: Any) -> list[BaseMessage]:
    """``result`` of ``before_observation`` as a list of messages.

    Raises:
        HookError: ``result`` is not a sequence of ``BaseMessage``.
    """
    if isinstance(result, BaseMessage) or isinstance(result, str | bytes):
        result = None
    if isinstance(result, Sequence) and all(isinstance(m, BaseMessage) for m in result):
        return list(result)
    raise HookError(
        f"hooks.{hook} must return a list of messages (empty to skip the batch), got "
        f"{type(result).__name__}.",
        hook=hook,
        reason="hook_failed",
    )


def check_text(hook: str, result: Any, current: str, *, veto: bool) -> str | Literal[False]:
    """``result`` of a text hook: the new text, ``current`` for ``None``, or ``False``.

    Raises:
        HookError: ``result`` is neither a string nor ``None`` (nor ``False`` when ``veto``).
    """
    if result is None:
        return current
    if isinstance(result, str):
        return result
    if veto and result is False:
        return VETO
    allowed = "a string, None or False" if veto else "a string or None"
    raise HookError(
        f"hooks.{hook} must return {allowed}, got {type(result).__name__}.",
        hook=hook,
        reason="hook_failed",
    )


def archive_view(
    batch: Sequence[BaseMessage], transformed: Sequence[BaseMessage]
) -> list[BaseMessage]:
    """What the archive keeps of ``batch`` when it keeps the transformed messages.

    One message per original, in order (archive positions stay aligned with the cursor): the
    transformed message with the same id, else a copy of the original whose content is
    :data:`WITHHELD_TEXT` (no tool calls, no attachments).
    """
    by_id = {m.id: m for m in transformed if m.id}
    out: list[BaseMessage] = []
    for message in batch:
        replacement = by_id.get(message.id) if message.id else None
        if replacement is not None:
            out.append(replacement)
            continue
        update: dict[str, Any] = {"content": WITHHELD_TEXT}
        if hasattr(message, "tool_calls"):
            update["tool_calls"] = []
        out.append(message.model_copy(update=update))
    return out


def without_memory_tool(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``messages`` without the memory tool's calls and results (memory's own edits).

    An AI message keeps its text and its other tool calls; one left with neither is dropped.
    """
    ids: set[str] = set()
    out: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, AIMessage) and message.tool_calls:
            mine = [c for c in message.tool_calls if c["name"] == MEMORY_TOOL]
            if mine:
                ids.update(str(c.get("id")) for c in mine)
                rest = [c for c in message.tool_calls if c["name"] != MEMORY_TOOL]
                if not rest and not message.text.strip():
                    continue
                message = message.model_copy(update={"tool_calls": rest})
        elif isinstance(message, ToolMessage) and (
            message.tool_call_id in ids or message.name == MEMORY_TOOL
        ):
            continue
        out.append(message)
    return out
