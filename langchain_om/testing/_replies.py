"""What the recording chat models exchange: recorded calls, replies, chunks, structured output.

Pure helpers, no I/O: turning a scripted reply into an ``AIMessage`` with deterministic usage,
splitting it into stream chunks, and parsing structured output back out of a reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast

from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call, tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk
from pydantic import BaseModel, TypeAdapter, ValidationError
from typing_extensions import is_typeddict

__all__ = [
    "RecordedCall",
    "Reply",
    "StructuredMethod",
    "StructuredOutputSpec",
    "approx_tokens",
    "parse_structured",
    "reply_chunks",
    "to_message",
]

Reply: TypeAlias = str | AIMessage | BaseModel | dict[str, Any]
"""What a script or function may answer: text, a full ``AIMessage`` (e.g. with tool calls), or
structured data (a pydantic instance or a dict). Structured data becomes a tool call named after
the ``with_structured_output`` schema (or, for a pydantic instance, after its class when a tool of
that name is bound), else JSON text."""

StructuredMethod: TypeAlias = Literal["function_calling", "json_schema", "json_mode"]


@dataclass(frozen=True)
class StructuredOutputSpec:
    """What ``with_structured_output`` asked for; found in ``RecordedCall.structured_output``."""

    schema: dict[str, Any] | type
    """The schema passed to ``with_structured_output`` (pydantic model, TypedDict or dict)."""
    method: StructuredMethod
    """``"function_calling"`` (a tool named ``name`` is bound), ``"json_schema"`` or
    ``"json_mode"`` (a ``response_format`` is bound)."""
    name: str
    """The schema's tool name (the class name, or the JSON schema's ``title``)."""


@dataclass(frozen=True)
class RecordedCall:
    """One call a scripted or function chat model received.

    ``FunctionChatModel`` also passes it to its function as ``info``.
    """

    index: int
    """0-based position of the call."""
    messages: list[BaseMessage]
    """Deep copies of the messages sent, as the model saw them."""
    kwargs: dict[str, Any]
    """Call options: ``stop``, ``tools`` (OpenAI tool dicts), ``tool_choice``,
    ``structured_output`` (a :class:`StructuredOutputSpec`), ``response_format``, model settings
    such as ``temperature``/``max_tokens`` (from the constructor or ``bind``), and anything else
    bound."""
    async_: bool
    """Whether the call came through the async API."""
    streamed: bool
    """Whether the reply was produced by the streaming path."""

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The bound tools, converted to OpenAI tool dicts."""
        return list(self.kwargs.get("tools") or [])

    @property
    def tool_names(self) -> list[str]:
        """Names of the bound tools, in binding order."""
        names = [t.get("function", {}).get("name") or t.get("name") for t in self.tools]
        return [str(n) for n in names if n]

    @property
    def tool_choice(self) -> Any:
        """The bound ``tool_choice``, or ``None``."""
        return self.kwargs.get("tool_choice")

    @property
    def structured_output(self) -> StructuredOutputSpec | None:
        """What ``with_structured_output`` requested for this call, or ``None``."""
        spec = self.kwargs.get("structured_output")
        return spec if isinstance(spec, StructuredOutputSpec) else None

    @property
    def text(self) -> str:
        """The text of all messages sent, one message per line."""
        return "\n".join(m.text for m in self.messages)


def approx_tokens(messages: Sequence[BaseMessage]) -> int:
    """Deterministic token estimate: ceil(chars / 4) over text and tool-call arguments."""
    chars = 0
    for message in messages:
        chars += len(message.text)
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                chars += len(call["name"]) + len(json.dumps(call["args"], sort_keys=True))
    return (chars + 3) // 4


def to_message(reply: object, call: RecordedCall) -> AIMessage:
    if isinstance(reply, str):
        return AIMessage(content=reply)
    if isinstance(reply, AIMessage):
        return reply.model_copy(deep=True)
    if isinstance(reply, BaseMessage):
        msg = f"a chat model reply must be an AIMessage, got {type(reply).__name__}"
        raise TypeError(msg)
    if isinstance(reply, BaseModel | dict):
        data = reply.model_dump(mode="json") if isinstance(reply, BaseModel) else reply
        spec = call.structured_output
        name = spec.name if spec is not None and spec.method == "function_calling" else None
        if (
            name is None
            and isinstance(reply, BaseModel)
            and type(reply).__name__ in call.tool_names
        ):
            name = type(reply).__name__  # e.g. create_agent(response_format=Schema)
        if name is not None:
            tc = tool_call(name=name, args=data, id=f"call_{call.index}")
            return AIMessage(content="", tool_calls=[tc])
        return AIMessage(content=json.dumps(data))
    msg = f"unsupported reply {reply!r}; expected str, AIMessage, a pydantic model or a dict"
    raise TypeError(msg)


def reply_chunks(message: AIMessage, *, whole: bool = False) -> Iterator[ChatGenerationChunk]:
    """Split a reply into word chunks (``whole``: one chunk of all its text).

    Tool calls, usage and metadata ride on the last chunk.
    """
    content = message.content
    pieces: list[str | list[str | dict[Any, Any]]]
    if whole:
        pieces = [content] if content else []
    elif isinstance(content, str):
        pieces = [p for p in re.split(r"(?<=\s)(?=\S)", content) if p]
    else:
        pieces = [content]
    for piece in pieces:
        yield ChatGenerationChunk(message=AIMessageChunk(content=piece, id=message.id))
    tool_chunks = [
        tool_call_chunk(name=tc["name"], args=json.dumps(tc["args"]), id=tc["id"], index=i)
        for i, tc in enumerate(message.tool_calls)
    ]
    last = AIMessageChunk(
        content="",
        id=message.id,
        tool_call_chunks=tool_chunks,
        usage_metadata=message.usage_metadata,
        response_metadata=message.response_metadata,
        additional_kwargs=message.additional_kwargs,
        chunk_position="last",
    )
    yield ChatGenerationChunk(message=last)


_FENCED = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def parse_structured(message: AIMessage, spec: StructuredOutputSpec) -> dict[str, Any] | BaseModel:
    """Read structured output from a tool call named after the schema, else from JSON text."""
    data: Any
    found = next((tc for tc in message.tool_calls if tc["name"] == spec.name), None)
    if found is not None:
        data = found["args"]
    else:
        text = message.text.strip()
        fenced = _FENCED.match(text)
        try:
            data = json.loads(fenced.group(1) if fenced else text)
        except json.JSONDecodeError as exc:
            msg = f"expected a tool call named {spec.name!r} or JSON text, got {text[:200]!r}"
            raise OutputParserException(msg, llm_output=message.text) from exc
    schema = spec.schema
    try:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return schema.model_validate(data)
        if is_typeddict(schema):
            data = TypeAdapter(cast("Any", schema)).validate_python(data)
    except ValidationError as exc:
        raise OutputParserException(str(exc), llm_output=message.text) from exc
    if not isinstance(data, dict):
        msg = f"structured output for {spec.name!r} must be a JSON object, got {data!r}"
        raise OutputParserException(msg, llm_output=message.text)
    return data
