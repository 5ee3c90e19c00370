"""Replay files for ``langchain-om replay``: one JSON message object a line.

They are read as LangChain messages: timestamps, tool calls and the tool results that answer
them. Every line needs a ``role`` and a ``content`` (an assistant line that only calls tools
may leave ``content`` out). A message without an ``id`` gets one made of the file's content
and its line number, so the same file always gives the same ids: replaying it again finds its
messages already in the thread instead of adding them twice.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_om._storage.jsonl import json_objects
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


def _message(
    row: dict[str, Any], where: str, previous: list[BaseMessage], default_id: str
) -> BaseMessage:
    if "role" not in row:
        raise ReplayFormatError(f'{where}: no "role" (user, assistant or tool)')
    role = str(row["role"]).lower()
    if "content" not in row and not (role in ("assistant", "ai") and row.get("tool_calls")):
        raise ReplayFormatError(f'{where}: no "content" (every line needs role and content)')
    content = row.get("content", "")
    if not isinstance(content, str | list):
        raise ReplayFormatError(f"{where}: content must be a string or a list of content parts")
    meta = (
        {"langchain_om": {"ts": _timestamp(row["timestamp"], where)}} if "timestamp" in row else {}
    )
    ident = str(row.get("id") or default_id)
    if role in ("user", "human"):
        return HumanMessage(content, id=ident, response_metadata=meta)
    if role == "system":
        return SystemMessage(content, id=ident, response_metadata=meta)
    if role in ("assistant", "ai"):
        calls = [
            {
                "name": str(call["name"]),
                "args": dict(call.get("args") or {}),
                "id": str(call.get("id") or f"call-{ident}-{number}"),
                "type": "tool_call",
            }
            for number, call in enumerate(row.get("tool_calls") or [])
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
            call_id = f"call-{message.id}-{len(message.tool_calls)}"
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

    Messages without an ``id`` get ``replay-<file digest>-<line>``: the same file gives the same
    ids on every read.

    Raises:
        ReplayFormatError: the file cannot be read, or a line is not valid JSON or not a
            message (the message says where).
    """
    try:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    except OSError as exc:
        raise ReplayFormatError(f"cannot read {path}: {exc.strerror or exc}") from None
    messages: list[BaseMessage] = []
    for where, row in json_objects(path, ReplayFormatError):
        line = where.rpartition(":")[2]
        messages.append(_message(row, where, messages, f"replay-{digest}-{line}"))
    return messages
