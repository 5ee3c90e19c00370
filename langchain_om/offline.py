"""An offline Observer and Reflector that copy, never invent: memory with no model at all.

:func:`extractive_observer` returns a chat model that answers the Observer's and the
Reflector's prompts by *extraction*: it keeps the sentences of the user's messages that carry
names, numbers, dates, identifiers, preferences or constraints, word for word, as dated
observation lines, and condenses a log by dropping repeats and low-priority lines. It needs no
network, no API key and no model file, and gives the same output for the same input.

What that means for quality: every line it writes is true to the conversation (it is copied),
but it understands nothing. It does not merge related facts, resolve "it" or "that", notice
that a plan changed, or summarise what the assistant did. A real Observer model writes shorter,
richer and better-prioritised memory. Use it for offline demos, for trying the package on a
machine without a model, and as an honest floor in evaluations; use a real model for agents.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_om import ObservationalMemory
    >>> from langchain_om.offline import extractive_observer
    >>> memory = ObservationalMemory(model=extractive_observer(),
    ...     observation={"message_tokens": 20, "buffer_tokens": False})
    >>> snap = memory.observe(thread_id="t", messages=[
    ...     HumanMessage("Hi! I'm Maya. My budget is 1,400 EUR a month.")])
    >>> "My budget is 1,400 EUR a month." in snap.observations
    True
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from langchain_om._engine.chat_model import AnsweringChatModel

__all__ = ["ExtractiveObserver", "OBSERVER_LABEL", "extractive_observer"]

OBSERVER_LABEL = (
    "offline extractive Observer (no LLM: copies the user's key sentences word for word; "
    "a real model writes shorter, richer memory)"
)
"""How front ends name this Observer to people, with what it means for quality."""

_NEW_MESSAGES = "## New Messages to Observe"
_TO_CONDENSE = "## Observations to Condense"
_ROLE_LINE = re.compile(
    r"^(User|Assistant|Tool Call|Tool Result|Tool Error|System)\b[^:]*?"
    r"(?:\((\d\d:\d\d)\))?:\s?(.*)$"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'll|I'd|my|me|mine|we|we're|our|us)\b", re.IGNORECASE)
_CONSTRAINT = re.compile(
    r"\b(need|needs|want|wants|prefer|like|love|hate|don't|can't|cannot|won't|must|never|"
    r"always|budget|allergic|favourite|favorite|changed my mind|instead|signed|booked|chose|"
    r"go with|sounds best|deadline|birthday|lives?|moving|move|work)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d")
_IDENTIFIER = re.compile(r"\b[A-Z]{2,}[-_]?\d+\b|\b[A-Z][a-z]+[A-Z]\w*\b")
_NAME = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]{2,}\b")
_FILLER = re.compile(r"^(hi|hey|hello|thanks|thank you|ok|okay|yes|no|perfect)[!,.]\s*", re.I)
_BULLET = re.compile(r"^\*\s*(🔴|🟡|🟢|✅)?\s*(\(\d\d:\d\d\))?\s*")
MAX_SENTENCES = 3
MAX_LINE_CHARS = 240


def _section(text: str, start: str) -> str:
    index = text.find(start)
    if index < 0:
        return ""
    body = text[index + len(start) :]
    end = body.find("\n## ")
    return body[:end] if end >= 0 else body


def _score(sentence: str) -> int:
    score = 0
    if _NUMBER.search(sentence):
        score += 2
    if _IDENTIFIER.search(sentence):
        score += 2
    score += min(2, len(_NAME.findall(sentence)))
    if _FIRST_PERSON.search(sentence):
        score += 1
    if _CONSTRAINT.search(sentence):
        score += 1
    return score


def key_sentences(text: str, *, limit: int = MAX_SENTENCES) -> list[tuple[str, int]]:
    """The sentences of ``text`` worth remembering, in order, with their scores.

    A sentence is kept when it carries at least two of: a number, an identifier, a name, a
    first-person statement, a preference or constraint word. Greetings are dropped.

    Args:
        text: One message's text.
        limit: At most this many sentences (the best-scored, kept in their order).
    """
    text = text.replace("\\", "")
    candidates: list[tuple[int, str, int]] = []
    for index, raw in enumerate(_SENTENCE.split(" ".join(text.split()))):
        sentence = _FILLER.sub("", raw).strip()
        if len(sentence) < 8:
            continue
        score = _score(sentence)
        if score >= 2:
            candidates.append((index, sentence[:MAX_LINE_CHARS], score))
    best = sorted(candidates, key=lambda c: (-c[2], c[0]))[:limit]
    return [(s, score) for _, s, score in sorted(best)]


def history_lines(history: str) -> Iterator[tuple[str, str, str]]:
    """The lines of an Observer prompt's history: ``(role, time, text)`` in order.

    ``Date:`` headers come as ``("Date", "", header)``; a message line as its role (``User``,
    ``Assistant``, ``Tool Call``, ...), its ``HH:MM`` time (the last one seen when the line has
    none) and its text. Continuation lines and anything else are skipped.

    Args:
        history: The "New Messages to Observe" section of an Observer prompt.
    """
    time = "00:00"
    for raw in history.splitlines():
        line = raw.strip()
        if line.startswith("Date:"):
            yield "Date", "", line
            continue
        match = _ROLE_LINE.match(line)
        if match:
            role, stamp, text = match.groups()
            time = stamp or time
            yield role, time, text


def observe_text(history: str) -> tuple[str, str | None]:
    """Observation lines (under the history's ``Date:`` headers) and the current task.

    Args:
        history: The "New Messages to Observe" section of an Observer prompt.
    """
    out: list[str] = []
    task: str | None = None
    for role, time, text in history_lines(history):
        if role == "Date":
            if not out or out[-1] != text:
                out.append(text)
        elif role == "User":
            task = text.strip()[:MAX_LINE_CHARS] or task
            for sentence, score in key_sentences(text):
                mark = "🔴" if score >= 3 else "🟡"
                out.append(f"* {mark} ({time}) User: {sentence}")
    while out and out[-1].startswith("Date:"):
        out.pop()
    return "\n".join(out), task


def condense_text(log: str) -> str:
    """A shorter log: repeated lines and 🟢 lines dropped, every other 🟡 line dropped.

    Date headers and every 🔴 line are kept word for word, so a condensed log never loses a
    high-priority fact; a log of only 🔴 lines cannot shrink, and the Reflector's answer is
    then no smaller than its input (which memory rejects, keeping the previous generation).
    """
    kept: list[str] = []
    seen: set[str] = set()
    medium = 0
    for raw in log.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("Date:"):
            if not kept or kept[-1] != line:
                kept.append(line)
            continue
        key = _BULLET.sub("", line).lower()
        if key in seen or "🟢" in line:
            continue
        seen.add(key)
        if "🔴" not in line:
            medium += 1
            if medium % 2 == 0:
                continue
        kept.append(line)
    while kept and kept[-1].startswith("Date:"):
        kept.pop()
    return "\n".join(kept)


class ExtractiveObserver(AnsweringChatModel):
    """A chat model that answers Observer and Reflector prompts by extraction (no LLM).

    See the module docstring for what it keeps and what that means for quality.
    """

    model_name: str = "offline-extractive"
    """Model name reported in traces and events."""

    @property
    def _llm_type(self) -> str:
        return "langchain-om-extractive"

    def _answer(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> BaseMessage:
        prompt = messages[-1].text if messages else ""
        return AIMessage(content=answer(prompt), response_metadata={"model_name": self.model_name})


def answer(prompt: str) -> str:
    """The extractive answer to one Observer or Reflector prompt (tags included)."""
    if _TO_CONDENSE in prompt:
        return f"<observations>\n{condense_text(_section(prompt, _TO_CONDENSE))}\n</observations>"
    lines, task = observe_text(_section(prompt, _NEW_MESSAGES))
    hints = f"<current-task>\nReply to the user's latest message: {task}\n</current-task>"
    return f"<observations>\n{lines}\n</observations>\n{hints if task else ''}".rstrip()


def extractive_observer(**kwargs: Any) -> ExtractiveObserver:
    """The offline extractive Observer/Reflector (see the module docstring).

    Args:
        **kwargs: Fields of :class:`ExtractiveObserver` (``model_name``).
    """
    return ExtractiveObserver(**kwargs)
