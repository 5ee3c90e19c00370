"""Models of an evaluation run: metering, the replay model, and the offline scripted models.

- :class:`MeteredChatModel` wraps any chat model and counts its calls, tokens and seconds
  (memory's own cost per system).
- :class:`ReplayModel` is the agent's model during ingestion: it answers each agent turn with
  the conversation's recorded reply, so the conversation enters memory through a real front
  door.
- :func:`scripted_answerer`, :func:`scripted_summarizer` and :func:`scripted_judge` are the
  deterministic stand-ins ``--scripted`` uses (with :func:`langchain_om.testing.memory_model`
  as Observer and Reflector), so a whole run needs no network.
"""

from __future__ import annotations

import contextlib
import html
import os
import re
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel, LangSmithParams, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, message_chunk_to_message
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.runnables import Runnable
from pydantic import ConfigDict, PrivateAttr

from langchain_om._core.tokens import TokenCounter
from langchain_om._core.truncation import cut_to_tokens
from langchain_om._engine.call_modes import rebind_structured
from langchain_om._engine.chat_model import AnsweringChatModel
from langchain_om.eval.scoring import _stem, normalize_answer, token_f1
from langchain_om.testing import FunctionChatModel, RecordedCall

__all__ = [
    "Meter",
    "MeteredChatModel",
    "ReplayModel",
    "SLOW_ENV",
    "scripted_answerer",
    "scripted_judge",
    "scripted_summarizer",
]

SLOW_ENV = "LANGCHAIN_OM_EVAL_SLOW_MS"
"""Milliseconds the scripted answerer waits per answer (to test interrupted runs)."""


def _as_chunk(chunk: BaseMessage) -> AIMessageChunk:
    """A streamed piece as an :class:`AIMessageChunk` (other chunk types keep their content)."""
    return chunk if isinstance(chunk, AIMessageChunk) else AIMessageChunk(content=chunk.content)


@dataclass
class Meter:
    """Calls, tokens and seconds spent by one model."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


class MeteredChatModel(AnsweringChatModel):
    """A chat model that forwards to ``inner`` and meters every call.

    Token counts come from the reply's ``usage_metadata``; when a provider reports none, the
    offline counter estimates them.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: Any
    """The wrapped ``BaseChatModel``."""
    counter: Any = None
    """A :class:`TokenCounter` for replies without usage metadata."""
    output_cap: int | None = None
    """Cut each reply's text to this many tokens (the call is metered as the model made it)."""

    recorder: Any = None
    """Called with a JSON-native record of every call (prompt, reply, usage, seconds)."""

    _meter: Meter = PrivateAttr(default_factory=Meter)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def wrap(
        cls,
        model: BaseChatModel,
        counter: TokenCounter | None = None,
        *,
        output_cap: int | None = None,
    ) -> MeteredChatModel:
        """Meter ``model`` (its profile is kept, so memory sees the same model limits).

        Args:
            model: the model to meter.
            counter: counts tokens when a reply has no usage metadata, and for ``output_cap``.
            output_cap: cut every reply to this many tokens; a model with a ``max_tokens``
                field is also asked for no more (so it stops early instead of being cut).
        """
        inner = model
        if output_cap is not None and "max_tokens" in type(model).model_fields:
            limit = getattr(model, "max_tokens", None)
            if not isinstance(limit, int) or limit > output_cap:
                inner = model.model_copy(update={"max_tokens": output_cap})
        return cls(
            inner=inner,
            counter=counter,
            output_cap=output_cap,
            profile=getattr(model, "profile", None),
        )

    @property
    def meter(self) -> Meter:
        """What was spent so far (a copy)."""
        with self._lock:
            m = self._meter
            return Meter(m.calls, m.input_tokens, m.output_tokens, m.seconds)

    @property
    def model_name(self) -> str | None:
        """The wrapped model's name."""
        name = getattr(self.inner, "model_name", None) or getattr(self.inner, "model", None)
        return name if isinstance(name, str) else None

    @property
    def openai_api_base(self) -> str | None:
        """The wrapped model's base URL (memory tells local servers by it)."""
        value = getattr(self.inner, "openai_api_base", None)
        return value if isinstance(value, str) else None

    @property
    def _llm_type(self) -> str:
        return str(self.inner._llm_type)

    def with_structured_output(
        self, schema: dict[str, Any] | type, **kwargs: Any
    ) -> Runnable[LanguageModelInput, Any]:
        """The wrapped model's structured output, its calls metered here.

        Raises:
            NotImplementedError: the wrapped model's chain has an unusual shape.
        """
        chain = self.inner.with_structured_output(schema, **kwargs)
        metered = rebind_structured(chain, model=self)
        if metered is None:
            raise NotImplementedError(
                f"cannot meter the structured output of {type(self.inner).__name__}"
            )
        return metered

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params: LangSmithParams = self.inner._get_ls_params(stop=stop, **kwargs)
        return params

    def _note(
        self,
        messages: Sequence[BaseMessage],
        reply: BaseMessage,
        seconds: float,
        *,
        stopped: bool = False,
    ) -> None:
        usage = getattr(reply, "usage_metadata", None)
        if usage:
            inp, out = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
        else:
            counter: TokenCounter = self.counter or TokenCounter()
            inp, out = counter.count_messages(messages), counter.count_text(reply.text)
        with self._lock:
            self._meter.calls += 1
            self._meter.input_tokens += inp
            self._meter.output_tokens += out
            self._meter.seconds += seconds
        if self.recorder is not None:
            self.recorder(
                {
                    "prompt": [{"type": m.type, "text": m.text} for m in messages],
                    "reply": reply.text,
                    "stopped_early": stopped,
                    "input_tokens": inp,
                    "output_tokens": out,
                    "seconds": round(seconds, 3),
                }
            )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """Stream from ``inner`` (so a caller that stops reading stops the generation too)."""
        start = time.perf_counter()
        total: AIMessageChunk | None = None
        ended = False
        try:
            with contextlib.closing(self.inner.stream(messages, stop=stop, **kwargs)) as stream:
                for chunk in stream:
                    piece = _as_chunk(chunk)
                    total = piece if total is None else total + piece
                    yield ChatGenerationChunk(message=piece)
            ended = True
        except Exception as exc:
            self._note_failure(messages, exc, time.perf_counter() - start)
            raise
        finally:
            if total is not None or ended:
                reply = message_chunk_to_message(total) if total is not None else AIMessage("")
                self._note(messages, reply, time.perf_counter() - start, stopped=not ended)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """Async twin of :meth:`_stream`."""
        start = time.perf_counter()
        total: AIMessageChunk | None = None
        ended = False
        stream = self.inner.astream(messages, stop=stop, **kwargs)
        try:
            async for chunk in stream:
                piece = _as_chunk(chunk)
                total = piece if total is None else total + piece
                yield ChatGenerationChunk(message=piece)
            ended = True
        except Exception as exc:
            self._note_failure(messages, exc, time.perf_counter() - start)
            raise
        finally:
            await stream.aclose()
            if total is not None or ended:
                reply = message_chunk_to_message(total) if total is not None else AIMessage("")
                self._note(messages, reply, time.perf_counter() - start, stopped=not ended)

    def _note_failure(
        self, messages: Sequence[BaseMessage], exc: Exception, seconds: float
    ) -> None:
        """Meter a call that failed after the model answered (its usage is on the error).

        OpenAI-compatible clients raise on a structured reply cut by the output limit
        (``LengthFinishReasonError``) though the model spent the tokens; other failures count
        as a call with the input tokens only.
        """
        usage = getattr(getattr(exc, "completion", None), "usage", None)
        inp = int(getattr(usage, "prompt_tokens", 0) or 0) if usage is not None else 0
        out = int(getattr(usage, "completion_tokens", 0) or 0) if usage is not None else 0
        if usage is None:
            inp = (self.counter or TokenCounter()).count_messages(messages)
        with self._lock:
            self._meter.calls += 1
            self._meter.input_tokens += inp
            self._meter.output_tokens += out
            self._meter.seconds += seconds

    def _capped(self, reply: BaseMessage) -> BaseMessage:
        if self.output_cap is None or not isinstance(reply.content, str):
            return reply
        counter: TokenCounter = self.counter or TokenCounter()
        text = cut_to_tokens(reply.content, self.output_cap, counter.count_text)
        return reply if text == reply.content else reply.model_copy(update={"content": text})

    def _answer(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> BaseMessage:
        start = time.perf_counter()
        try:
            reply: BaseMessage = self.inner.invoke(messages, stop=stop, **kwargs)
        except Exception as exc:
            self._note_failure(messages, exc, time.perf_counter() - start)
            raise
        self._note(messages, reply, time.perf_counter() - start)
        return self._capped(reply)

    async def _aanswer(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> BaseMessage:
        start = time.perf_counter()
        try:
            reply: BaseMessage = await self.inner.ainvoke(messages, stop=stop, **kwargs)
        except Exception as exc:
            self._note_failure(messages, exc, time.perf_counter() - start)
            raise
        self._note(messages, reply, time.perf_counter() - start)
        return self._capped(reply)


class ReplayModel:
    """The agent's model during ingestion: answers each turn with the recorded reply.

    Push the reply before invoking the agent; :meth:`check_done` then verifies the agent
    called the model exactly once per pushed reply.
    """

    def __init__(self) -> None:
        self._queue: deque[AIMessage] = deque()
        self.model = FunctionChatModel(function=self._reply, model_name="replay")

    def _reply(self, messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
        if not self._queue:
            raise RuntimeError(
                "the agent called its model more often than the conversation has replies"
            )
        return self._queue.popleft()

    def push(self, message: AIMessage) -> None:
        """The reply to give on the next call."""
        self._queue.append(message)

    def check_done(self) -> None:
        """Raise when a pushed reply was not used (the agent skipped its model call)."""
        if self._queue:
            raise RuntimeError(f"the agent left {len(self._queue)} recorded replies unused")


# --- scripted stand-ins ----------------------------------------------------------------------

_STOP = frozenset(
    """a an the and or but of to in on at for with by from as is are was were be been being am
    do does did doing have has had having i me my we our you your he him his she her it its
    they them their what which who whom whose when where why how this that these those there
    here then than so if not no yes can could would should will shall might must about
    into over after before again any all some such only own same too very just also ever
    did tell know said say says asked ask""".split()
)
_WORD = re.compile(r"[\w']+")
_MARKUP = re.compile(
    r"^\s*(?:[-*+•]\s*)?(?:[🔴🟡🟢✅]\s*)?(?:\(\d{1,2}:\d{2}\)\s*)?(?:\[[^\]]*\]\s*)?"
    r"(?:(?:User|Assistant)(?: said)?:\s*)?"
)
_SPEAKER = re.compile(r"^[A-Z][\w'-]*:\s*")
_CONTEXT = re.compile(r"<context>\n?(.*?)\n?</context>", re.DOTALL)
_QUESTION = re.compile(r"Question:\s*(.+)")


def _words(text: str) -> list[str]:
    words = (w.lower().strip("'").removesuffix("'s") for w in _WORD.findall(text))
    return [w if w in _STOP else _stem(w) for w in words if w]


def _content_words(text: str) -> set[str]:
    return {w for w in _words(text) if w and w not in _STOP}


def _answer_from(context: str, question: str) -> str:
    asked = _content_words(question)
    best, best_score = "", 0
    for raw in context.splitlines():
        line = _MARKUP.sub("", raw).strip()
        if not line or line.startswith(("Date:", "<", "#")):
            continue
        score = len(asked & _content_words(line))
        if score >= best_score and score > 0:  # ties: the later line (newer facts win)
            best, best_score = line, score
    if best_score < 2:
        return "No information available."
    kept = []
    for word in _SPEAKER.sub("", best).split():
        key = _words(word)
        if key and key[0] not in asked and key[0] not in _STOP:
            kept.append(word.strip(".,:;!?\"'"))
    return " ".join(kept[:8]) or "No information available."


def scripted_answerer(*, slow_ms: int | None = None) -> FunctionChatModel:
    """An answer model that answers from its context by word overlap (deterministic).

    It finds the context line sharing the most content words with the question (ties: the
    later line) and answers with that line's other content words; with fewer than two shared
    words it answers ``No information available.``

    Args:
        slow_ms: wait this long per answer (default: ``$LANGCHAIN_OM_EVAL_SLOW_MS`` or 0).
    """
    delay = (slow_ms if slow_ms is not None else int(os.environ.get(SLOW_ENV, "0") or 0)) / 1000

    def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
        text = "\n".join(m.text for m in messages)
        context = _CONTEXT.search(text)
        question = _QUESTION.findall(text)
        return _answer_from(context.group(1) if context else "", question[-1] if question else "")

    return FunctionChatModel(function=reply, model_name="scripted-answerer", delay=delay)


def scripted_summarizer(*, words: int = 10) -> FunctionChatModel:
    """A summary model for ``SummarizationMiddleware``: keeps the first ``words`` of each message.

    Message markup (``<message type="human">``, escaped or not) is dropped; an earlier summary
    is kept line by line like the messages.
    """
    tags = re.compile(r"</?message[^>]*>|^Here is a summary of the conversation to date:$")

    def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
        text = messages[-1].text if messages else ""
        start = text.find("Messages to summarize:")
        body = text[start + len("Messages to summarize:") :] if start >= 0 else text
        body = body.rsplit("</messages>", 1)[0]
        for _ in range(8):  # each summary of a summary escaped the markup once more
            body = html.unescape(body)
        lines = []
        for raw in body.splitlines():
            line = tags.sub("", raw.strip()).strip()
            if line:
                lines.append(" ".join(line.split()[:words]))
        return "\n".join(lines)

    return FunctionChatModel(function=reply, model_name="scripted-summarizer")


def scripted_judge() -> FunctionChatModel:
    """A judge that says yes when the response holds the reference (or abstains rightly)."""
    fields = re.compile(r"^(Question|Correct answer|Rubric|Explanation|Response): (.*)$", re.M)

    def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
        text = messages[-1].text if messages else ""
        found = dict(fields.findall(text))
        response = found.get("Response", "")
        if "Explanation" in found:
            return "yes" if "no information" in response.lower() else "no"
        reference = found.get("Correct answer") or found.get("Rubric") or ""
        ok = normalize_answer(reference) in normalize_answer(response) or (
            token_f1(response, reference) >= 0.5
        )
        return "yes" if ok and reference else "no"

    return FunctionChatModel(function=reply, model_name="scripted-judge")
