"""Recorded memory-model calls, replayed through the stream cut, the parser and the judge.

``langchain-om eval --record-calls`` writes every call of the memory model (its prompt and
the text the model generated) to ``memory_calls.jsonl``. This module reads such a file (or a
fixture of raw replies) and replays each Observer reply exactly as memory would take it:

1. streamed through :class:`~langchain_om._core.loop_cut.StreamCut` (its source is the
   rendered messages of the prompt), so a looping reply stops where memory would stop it;
2. parsed (:func:`~langchain_om._core.observer.parse_observer_output`);
3. judged against the messages of the prompt (:func:`~langchain_om._core.acceptance.
   judge_observation`, with salvage when the reply was cut).

:func:`check_lines` then checks each accepted line against the messages with a rule of its
own, simpler than memory's (whole words, no stemming): every capitalised name and number of
the line occurs in the batch, the line has two content words at least, and one message (or up
to three adjacent ones: small models glue messages together) holds at least half of its words. It is
the independent check the README's small-model table reports. It checks against the batch and
the previous observations the prompt showed (a line copied from those is true, though not new;
memory drops the copies the log holds).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import ValidationError

from langchain_om._core.acceptance import ObservationVerdict, instruction_text, judge_observation
from langchain_om._core.grounding import Sources, line_content
from langchain_om._core.loop_cut import Cut, cut_text
from langchain_om._core.observer import parse_observer_output
from langchain_om._core.structured import (
    StructuredObserverOutput,
    lenient_structured,
    reply_data,
    structured_to_text,
)
from langchain_om._core.tokens import TokenCounter

__all__ = [
    "LineCheck",
    "MemoryCall",
    "Replayed",
    "batch_messages",
    "check_lines",
    "load_calls",
    "previous_observations",
    "replay",
]

_LABEL = re.compile(
    r"^(?:User|Assistant|System|Reasoning|Notice|Tool (?:Call|Result|Error|Denied))\b"
    r"(?:\s*\(\d{1,2}:\d{2}\))?[^:(]*:\s?"
)
_WORD = re.compile(r"[^\W_]{3,}")
_NAME = re.compile(r"\b[A-Z][^\W\d_]{2,}")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
_COMMON = frozenset(
    "the and for that this with was were are has have had not but from they their them then "
    "than its into about also said says user assistant date who what when where which while "
    "she her his him you your our out was".split()
)


@dataclass(frozen=True)
class MemoryCall:
    """One recorded call of the memory model."""

    system: str
    human: str
    reply: str
    """The text the model generated (all of it, or up to where memory stopped it)."""
    role: str
    """``observer`` or ``reflector`` (from the prompt)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Anything else the record holds (tokens, seconds, a fixture's expectations)."""


def load_calls(path: str | Path) -> list[MemoryCall]:
    """The calls of a ``memory_calls.jsonl`` file (or a fixture file of the same lines)."""
    calls: list[MemoryCall] = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        prompt = row["prompt"]
        system = next((p["text"] for p in prompt if p["type"] == "system"), "")
        human = next((p["text"] for p in reversed(prompt) if p["type"] == "human"), "")
        role = "reflector" if "## Observations to Condense" in human else "observer"
        meta = {k: v for k, v in row.items() if k not in ("prompt", "reply")}
        calls.append(MemoryCall(system, human, str(row["reply"]), role, meta))
    return calls


def _section(human: str, heading: str = "## New Messages to Observe") -> str:
    start = human.find(heading)
    if start < 0:
        return ""
    body = human[start + len(heading) :]
    ends = [i for i in (body.find("\n---"), body.find("\n## ")) if i >= 0]
    return body[: min(ends)] if ends else body


def previous_observations(human: str) -> str:
    """The ``## Previous Observations`` an Observer prompt showed (the log, as shown)."""
    text = _section(human, "## Previous Observations")
    end = text.find("These are already recorded.")
    return (text[:end] if end >= 0 else text).strip()


def _as_text(reply: str) -> str:
    """A structured (JSON) reply rendered to the tagged text memory parses; text unchanged."""
    if not reply.lstrip().startswith(("{", "[")):
        return reply
    data = reply_data(None, reply)
    if data is None:
        return reply
    try:
        answer, _ = lenient_structured(data, StructuredObserverOutput)
    except ValidationError:
        return reply
    return structured_to_text(answer)


def batch_messages(human: str) -> list[str]:
    """The messages of an Observer prompt's batch, as the text each message shows.

    A labelled line (``User (14:30): …``, ``Assistant: …``, ``Tool Result …``) starts a
    message; indented lines continue it; ``Date:`` headers and blank lines are skipped.
    """
    messages: list[str] = []
    for line in _section(human).splitlines():
        if not line.strip() or line.startswith("Date:"):
            continue
        if _LABEL.match(line):
            messages.append(_LABEL.sub("", line, count=1))
        elif messages and line[:1] in (" ", "\t"):
            messages[-1] += "\n" + line.strip()
        elif line.strip():
            messages.append(line.strip())
    return messages


@dataclass(frozen=True)
class Replayed:
    """An Observer reply as memory takes it."""

    call: MemoryCall
    previous: str
    """The previous observations its prompt showed."""
    cut: Cut | None
    """Where the stream cut stopped it (``None``: it ran to its end)."""
    generated_tokens: int
    """Tokens the model writes before memory stops it (all of the reply when not stopped)."""
    verdict: ObservationVerdict
    sources: Sources

    @property
    def evidence(self) -> list[str]:
        """What the prompt showed that a line may be copied from: its messages and log lines."""
        return [*self.sources.texts, *self.previous.splitlines()]

    @property
    def lines(self) -> list[str]:
        """The observation lines memory commits (top-level and sub-items)."""
        if not self.verdict.accepted:
            return []
        return [
            line
            for line in self.verdict.observations.splitlines()
            if line.lstrip()[:1] in ("*", "-")
        ]


def replay(call: MemoryCall, *, counter: TokenCounter | None = None) -> Replayed:
    """Take ``call``'s reply as memory would (see the module docstring)."""
    count = (counter or TokenCounter()).count_text
    history = _section(call.human)
    generated, cut = cut_text(call.reply, source=history)
    text = _as_text(cut.kept if cut is not None else generated)
    parsed = parse_observer_output(text, source=history)
    sources = Sources(batch_messages(call.human))
    prompt = [SystemMessage(call.system), HumanMessage(call.human)]
    previous = previous_observations(call.human)
    verdict = judge_observation(
        parsed,
        input_tokens=count("\n".join(sources.texts)),
        observation_tokens=int(call.meta.get("observation_tokens", 40_000)),
        count=count,
        instructions=instruction_text(prompt),
        source=history,
        sources=sources,
        log=previous,
        cut=cut.reason if cut is not None else None,
    )
    spent = cut.tokens if cut is not None else count(call.reply)
    return Replayed(call, previous, cut, spent, verdict, sources)


@dataclass(frozen=True)
class LineCheck:
    """The independent check of one committed line (see :func:`check_lines`)."""

    line: str
    grounded: bool
    best: str
    """The batch message that shares the most words with the line."""
    share: float
    missing: tuple[str, ...]
    """Names and numbers of the line the batch does not hold."""


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)} - _COMMON


def check_lines(lines: Iterable[str], messages: Sequence[str]) -> list[LineCheck]:
    """Check committed lines against ``messages`` with whole words (see the module docstring).

    Pass the batch's messages and the previous observations the prompt showed: a model can
    only copy what its prompt holds, so a line found in neither was invented.
    """
    joined = "\n".join(messages)
    folded = joined.casefold()
    numbers = {n.replace(",", "") for n in _NUMBER.findall(joined)}
    out: list[LineCheck] = []
    for line in lines:
        content = line_content(line)
        words = _words(content)
        names = {n for n in _NAME.findall(content) if n.casefold() not in _COMMON}
        missing = [n for n in names if n.casefold() not in folded]
        missing += [
            n
            for n in (x.replace(",", "") for x in _NUMBER.findall(content))
            if n not in numbers and not (len(n) == 4 and n.startswith(("19", "20")))
        ]
        best, share = "", 0.0
        for start in range(len(messages)):  # a line may join up to three adjacent messages
            for width in (1, 2, 3):
                window = "\n".join(messages[start : start + width])
                here = len(words & _words(window)) / len(words) if words else 0.0
                if here > share + 1e-9:
                    best, share = window, here
        ok = share >= 0.5 and not missing and len(words) >= 2
        out.append(LineCheck(line, ok, best, share, tuple(missing)))
    return out
