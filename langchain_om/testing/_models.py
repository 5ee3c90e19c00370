"""Chat models for offline tests: replies come from a script or a function; every call is recorded.

Both models share :class:`_RecordingChatModel`, which records calls, simulates latency, adds
deterministic usage metadata, streams, binds tools and parses structured output. Subclasses
only say where the reply comes from (``_reply`` / ``_areply``).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any, Literal, Self, TypeAlias

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import LangSmithParams, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from langchain_om._engine.chat_model import AnsweringChatModel
from langchain_om.testing._errors import ScriptExhaustedError
from langchain_om.testing._replies import (
    RecordedCall,
    Reply,
    StructuredMethod,
    StructuredOutputSpec,
    approx_tokens,
    parse_structured,
    reply_chunks,
    to_message,
)

__all__ = ["FunctionChatModel", "ScriptItem", "ScriptedChatModel"]

ScriptItem: TypeAlias = (
    Reply
    | Callable[[list[BaseMessage]], "Reply | Awaitable[Reply]"]
    | BaseException
    | type[BaseException]
)
"""One entry of a ``ScriptedChatModel`` script: a reply, a callable computing one from the
messages, or an exception (instance or class) to raise on that call."""


class _RecordingChatModel(AnsweringChatModel):
    """Shared base: records calls, sleeps ``delay``, builds and streams the reply."""

    model_config = ConfigDict(arbitrary_types_allowed=True, populate_by_name=True)

    model_name: str = Field(default="scripted", alias="model")
    """Model name, reported as ``response_metadata["model_name"]`` and ``ls_model_name``."""
    provider: str = "scripted"
    """Provider name, reported as ``response_metadata["model_provider"]`` and ``ls_provider``."""
    temperature: float | None = None
    """Recorded in every call's ``kwargs`` when set (a ``bind`` value wins)."""
    max_tokens: int | None = None
    """Recorded in every call's ``kwargs`` when set (a ``bind`` value wins)."""
    delay: float = Field(default=0.0, ge=0.0)
    """Seconds to wait before replying (``time.sleep`` sync, ``asyncio.sleep`` async)."""
    stream_by: Literal["word", "reply"] = "word"
    """How a streamed reply arrives: one chunk per word, as providers stream (the default),
    or the whole text in one chunk, as from a provider that does not stream. Benchmarks that
    put memory beside an agent whose model answers in one piece use ``"reply"``, so they time
    memory rather than LangChain's per-chunk message objects."""

    _calls: list[RecordedCall] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    # --- what subclasses provide -------------------------------------------------------------

    def _reply(self, call: RecordedCall) -> Reply:
        raise NotImplementedError

    async def _areply(self, call: RecordedCall) -> Reply:
        return self._reply(call)

    # --- recording -----------------------------------------------------------------------------

    @property
    def calls(self) -> list[RecordedCall]:
        """A snapshot of every call received so far, in order."""
        with self._lock:
            return list(self._calls)

    @property
    def call_count(self) -> int:
        """How many calls were received."""
        with self._lock:
            return len(self._calls)

    @property
    def last_call(self) -> RecordedCall:
        """The most recent call; raises ``AssertionError`` if there was none."""
        with self._lock:
            if not self._calls:
                msg = f"{type(self).__name__} has not been called"
                raise AssertionError(msg)
            return self._calls[-1]

    @property
    def model_id(self) -> str:
        """``"provider/model_name"``, e.g. ``"scripted/scripted"``."""
        return f"{self.provider}/{self.model_name}"

    def reset(self) -> None:
        """Forget recorded calls; a script starts again from its first reply."""
        with self._lock:
            self._calls.clear()

    def _record(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        kwargs: dict[str, Any],
        *,
        async_: bool,
        streamed: bool,
    ) -> RecordedCall:
        settings = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        call_kwargs = {k: v for k, v in settings.items() if v is not None} | kwargs
        if stop is not None:
            call_kwargs["stop"] = stop
        snapshot = [m.model_copy(deep=True) for m in messages]
        with self._lock:
            call = RecordedCall(len(self._calls), snapshot, call_kwargs, async_, streamed)
            self._calls.append(call)
        return call

    def _finish(self, call: RecordedCall, reply: Reply) -> AIMessage:
        message = to_message(reply, call)
        if message.usage_metadata is None:
            n_in, n_out = approx_tokens(call.messages), approx_tokens([message])
            message.usage_metadata = UsageMetadata(
                input_tokens=n_in, output_tokens=n_out, total_tokens=n_in + n_out
            )
        message.response_metadata = {
            "model_name": self.model_name,
            "model_provider": self.provider,
            **message.response_metadata,
        }
        return message

    # --- BaseChatModel drivers (one line of I/O each) ------------------------------------------

    def _message(self, call: RecordedCall) -> AIMessage:
        if self.delay:
            time.sleep(self.delay)
        return self._finish(call, self._reply(call))

    async def _amessage(self, call: RecordedCall) -> AIMessage:
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._finish(call, await self._areply(call))

    def _answer(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> AIMessage:
        return self._message(self._record(messages, stop, kwargs, async_=False, streamed=False))

    async def _aanswer(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> AIMessage:
        call = self._record(messages, stop, kwargs, async_=True, streamed=False)
        return await self._amessage(call)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        call = self._record(messages, stop, kwargs, async_=False, streamed=True)
        yield from reply_chunks(self._message(call), whole=self.stream_by == "reply")

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        call = self._record(messages, stop, kwargs, async_=True, streamed=True)
        message = await self._amessage(call)
        for chunk in reply_chunks(message, whole=self.stream_by == "reply"):
            yield chunk

    # --- identity ------------------------------------------------------------------------------

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "provider": self.provider}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = self.provider
        params["ls_model_name"] = self.model_name
        return params

    # --- tools and structured output -----------------------------------------------------------

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools; each call then records them (as OpenAI tool dicts) in ``kwargs["tools"]``.

        Args:
            tools: tools, functions, pydantic models, TypedDicts or tool dicts.
            tool_choice: recorded as ``kwargs["tool_choice"]`` when given.
            **kwargs: more options to bind (``strict`` is also applied to the tool schemas).

        Returns:
            The model bound with ``tools`` (and ``tool_choice``).
        """
        formatted = [convert_to_openai_tool(t, strict=kwargs.get("strict")) for t in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        method: StructuredMethod = "function_calling",
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """Return a runnable that parses the reply into ``schema``.

        The reply is read from a tool call named after the schema, else from JSON text (code
        fences allowed). A scripted pydantic instance or dict is turned into such a tool call
        (``method="function_calling"``) or JSON text. Pydantic schemas give instances, TypedDict
        schemas give validated dicts, JSON-schema dicts give the dict unchanged.

        Args:
            schema: a pydantic model class, a TypedDict class, or a JSON-schema/OpenAI tool dict.
            include_raw: return ``{"raw", "parsed", "parsing_error"}`` instead of raising.
            method: ``"function_calling"``, ``"json_schema"`` or ``"json_mode"``; recorded.
            strict: applied to the tool schema.
            **kwargs: not supported; raises ``ValueError``.

        Returns:
            A runnable producing the parsed output.

        Raises:
            ValueError: on unsupported arguments or method.
        """
        if kwargs:
            msg = f"Received unsupported arguments {kwargs}"
            raise ValueError(msg)
        if method not in ("function_calling", "json_schema", "json_mode"):
            msg = f"unsupported method {method!r}"
            raise ValueError(msg)
        tool = convert_to_openai_tool(schema, strict=strict)
        spec = StructuredOutputSpec(schema=schema, method=method, name=tool["function"]["name"])
        bound: dict[str, Any] = {
            "structured_output": spec,
            "ls_structured_output_format": {"kwargs": {"method": method}, "schema": schema},
        }
        if method == "function_calling":
            bound |= {"tools": [tool], "tool_choice": spec.name}
        elif method == "json_schema":
            json_schema = {"name": spec.name, "schema": tool["function"]["parameters"]}
            bound["response_format"] = {"type": "json_schema", "json_schema": json_schema}
        else:
            bound["response_format"] = {"type": "json_object"}

        def parse(message: AIMessage) -> dict[str, Any] | BaseModel:
            return parse_structured(message, spec)

        def parse_with_raw(message: AIMessage) -> dict[str, Any] | BaseModel:
            try:
                return {"raw": message, "parsed": parse(message), "parsing_error": None}
            except OutputParserException as exc:
                return {"raw": message, "parsed": None, "parsing_error": exc}

        return self.bind(**bound) | RunnableLambda(parse_with_raw if include_raw else parse)


def _resolve(item: Any, call: RecordedCall) -> Reply | Awaitable[Reply]:
    if isinstance(item, BaseException) or (
        isinstance(item, type) and issubclass(item, BaseException)
    ):
        raise item
    if isinstance(item, str | BaseModel | dict):
        return item
    result: Reply | Awaitable[Reply] = item(call.messages)
    return result


class ScriptedChatModel(_RecordingChatModel):
    """A chat model that answers from a script and records every call.

    Each call takes the next script item: a ``str`` or ``AIMessage`` reply (an ``AIMessage``
    may carry tool calls), a pydantic instance or dict (structured output), a callable
    ``(messages) -> reply`` (may be async for async calls), or an exception instance or class
    to raise on that call (see :func:`rate_limit_error`). When the script runs out the model
    raises :class:`ScriptExhaustedError`, unless ``repeat_last`` or ``cycle`` is set.

    Replies carry ``usage_metadata`` (ceil(chars / 4) for input and output) and
    ``response_metadata`` with ``model_name`` and ``model_provider``. Streaming yields the
    text split after whitespace; tool calls and usage arrive on the last chunk.

    Example:
        >>> from langchain_om.testing import ScriptedChatModel, rate_limit_error
        >>> model = ScriptedChatModel(script=["Hi!", rate_limit_error(), "Bye."], model="m1")
        >>> model.invoke("hello").content
        'Hi!'
        >>> model.invoke("again")
        Traceback (most recent call last):
        ...
        langchain_om.testing._errors.ScriptedRateLimitError: Rate limit exceeded (scripted 429).
        >>> [chunk.content for chunk in model.stream("once more")]
        ['Bye.', '']
        >>> model.call_count, model.last_call.text, model.last_call.streamed, model.remaining
        (3, 'once more', True, 0)
    """

    script: list[Any] = Field(default_factory=list)
    """The script; each item is a :data:`ScriptItem`."""
    repeat_last: bool = False
    """After the script runs out, keep answering with its last item."""
    cycle: bool = False
    """After the script runs out, start again from its first item."""

    @field_validator("script")
    @classmethod
    def _check_script(cls, script: list[Any]) -> list[Any]:
        for i, item in enumerate(script):
            is_exc_type = isinstance(item, type) and issubclass(item, BaseException)
            if not (is_exc_type or isinstance(item, str | BaseModel | dict | BaseException)):
                if isinstance(item, type) or not callable(item):
                    msg = f"script[{i}] is {item!r}; expected a ScriptItem (see its docs)"
                    raise ValueError(msg)
        return script

    @model_validator(mode="after")
    def _check_modes(self) -> Self:
        if self.repeat_last and self.cycle:
            msg = "pass at most one of repeat_last=True and cycle=True"
            raise ValueError(msg)
        if (self.repeat_last or self.cycle) and not self.script:
            msg = "repeat_last/cycle need a non-empty script"
            raise ValueError(msg)
        return self

    @property
    def remaining(self) -> int:
        """Script items not used yet (0 once exhausted, also when repeating or cycling)."""
        return max(0, len(self.script) - self.call_count)

    def _item(self, call: RecordedCall) -> Any:
        n = len(self.script)
        if call.index < n:
            return self.script[call.index]
        if self.cycle:
            return self.script[call.index % n]
        if self.repeat_last:
            return self.script[-1]
        raise ScriptExhaustedError(scripted=n, call_index=call.index, messages=call.messages)

    def _reply(self, call: RecordedCall) -> Reply:
        result = _resolve(self._item(call), call)
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            msg = f"script[{call.index}] is async; call the model with ainvoke/astream"
            raise TypeError(msg)
        return result

    async def _areply(self, call: RecordedCall) -> Reply:
        result = _resolve(self._item(call), call)
        return await result if inspect.isawaitable(result) else result


class FunctionChatModel(_RecordingChatModel):
    """A chat model whose reply is computed by a function; every call is recorded.

    ``function(messages, info)`` gets the messages and the :class:`RecordedCall` of this call
    (``info.index``, ``info.tools``, ``info.tool_names``, ``info.structured_output``,
    ``info.kwargs``) and returns a :data:`Reply`. ``async_function`` is used for async calls
    when given; with only ``async_function``, sync calls raise ``TypeError``.

    Example:
        >>> from langchain_om.testing import FunctionChatModel
        >>> def reply(messages, info):
        ...     return f"#{info.index} {messages[-1].text.upper()}"
        >>> model = FunctionChatModel(function=reply)
        >>> model.invoke("hi").content
        '#0 HI'
        >>> model.bind_tools([]).invoke("ok", stop=["END"]).content, model.last_call.kwargs["stop"]
        ('#1 OK', ['END'])
    """

    function: Callable[[list[BaseMessage], RecordedCall], Reply] | None = None
    """Computes the reply for sync calls (and async calls without ``async_function``)."""
    async_function: Callable[[list[BaseMessage], RecordedCall], Awaitable[Reply]] | None = None
    """Computes the reply for async calls."""

    @model_validator(mode="after")
    def _check_functions(self) -> Self:
        if self.function is None and self.async_function is None:
            msg = "pass function= and/or async_function="
            raise ValueError(msg)
        return self

    @property
    def _llm_type(self) -> str:
        return "function-chat-model"

    def _reply(self, call: RecordedCall) -> Reply:
        if self.function is None:
            msg = "this FunctionChatModel has only async_function; use ainvoke/astream"
            raise TypeError(msg)
        return self.function(call.messages, call)

    async def _areply(self, call: RecordedCall) -> Reply:
        if self.async_function is not None:
            return await self.async_function(call.messages, call)
        return self._reply(call)
