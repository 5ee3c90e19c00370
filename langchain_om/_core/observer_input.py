"""How new messages are rendered for the Observer.

:func:`format_messages_for_observer` turns messages into the dated text lines the Observer
reads: one labelled line per user/assistant turn, reasoning, tool call and tool result (long
arguments and results cut to a token budget), OM's own memory messages skipped, and image/file
parts replaced by ``[Image #1: x.png]`` placeholders and forwarded as content blocks when the
attachment policy allows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_om._core.dates import format_date, format_time, message_time, to_zone
from langchain_om._core.markup import MEMORY_TAGS, neutralise
from langchain_om._core.oversize import clip_middle
from langchain_om._core.render import MEMORY_OPENINGS
from langchain_om._core.truncation import cut_to_tokens
from langchain_om._core.types import OM_META_KEY

__all__ = ["AttachmentPolicy", "FormattedHistory", "format_messages_for_observer"]

_PENDING = "[pending]"
_EMPTY_RESULT = "[empty result]"

_INTERNAL_KINDS = frozenset({"memory", "continuation"})
"""``langchain_om`` kinds of OM's own messages, which are never observed."""
_TEMPORAL_GAP_KIND = "temporal_gap"
_ATTACHMENT_LABELS = {
    "image": "Image",
    "file": "File",
    "text-plain": "File",
    "audio": "Audio",
    "video": "Video",
}
_EXTENSION_MIME = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "pdf": "application/pdf",
    "txt": "text/plain",
    "md": "text/markdown",
    "csv": "text/csv",
    "json": "application/json",
    "mp3": "audio/mpeg",
    "wav": "audio/wav",
    "mp4": "video/mp4",
}
_NAME_KEYS = ("filename", "name", "title")

AttachmentPolicy = bool | Literal["auto"] | Sequence[str]


@dataclass(frozen=True)
class FormattedHistory:
    """New messages rendered for the Observer."""

    text: str
    """Dated text lines the Observer reads."""
    attachments: list[dict[str, Any]]
    """Image/file content blocks to forward, in placeholder order."""
    message_ids: list[str]
    """Ids of the messages rendered (OM's own memory messages are skipped)."""
    attachment_labels: list[str] = field(default_factory=list)
    """The placeholder (``[Image #1: x.png]``) of each forwarded attachment."""


def _om_meta(message: BaseMessage) -> dict[str, Any]:
    meta = getattr(message, "response_metadata", None)
    om = meta.get(OM_META_KEY) if isinstance(meta, dict) else None
    return om if isinstance(om, dict) else {}


def _blocks(message: BaseMessage) -> list[dict[str, Any]]:
    """The message content as standard content blocks (tolerant of odd content)."""
    try:
        blocks: list[Any] = list(message.content_blocks)
    except Exception:  # a provider translator choked: read the raw content instead
        content = message.content
        raw = [content] if isinstance(content, str) else list(content)
        blocks = [{"type": "text", "text": b} if isinstance(b, str) else b for b in raw]
    return [dict(b) for b in blocks if isinstance(b, dict)]


def _json(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _clip(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """``text`` cut to ``max_tokens`` with a note saying how many tokens were dropped."""
    full = count(text)
    if full <= max_tokens:
        return text
    kept = cut_to_tokens(text, max(0, max_tokens), count).rstrip()
    return f"{kept} … [truncated {max(1, full - count(kept))} tokens]".lstrip()


def _is_denied(message: ToolMessage) -> bool:
    kwargs = message.additional_kwargs
    if kwargs.get("denied") is True or _om_meta(message).get("denied") is True:
        return True
    data = kwargs.get("lc_data")
    return (
        "hitl_interrupt_decision" in str(kwargs.get("lc_source", ""))
        and isinstance(data, dict)
        and data.get("decision") == "reject"
    )


def _mime(block: Mapping[str, Any], name: str | None) -> str:
    mime = block.get("mime_type")
    if isinstance(mime, str) and mime:
        return mime
    url = block.get("url")
    if isinstance(url, str) and url.startswith("data:") and ";" in url:
        return url[5 : url.index(";")]
    for candidate in (name, url):
        if isinstance(candidate, str) and "." in candidate:
            ext = candidate.rsplit(".", 1)[1].split("?", 1)[0].lower()
            if ext in _EXTENSION_MIME:
                return _EXTENSION_MIME[ext]
    kind = block.get("type")
    return "text/plain" if kind == "text-plain" else f"{kind}/"


def _attachment_name(block: Mapping[str, Any]) -> str | None:
    for holder in (block, block.get("extras"), block.get("metadata")):
        if isinstance(holder, Mapping):
            for key in _NAME_KEYS:
                value = holder.get(key)
                if isinstance(value, str) and value.strip():
                    return value.strip()
    url = block.get("url")
    if isinstance(url, str) and not url.startswith("data:"):
        last = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        if "." in last:
            return last
    return None


def _allowed(mime: str, policy: AttachmentPolicy) -> bool:
    if isinstance(policy, bool):
        return policy
    if policy == "auto":
        return True
    patterns = [policy] if isinstance(policy, str) else list(policy)
    for pattern in patterns:
        if pattern == "*" or pattern == mime:
            return True
        if pattern.endswith("/*") and mime.startswith(pattern[:-1]):
            return True
    return False


class _Writer:
    """Accumulates the Observer's view of a batch of messages."""

    def __init__(
        self,
        max_tokens: int,
        count: Callable[[str], int],
        policy: AttachmentPolicy,
        tags: Sequence[str] = MEMORY_TAGS,
        message_max_tokens: int | None = None,
    ) -> None:
        self.tags = tuple(tags)
        self.message_max_tokens = message_max_tokens
        self.max_tokens = max_tokens
        self.count = count
        self.policy = policy
        self.lines: list[str] = []
        self.day: date | None = None
        self.current: date | None = None
        self.shown: str | None = None
        self.number = 0
        self.attachments: list[dict[str, Any]] = []
        self.labels: list[str] = []

    def at(self, when: datetime) -> None:
        """Set the day of the next lines (a ``Date:`` header opens with the first of them)."""
        self.current = when.date()

    def _open_day(self) -> None:
        if self.current is not None and self.current != self.day:
            if self.lines:
                self.lines.append("")
            self.day = self.current
            self.lines.append(f"Date: {format_date(self.day)}")
            self.shown = None

    def stamp(self, when: datetime, *, always: bool = False) -> str:
        self._open_day()
        clock = format_time(when)
        if always or clock != self.shown:
            self.shown = clock
            return f" ({clock})"
        return ""

    def emit(self, head: str, body: str) -> None:
        self._open_day()
        body = neutralise(body, tags=self.tags, openings=MEMORY_OPENINGS)
        rows = [row.rstrip() for row in body.splitlines() if row.strip()]
        if not rows:
            self.lines.append(f"{head}:" if head else "")
            return
        first = f"{head}: {rows[0]}" if head else rows[0]
        self.lines.append(first)
        self.lines.extend(f"  {row}" for row in rows[1:])

    def fit(self, text: str) -> str:
        """A message body within ``message_max_tokens``: head and tail around a cut note."""
        if self.message_max_tokens is None:
            return text
        return clip_middle(text, self.message_max_tokens, self.count).text

    def attachment(self, block: dict[str, Any]) -> str:
        kind = str(block.get("type"))
        self.number += 1
        name = _attachment_name(block)
        mime = _mime(block, name)
        shown = (name or (mime if not mime.endswith("/") else kind)).replace("]", ")")
        placeholder = f"[{_ATTACHMENT_LABELS[kind]} #{self.number}: {' '.join(shown.split())}]"
        if _allowed(mime, self.policy):
            forwarded = dict(block)
            if str(forwarded.get("id", "")).startswith("lc_"):  # random id added by LangChain
                del forwarded["id"]
            self.attachments.append(forwarded)
            self.labels.append(placeholder)
        return placeholder

    def parts(self, message: BaseMessage) -> tuple[list[str], list[str]]:
        """(reasoning texts, body segments) of a user/assistant/system message."""
        reasoning: list[str] = []
        body: list[str] = []
        for block in _blocks(message):
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                body.append(block["text"])
            elif kind == "reasoning" and str(block.get("reasoning") or "").strip():
                reasoning.append(str(block["reasoning"]))
            elif kind in _ATTACHMENT_LABELS:
                body.append(self.attachment(block))
            elif kind == "server_tool_call":
                args = _clip(_json(block.get("args", {})), self.max_tokens, self.count)
                body.append(f"Server Tool Call {block.get('name', 'tool')}: {args}")
            elif kind == "server_tool_result":
                output = _clip(_json(block.get("output")), self.max_tokens, self.count)
                body.append(f"Server Tool Result: {output}")
            elif kind == "non_standard":
                body.append(_clip(_json(block.get("value")), self.max_tokens, self.count))
        return reasoning, body

    def result_body(self, message: BaseMessage) -> str:
        texts: list[str] = []
        placeholders: list[str] = []
        for block in _blocks(message):
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind in _ATTACHMENT_LABELS:
                placeholders.append(self.attachment(block))
            elif kind == "non_standard":
                texts.append(_json(block.get("value")))
        text = "\n".join(texts).strip()
        text = _clip(text, self.max_tokens, self.count) if text else ""
        body = "\n".join(part for part in (text, *placeholders) if part)
        return body or _EMPTY_RESULT

    def tool_result(self, message: ToolMessage | FunctionMessage, name: str, stamp: str) -> None:
        label = "Tool Result"
        if isinstance(message, ToolMessage):
            if _is_denied(message):
                label = "Tool Denied"
            elif message.status == "error":
                label = "Tool Error"
        self.emit(f"{label} {name}{stamp}", self.result_body(message))


def _role(message: BaseMessage) -> str:
    if isinstance(message, HumanMessage):
        source = message.additional_kwargs.get("lc_source")
        return f"Notice [{source}]" if isinstance(source, str) and source else "User"
    if isinstance(message, AIMessage):
        return "Assistant"
    if isinstance(message, SystemMessage):
        return "System"
    if isinstance(message, ChatMessage):
        role = message.role.lower()
        if role in ("user", "human"):
            return "User"
        if role in ("assistant", "ai"):
            return "Assistant"
        return message.role.capitalize() or "Message"
    return message.type.capitalize()


def format_messages_for_observer(
    messages: Sequence[BaseMessage],
    *,
    timezone: str,
    tool_result_max_tokens: int,
    count: Callable[[str], int],
    now: datetime,
    observe_attachments: AttachmentPolicy = True,
    extra_tags: Sequence[str] = (),
    message_max_tokens: int | None = None,
) -> FormattedHistory:
    """Render messages as the dated text lines the Observer reads.

    Args:
        messages: The messages to observe, oldest first.
        timezone: IANA zone for dates and times (the record's zone).
        tool_result_max_tokens: Tool arguments and results longer than this are cut.
        count: Token counter used for that cut.
        now: Time used for messages without an OM timestamp.
        observe_attachments: Which image/file parts to forward: ``True``/``"auto"`` all,
            ``False`` none, or a case-sensitive MIME allowlist (``"image/*"``, ``"*"``).
            Placeholders are shown either way.
        extra_tags: Section tags besides the memory's own (extractor slugs) to neutralise.
        message_max_tokens: Message text (and reasoning) longer than this is shown as its
            head and tail around a note of how many tokens were cut
            (:func:`~langchain_om._core.oversize.clip_middle`); ``None`` keeps it whole.

    Message text is neutralised (:func:`~langchain_om._core.markup.neutralise`): section
    tags, ``Date:`` and the memory preamble's wording at a line start get a backslash, so a
    message cannot forge or close the Observer's sections or headers.

    Returns:
        The text, the attachments to forward and the ids of the rendered messages.
    """
    writer = _Writer(
        tool_result_max_tokens,
        count,
        observe_attachments,
        (*MEMORY_TAGS, *extra_tags),
        message_max_tokens,
    )
    results: dict[str, list[int]] = {}
    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            results.setdefault(message.tool_call_id, []).append(index)
    paired: set[int] = set()
    ids: list[str] = []

    for index, message in enumerate(messages):
        kind = _om_meta(message).get("kind")
        if kind in _INTERNAL_KINDS or message.type == "remove":
            continue
        if message.id:
            ids.append(message.id)
        if index in paired:
            continue
        when = to_zone(message_time(message) or now, timezone)
        writer.at(when)
        if isinstance(message, ToolMessage | FunctionMessage):
            name = message.name or "tool"
            writer.tool_result(message, name, writer.stamp(when, always=True))
            continue
        reasoning, body = writer.parts(message)
        if kind == _TEMPORAL_GAP_KIND:
            writer.emit("", "\n".join(body))
            continue
        for thought in reasoning:
            writer.emit(f"Reasoning{writer.stamp(when)}", writer.fit(thought))
        if "".join(body).strip():
            writer.emit(f"{_role(message)}{writer.stamp(when)}", writer.fit("\n".join(body)))
        if not isinstance(message, AIMessage):
            continue
        for call in message.tool_calls:
            name = call.get("name") or "tool"
            args = _clip(_json(call.get("args", {})), tool_result_max_tokens, count)
            writer.emit(f"Tool Call {name}{writer.stamp(when, always=True)}", args)
            later = [i for i in results.get(call.get("id") or "", []) if i > index]
            later = [i for i in later if i not in paired]
            if later:
                paired.add(later[0])
                result = messages[later[0]]
                assert isinstance(result, ToolMessage)
                writer.tool_result(result, name, "")
            else:
                writer.emit(f"Tool Result {name}", _PENDING)
        for bad in message.invalid_tool_calls:
            args = _clip(str(bad.get("args") or ""), tool_result_max_tokens, count)
            stamp = writer.stamp(when, always=True)
            writer.emit(f"Tool Call {bad.get('name') or 'tool'}{stamp} [malformed]", args)

    return FormattedHistory(
        text="\n".join(writer.lines),
        attachments=writer.attachments,
        message_ids=ids,
        attachment_labels=writer.labels,
    )
