"""A streamed model reply, put together while a :class:`~.loop_cut.StreamCut` watches it.

:class:`StreamReader` adds up the chunks of ``model.stream(...)`` (text and tool-call
arguments both reach the cut), and makes the final ``AIMessage``:

- a reply that ran to its end is the model's message as it would come from ``invoke``;
- a reply stopped by the cut (a loop, or its budget) or by the provider's own output limit
  (``finish_reason`` ``length``) holds only the text a salvage may use (``Cut.kept``), and
  its ``response_metadata[CUT_KEY]`` says why it stopped, how many tokens were generated and
  what was generated in full.

The cut's token estimate is kept under ``response_metadata[STREAM_KEY]`` so what a stopped
reply cost is known even when the provider never sent its usage.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, message_chunk_to_message
from langchain_core.messages.ai import UsageMetadata, add_ai_message_chunks

from langchain_om._core.loop_cut import Cut, StreamCut

__all__ = ["CUT_KEY", "STREAM_KEY", "StreamReader", "cut_of"]

CUT_KEY = "langchain_om_cut"
"""``response_metadata`` key of a stopped reply: ``{"reason", "tokens", "loop", "generated"}``."""

STREAM_KEY = "langchain_om_stream"
"""``response_metadata`` key of every streamed reply: ``{"output_tokens"}`` (estimated)."""

_LENGTH_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS", "max_output_tokens"})


def _delta(chunk: BaseMessage) -> str:
    text = chunk.text if isinstance(chunk.text, str) else str(chunk.text)
    if isinstance(chunk, AIMessageChunk):
        args = "".join(str(c.get("args") or "") for c in chunk.tool_call_chunks)
    elif isinstance(chunk, AIMessage):
        args = "".join(json.dumps(c["args"]) for c in chunk.tool_calls)
    else:
        args = ""
    return text + args


def _length_error(exc: Exception) -> bool:
    """A client error that only says the output limit was reached (the text so far is real)."""
    return "LengthFinishReason" in type(exc).__name__ or (
        getattr(exc, "completion", None) is not None and "length" in str(exc).lower()
    )


def _completion_reply(exc: Exception) -> AIMessageChunk | None:
    """The text (and usage) of the completion an output-limit error carries, if it has any."""
    completion = getattr(exc, "completion", None)
    choices = getattr(completion, "choices", None)
    if not choices:
        return None
    content = getattr(getattr(choices[0], "message", None), "content", None)
    if not isinstance(content, str) or not content:
        return None
    usage = getattr(completion, "usage", None)
    meta: UsageMetadata | None = None
    if usage is not None:
        inp = int(getattr(usage, "prompt_tokens", 0) or 0)
        out = int(getattr(usage, "completion_tokens", 0) or 0)
        meta = {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}
    return AIMessageChunk(
        content=content, usage_metadata=meta, response_metadata={"finish_reason": "length"}
    )


def cut_of(message: Any) -> dict[str, Any] | None:
    """The stop record of a reply (a message or a model result; ``None``: it ran to its end)."""
    message = getattr(message, "message", message)
    meta = getattr(message, "response_metadata", None)
    found = meta.get(CUT_KEY) if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else None


class StreamReader:
    """Collects a streamed reply for :class:`StreamCut` (see the module docstring)."""

    def __init__(self, cut: StreamCut) -> None:
        self.cut = cut
        self._chunks: list[AIMessageChunk] = []
        self._whole: AIMessage | None = None
        self._length = False

    def add(self, chunk: Any) -> bool:
        """Add one streamed chunk; ``True`` when the stream should be closed now."""
        if isinstance(chunk, AIMessageChunk):
            self._chunks.append(chunk)  # merged once at the end: adding each is quadratic
        elif isinstance(chunk, AIMessage):
            self._whole = chunk  # a runnable that answers in one piece
        elif isinstance(chunk, BaseMessage):
            self._whole = AIMessage(content=chunk.content)
        else:
            self._whole = AIMessage(content=str(chunk))
        delta = _delta(chunk) if isinstance(chunk, BaseMessage) else str(chunk)
        return self.cut.feed(delta)

    def ended_by(self, exc: Exception) -> None:
        """The stream raised ``exc``: an output-limit error after some text ends it; else raise.

        A client that raised before streaming anything (openai's ``LengthFinishReasonError``
        on a non-streamed call) carries the reply so far in ``exc.completion``: that text, and
        its usage, are the reply.
        """
        if _length_error(exc) and not self.cut.text:
            partial = _completion_reply(exc)
            if partial is not None:
                self.add(partial)
        if _length_error(exc) and self.cut.text:
            self._length = True
            return
        raise exc

    def message(self) -> AIMessage:
        """The reply as an ``AIMessage`` (see the module docstring)."""
        if self._whole is not None:
            message = self._whole
        elif self._chunks:
            total = add_ai_message_chunks(*self._chunks)
            converted = message_chunk_to_message(total)
            message = converted if isinstance(converted, AIMessage) else AIMessage("")
        else:
            message = AIMessage(content="")
        reason = message.response_metadata.get("finish_reason") or message.response_metadata.get(
            "stop_reason"
        )
        cut = self.cut.cut or self.cut.finish()
        if cut is None and (self._length or reason in _LENGTH_REASONS):
            cut = self.cut.stop_at_budget()
        meta: dict[str, Any] = {
            **message.response_metadata,
            STREAM_KEY: {"output_tokens": self.cut.tokens},
        }
        if cut is None:
            return message.model_copy(update={"response_metadata": meta})
        meta[CUT_KEY] = _record(cut, self.cut.text)
        update: dict[str, Any] = {"response_metadata": meta}
        if isinstance(message.content, str) and not message.tool_calls:
            update["content"] = cut.kept
        return message.model_copy(update=update)


def _record(cut: Cut, generated: str) -> dict[str, Any]:
    return {
        "reason": cut.reason,
        "tokens": cut.tokens,
        "loop": cut.loop.kind if cut.loop is not None else None,
        "kept_chars": len(cut.kept),
        "generated": generated,
    }
