"""Replay files for ``langchain-om replay``: one JSON message object a line.

They are read as LangChain messages: timestamps, tool calls and the tool results that answer
them.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_om._jsonl import json_objects
from langchain_om.errors import ObservationalMemoryError


class ReplayFormatError(ObservationalMemoryError, ValueError):
    """A line of a replay file is not a message this command understands."""


def _timestamp(value: Any, where: str) -> str:
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            moment = datetime.fromtimestamp(value, UTC)
        else:
            moment = datetime.fromisoformat(str(value))
    except (ValueError, OverflowError, OSError) as exc:
        raise ReplayFormatError(f"{where}: bad timestamp {value!r} ({exc})") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


def _message(row: dict[str, Any], where: str, previous: list[BaseMessage]) -> BaseMessage:
    role = str(row.get("role", "")).lower()
    content = row.get("content", "")
    if not isinstance(content, str | list):
        raise ReplayFormatError(f"{where}: content must be a string or a list of content parts")
    meta = (
        {"langchain_om": {"ts": _timestamp(row["timestamp"], where)}} if "timestamp" in row else {}
    )
    ident = str(row.get("id") or f"replay-{uuid.uuid4().hex[:12]}")
    if role in ("user", "human"):
        return HumanMessage(content, id=ident, response_metadata=meta)
    if role == "system":
        return SystemMessage(content, id=ident, response_metadata=meta)
    if role in ("assistant", "ai"):
        calls = [
            {
                "name": str(call["name"]),
                "args": dict(call.get("args") or {}),
                "id": str(call.get("id") or f"call-{uuid.uuid4().hex[:12]}"),
                "type": "tool_call",
            }
            for call in row.get("tool_calls") or []
        ]
        return AIMessage(content, id=ident, tool_calls=calls, response_metadata=meta)
    if role == "tool":
        name = str(row.get("name") or "tool")
        return ToolMessage(
            content,
            id=ident,
            name=name,
            tool_call_id=_tool_call_id(row, name, where, previous),
            response_metadata=meta,
        )
    raise ReplayFormatError(f"{where}: role must be user, assistant or tool, not {role!r}")


def _tool_call_id(row: dict[str, Any], name: str, where: str, previous: list[BaseMessage]) -> str:
    """The call a tool result answers: given, the oldest open call, or one added to the AI turn."""
    if row.get("tool_call_id"):
        return str(row["tool_call_id"])
    answered = {m.tool_call_id for m in previous if isinstance(m, ToolMessage)}
    for message in reversed(previous):
        if isinstance(message, AIMessage):
            open_calls = [c["id"] for c in message.tool_calls if c["id"] not in answered]
            if open_calls and open_calls[0]:
                return str(open_calls[0])
            call_id = f"call-{uuid.uuid4().hex[:12]}"
            message.tool_calls.append(
                {"name": name, "args": {}, "id": call_id, "type": "tool_call"}
            )
            return call_id
        if isinstance(message, HumanMessage):
            break
    raise ReplayFormatError(f"{where}: a tool message must follow an assistant message")


def load_conversation(path: str | Path) -> list[BaseMessage]:
    """Read a JSONL conversation: one ``{"role", "content", "timestamp"?}`` object a line.

    Assistant lines may carry ``tool_calls`` (``[{"name", "args", "id"}]``) and tool lines
    ``name`` and ``tool_call_id``; a tool line without an id answers the open call before it.

    Raises:
        ReplayFormatError: a line is not valid JSON or not a message (the message says where).
    """
    messages: list[BaseMessage] = []
    for where, row in json_objects(path, ReplayFormatError):
        messages.append(_message(row, where, messages))
    return messages
