"""Where OM keeps things in a LangGraph ``BaseStore``, as operations (data), not calls.

Namespaces (all under ``"langchain_om"``):

* ``("langchain_om", "archive", <thread_id>)`` — observed raw messages, key = zero-padded
  sequence number (``"000000000042"``), so a page of recall is a batch of ``GetOp`` for known
  keys: O(page) on any store, whatever the archive size.
* ``("langchain_om", "threads", <resource_id or "_">)`` — thread registry (title, counts, times).
* ``("langchain_om", "state", <thread_id>)`` key ``"current"`` — record and message window for
  the front doors that have no graph state (standalone engine, chat-history adapter).
* ``("langchain_om", "buffer", <thread_id>)`` — observation chunks computed in the background,
  key = the id of the chunk's first message; persisted before they are announced.
* ``("langchain_om", "reflection", <thread_id>)`` key ``"current"`` — a background reflection.

Functions here build ``GetOp``/``PutOp`` lists; the engine's sync and async drivers execute them
with ``store.batch`` / ``store.abatch``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)
from langgraph.store.base import GetOp, Item, PutOp

from langchain_om._core.types import OM_META_KEY, OMRecord

ROOT = "langchain_om"
NO_RESOURCE = "_"
SEQ_WIDTH = 12


def archive_ns(thread_id: str) -> tuple[str, ...]:
    """Namespace of a thread's archived messages."""
    return (ROOT, "archive", thread_id)


def threads_ns(resource_id: str | None) -> tuple[str, ...]:
    """Namespace of a resource's thread registry."""
    return (ROOT, "threads", resource_id or NO_RESOURCE)


def state_ns(thread_id: str) -> tuple[str, ...]:
    """Namespace of a thread's standalone state (record and window)."""
    return (ROOT, "state", thread_id)


def buffer_ns(thread_id: str) -> tuple[str, ...]:
    """Namespace of a thread's buffered observation chunks (key: first message id)."""
    return (ROOT, "buffer", thread_id)


def reflection_ns(thread_id: str) -> tuple[str, ...]:
    """Namespace of a thread's buffered reflection (key ``"current"``)."""
    return (ROOT, "reflection", thread_id)


def seq_key(seq: int) -> str:
    """Archive key of sequence number ``seq`` (zero-padded, so keys sort)."""
    return str(seq).zfill(SEQ_WIDTH)


def dump_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """Messages as JSON-native dicts."""
    return [message_to_dict(m) for m in messages]


def load_messages(data: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """Messages from :func:`dump_messages` output."""
    return list(messages_from_dict(list(data)))


def message_text(message: BaseMessage) -> str:
    """Plain text of a message for previews and the search index."""
    parts: list[str] = []
    text = message.text if isinstance(message.text, str) else str(message.text)
    if text:
        parts.append(text)
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            parts.append(f"[tool call {call['name']}] {call.get('args')}")
    return "\n".join(parts)


def part_types(message: BaseMessage) -> list[str]:
    """Kinds of content parts in ``message`` (``text``, ``image``, ``tool_call``, …)."""
    if isinstance(message.content, str):
        kinds = ["text"] if message.content else []
    else:
        kinds = []
        for block in message.content:
            if isinstance(block, str):
                kinds.append("text")
            elif isinstance(block, dict):
                kinds.append(str(block.get("type", "unknown")))
    if isinstance(message, AIMessage) and message.tool_calls:
        kinds.append("tool_call")
    if isinstance(message, ToolMessage):
        kinds.append("tool_result")
    return kinds


def tool_names(message: BaseMessage) -> list[str]:
    """Names of the tools a message calls or answers."""
    if isinstance(message, AIMessage):
        return [c["name"] for c in message.tool_calls]
    if isinstance(message, ToolMessage) and message.name:
        return [message.name]
    return []


def archive_ops(
    messages: Sequence[BaseMessage],
    *,
    thread_id: str,
    resource_id: str | None,
    first_seq: int,
) -> list[PutOp]:
    """Put ops that archive ``messages`` at sequence numbers ``first_seq, first_seq+1, …``."""
    ops: list[PutOp] = []
    for offset, message in enumerate(messages):
        seq = first_seq + offset
        meta = message.response_metadata.get(OM_META_KEY)
        ts = meta.get("ts") if isinstance(meta, dict) else None
        value = {
            "seq": seq,
            "id": message.id,
            "thread_id": thread_id,
            "resource_id": resource_id,
            "role": message.type,
            "ts": ts,
            "text": message_text(message),
            "part_types": part_types(message),
            "tool_names": tool_names(message),
            "message": message_to_dict(message),
        }
        ops.append(PutOp(archive_ns(thread_id), seq_key(seq), value, index=False))
    return ops


def thread_registry_op(
    record: OMRecord, *, created_at: str | None = None, window_size: int = 0
) -> PutOp:
    """Put op recording the thread in its resource's registry."""
    value = {
        "thread_id": record["thread_id"],
        "resource_id": record["resource_id"],
        "title": record.get("title"),
        "created_at": created_at or record["created_at"],
        "updated_at": record["updated_at"],
        "archived_messages": record["observed_message_count"],
        "window_messages": window_size,
        "generation": record["generation"],
    }
    return PutOp(threads_ns(record["resource_id"]), record["thread_id"], value, index=False)


def state_get_op(thread_id: str) -> GetOp:
    """Get op for a thread's standalone state."""
    return GetOp(state_ns(thread_id), "current")


def state_put_op(thread_id: str, record: OMRecord, window: Sequence[BaseMessage]) -> PutOp:
    """Put op saving a thread's record and window."""
    value = {"record": dict(record), "window": dump_messages(window)}
    return PutOp(state_ns(thread_id), "current", value, index=False)


def state_delete_op(thread_id: str) -> PutOp:
    """Delete op for a thread's standalone state."""
    return PutOp(state_ns(thread_id), "current", None)


def unpack_state(item: Item | None) -> tuple[dict[str, Any] | None, list[BaseMessage]]:
    """``(record, window)`` from a state item (``(None, [])`` when missing)."""
    if item is None:
        return None, []
    value = item.value
    return value.get("record"), load_messages(value.get("window", []))


def archived_message(item: Item) -> BaseMessage:
    """The message stored in an archive item."""
    return load_messages([item.value["message"]])[0]
