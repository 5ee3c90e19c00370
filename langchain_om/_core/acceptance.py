"""Whether an Observer reply holds real observations, and the reminder for its one retry.

A cycle over a non-empty batch succeeds only when the reply yields at least one well-formed
observation line: a top-level list line (``* 🟡 (14:30) User booked …``) with at least two words
of content, that is not a copy of the prompt, not already in the log and, when the batch is
given, supported by its messages. :func:`judge_observation` checks, in order:

1. ``empty``: the reply is blank, or holds no observation line and nothing else but tags,
   ``Date:`` headers and whitespace (an empty ``<observations>`` block, headers only);
2. ``degenerate``: the reply is a repetition loop (:mod:`.degenerate`);
3. ``echo``: the reply reproduces the prompt's own instructions, template lines or section
   headings instead of observing (at least half of its lines, or every candidate line);
4. ``unparseable``: the reply has text but no well-formed observation line (a refusal, an HTML
   error page, JSON instead of the tags, prose);
5. lines the log already holds, and lines the batch does not support, are dropped
   (:mod:`.salvage`); when none is left the reply fails as ``echo`` (it only re-emitted the
   log) or ``ungrounded`` (its lines are not in the messages);
6. ``oversized``: the observations kept are larger than :func:`observation_limit` allows for
   the batch: more than :data:`INPUT_SHARE` times the batch, or more than
   :data:`OBSERVATION_CAP_FACTOR` times the memory's ``observation_tokens`` (never below
   :data:`OVERSIZE_FLOOR_TOKENS`);
7. ``uninformative``: the observations carry fewer grounded names, numbers and content words
   than the batch's size asks for (:func:`~.salvage.information_floor`): one generic line for a
   long batch is a lazy Observer, not a summary.

A reply stopped early (``cut``: it looped, or reached its output budget, see
:mod:`.loop_cut`) is a *salvage*: its lines are held to strict grounding and cover the
messages up to the last one they are drawn from (:attr:`ObservationVerdict.covered`); with
nothing to keep it fails as ``degenerate`` (a loop) or ``oversized`` (the budget).

``model-error`` (the call itself failed) is decided by the caller and listed here so every
reason code has one home. An accepted reply's observations come back without the lines that
echo the prompt, repeat the log or are not grounded.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_om._core.dates import parse_date_header
from langchain_om._core.degenerate import is_degenerate, loop_key
from langchain_om._core.grounding import Sources
from langchain_om._core.observer import BUILTIN_SECTIONS, ObserverOutput, split_sections
from langchain_om._core.observer_prompts import (
    COMPACT_OBSERVER_SYSTEM_PROMPT,
    OBSERVER_SYSTEM_PROMPT,
)
from langchain_om._core.salvage import information_floor, keep_lines
from langchain_om._core.structured import (
    STRUCTURED_OBSERVER_NOTE,
    STRUCTURED_REFLECTOR_NOTE,
    ExtractedValue,
    StructuredObservation,
    StructuredObserverOutput,
)

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "ECHO_SHARE",
    "INPUT_SHARE",
    "OBSERVATION_CAP_FACTOR",
    "OVERSIZE_FLOOR_TOKENS",
    "ObservationReason",
    "ObservationVerdict",
    "SENT_IN_PLACE",
    "format_reminder",
    "instruction_text",
    "judge_observation",
    "observation_limit",
    "with_format_reminder",
]

ObservationReason = Literal[
    "empty",
    "unparseable",
    "echo",
    "oversized",
    "degenerate",
    "ungrounded",
    "uninformative",
    "model-error",
]
"""Why an observation cycle failed."""

OVERSIZE_FLOOR_TOKENS = 256
"""Observations of a tiny batch may always be this large."""

OBSERVATION_CAP_FACTOR = 2.0
"""One reply may hold at most this many times ``observation_tokens``."""

INPUT_SHARE = 1.5
"""Observations may hold at most this many times the batch's own tokens (terse messages get
observation lines somewhat longer than themselves; a runaway reply is far larger)."""

ECHO_SHARE = 0.5
"""A reply whose lines echo the prompt at least this often is an echo."""

_SHINGLE = 4
_MIN_SHINGLED_WORDS = 6
_ECHO_OVERLAP = 0.6
_TOP_LEVEL_ITEM = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+\S")
_ANY_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+\S")
_TAG_ONLY = re.compile(r"^\s*</?[A-Za-z][\w-]*\s*/?>\s*$")
_WORDS = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_HEADING = re.compile(r"#{1,6}\s*([^#\n]+?)\s*#*\s*$")


@dataclass(frozen=True)
class ObservationVerdict:
    """The judgement of one Observer reply."""

    accepted: bool
    reason: ObservationReason | None
    """Why it was rejected (``None`` when accepted)."""
    detail: str
    """A short explanation without any of the reply's text (safe for logs and events)."""
    observations: str
    """The observations to commit: the parsed ones without lines that echo the prompt."""
    lines: int
    """Well-formed observation lines kept."""
    tokens: int
    """Tokens of ``observations``."""
    limit: int
    """The size limit that applied (tokens)."""
    covered: int | None = None
    """Messages of the batch the observations cover when the reply was cut short (its lines
    are a salvage); ``None``: the whole batch."""
    repeated: int = 0
    """Lines dropped because the log already holds them."""
    ungrounded: int = 0
    """Lines dropped because the batch does not support them."""
    information: int | None = None
    """Distinct grounded terms of the observations (``None`` when not measured)."""

    @property
    def salvaged(self) -> bool:
        """The observations are what was kept of a reply that was cut short."""
        return self.accepted and self.covered is not None


def observation_limit(input_tokens: int, observation_tokens: int) -> int:
    """The largest plausible size of the observations of a batch of ``input_tokens`` tokens.

    Observations compress what they observe, so they may not exceed :data:`INPUT_SHARE` times
    the batch, nor :data:`OBSERVATION_CAP_FACTOR` times ``observation_tokens`` (the size at
    which the whole log is reflected); tiny batches may always get
    :data:`OVERSIZE_FLOOR_TOKENS`.
    """
    cap = min(
        int(INPUT_SHARE * max(0, input_tokens)),
        int(OBSERVATION_CAP_FACTOR * max(0, observation_tokens)),
    )
    return max(OVERSIZE_FLOOR_TOKENS, cap)


def _text_of(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts = [p if isinstance(p, str) else str(p.get("text", "")) for p in content]
    return "\n".join(parts)


def _schema_descriptions() -> list[str]:
    """The field descriptions of the structured schemas (sent with a structured call)."""
    out: list[str] = []
    for schema in (StructuredObservation, ExtractedValue, StructuredObserverOutput):
        out.extend(f.description for f in schema.model_fields.values() if f.description)
    return out


SENT_IN_PLACE = (
    COMPACT_OBSERVER_SYSTEM_PROMPT,
    STRUCTURED_OBSERVER_NOTE,
    STRUCTURED_REFLECTOR_NOTE,
    *_schema_descriptions(),
)
"""What a call may send besides the system text the prompt was built with: the compact
Observer prompt (which replaces it), the structured-output notes (appended to it) and the
schema's field descriptions (sent as the JSON schema). The output mode and prompt variant are
chosen per attempt, after the prompt is built, so the echo check knows all of them."""


DEFAULT_INSTRUCTIONS = "\n".join([OBSERVER_SYSTEM_PROMPT, *SENT_IN_PLACE])
"""The instructions an Observer call may send when the prompt is not known."""


def instruction_text(prompt: Sequence[BaseMessage]) -> str:
    """The instructions of an Observer prompt: the system text, headings and the task.

    A reply is compared against whichever instructions the call sent, and the output mode and
    prompt variant are chosen per attempt after the prompt is built: so a prompt with a system
    message also counts :data:`SENT_IN_PLACE` (the compact prompt, the structured notes, the
    schema's descriptions). The new messages and previous observations are left out:
    observations may quote them.
    """
    parts: list[str] = []
    for message in prompt:
        text = _text_of(message)
        if isinstance(message, SystemMessage):
            parts.append(text)
            parts.extend(SENT_IN_PLACE)
        elif isinstance(message, HumanMessage):
            parts.extend(line for line in text.splitlines() if line.startswith("#"))
            task = text.rfind("## Your Task")
            if task >= 0:
                parts.append(text[task:])
    return "\n".join(parts) or DEFAULT_INSTRUCTIONS


class _Instructions:
    """What a reply that echoes the prompt would contain."""

    def __init__(self, text: str) -> None:
        self.lines: set[str] = set()
        self.headings: set[str] = set()
        self.shingles: set[tuple[str, ...]] = set()
        for line in text.splitlines():
            heading = _HEADING.match(line.strip())
            if heading is not None:
                self.headings.add(" ".join(_words(heading.group(1))))
            words = _words(loop_key(line))
            if words:
                self.lines.add(" ".join(words))
            self.shingles.update(_shingles(words))

    def echoes(self, line: str) -> bool:
        words = _words(loop_key(line))
        if not words:
            return False
        joined = " ".join(words)
        if joined in self.lines or joined in self.headings:
            return True
        if "#" in line and any(h and h in joined for h in self.headings):
            return True
        if len(words) < _MIN_SHINGLED_WORDS:
            return False
        grams = _shingles(words)
        hits = sum(1 for g in grams if g in self.shingles)
        return hits / len(grams) >= _ECHO_OVERLAP


@functools.lru_cache(maxsize=8)
def _instructions(text: str) -> _Instructions:
    """:class:`_Instructions` of a prompt, memoised: every reply of a role is judged against
    the same instructions (the object is only read)."""
    return _Instructions(text)


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.casefold())


def _shingles(words: Sequence[str]) -> list[tuple[str, ...]]:
    return [tuple(words[i : i + _SHINGLE]) for i in range(len(words) - _SHINGLE + 1)]


def _well_formed(line: str) -> bool:
    return _TOP_LEVEL_ITEM.match(line) is not None and len(_words(loop_key(line))) >= 2


def _is_header(line: str) -> bool:
    return parse_date_header(line.strip().strip("*#_ ").strip()) is not None


def _residue(raw: str) -> bool:
    """Whether ``raw`` holds anything besides tags, ``Date:`` headers and whitespace.

    The hint sections (current task, suggested response, title) do not count.
    """
    sections, rest = split_sections(raw, BUILTIN_SECTIONS)
    kept = [content for name, content in sections if name == "observations"]
    return any(
        line.strip() and not _TAG_ONLY.match(line) and not _is_header(line)
        for line in "\n".join([*kept, rest]).splitlines()
    )


def judge_observation(
    output: ObserverOutput,
    *,
    input_tokens: int,
    observation_tokens: int,
    count: Callable[[str], int],
    instructions: str = DEFAULT_INSTRUCTIONS,
    source: str | None = None,
    sources: Sources | None = None,
    log: str = "",
    cut: str | None = None,
) -> ObservationVerdict:
    """Accept or reject an Observer reply (see the module docstring for the checks).

    Args:
        output: the parsed reply (:func:`~langchain_om._core.observer.parse_observer_output`,
            best called with the same ``source``).
        input_tokens: tokens of the batch's messages.
        observation_tokens: the reflection threshold (``reflection.observation_tokens``).
        count: the token counter.
        instructions: the prompt's own instructions and headings (:func:`instruction_text`).
        source: the Observer's rendered input, so faithful repetition is not a loop.
        sources: the batch's messages: lines they do not support are dropped
            (:mod:`.salvage`), and the observations must carry the information floor.
        log: the observation log the reply is appended to (lines it holds are dropped).
        cut: why the reply was stopped early (``"loop"``, ``"budget"``), if it was: its
            lines are then a salvage, held to strict grounding, covering a prefix of the batch.

    Returns:
        The verdict, with the observations to commit when accepted.
    """
    limit = observation_limit(input_tokens, observation_tokens)

    def reject(
        reason: ObservationReason, detail: str, tokens: int = 0, repeated: int = 0
    ) -> ObservationVerdict:
        return ObservationVerdict(False, reason, detail, "", 0, tokens, limit, repeated=repeated)

    raw = output.raw
    if not raw.strip():
        if cut is not None:
            return reject(_CUT_REASON[cut], f"the reply was stopped ({cut}) before any line")
        return reject("empty", "the reply was empty")
    if output.degenerate or is_degenerate(output.observations, source=source):
        return reject("degenerate", "the reply was a repetition loop")
    tokens = count(output.observations) if output.observations else 0
    prompt = _instructions(instructions)
    lines = output.observations.split("\n") if output.observations else []
    content = [line for line in lines if line.strip() and not _is_header(line)]
    if not content:
        if cut is not None:
            return reject(_CUT_REASON[cut], f"the reply was stopped ({cut}) before any line")
        if not _residue(raw):
            return reject("empty", "the reply held no observation lines")
        raw_lines = [line for line in raw.splitlines() if line.strip() and _residue(line)]
        echoed = sum(prompt.echoes(line) for line in raw_lines)
        if raw_lines and echoed / len(raw_lines) >= ECHO_SHARE:
            return reject("echo", "the reply repeated the prompt's instructions")
        return reject("unparseable", "no observation lines could be read from the reply")
    echo = [prompt.echoes(line) for line in content]
    good = [line for line, e in zip(content, echo, strict=True) if not e and _well_formed(line)]
    if not good:
        if any(echo):
            return reject("echo", "every observation line repeated the prompt")
        return reject("unparseable", "the reply held no well-formed observation line")
    if sum(echo) / len(content) >= ECHO_SHARE:
        return reject("echo", f"{sum(echo)} of {len(content)} lines repeated the prompt")
    kept = keep_lines(_drop_echo(lines, prompt), sources=sources, log=log, cut=cut is not None)
    if not kept.lines:
        if kept.ungrounded:
            return reject(
                _CUT_REASON[cut] if cut is not None else "ungrounded",
                f"none of its {kept.ungrounded} new lines is supported by the messages",
            )
        return reject(
            "echo",
            f"all {kept.repeated} lines repeat the previous observations",
            repeated=kept.repeated,
        )
    tokens = count(kept.text)
    if tokens > limit:
        return reject(
            "oversized",
            f"the observations ({tokens} tokens) exceed the limit for this batch ({limit})",
            tokens,
        )
    floor = information_floor(input_tokens)
    if sources is not None and cut is None and kept.information < floor:
        return reject(
            "uninformative",
            f"the observations carry {kept.information} facts from the messages; a batch of "
            f"{input_tokens} tokens needs at least {floor}",
            tokens,
        )
    return ObservationVerdict(
        True,
        None,
        f"{kept.lines} observation lines",
        kept.text,
        kept.lines,
        tokens,
        limit,
        covered=kept.covered,
        repeated=kept.repeated,
        ungrounded=kept.ungrounded,
        information=kept.information if sources is not None else None,
    )


_CUT_REASON: dict[str, ObservationReason] = {"loop": "degenerate", "budget": "oversized"}
"""The reason code of a cut reply with nothing to salvage."""


def _drop_echo(lines: Sequence[str], prompt: _Instructions) -> str:
    """The observation lines without echoed ones (and their sub-items), empty dates removed."""
    kept: list[str] = []
    dropping = False
    for line in lines:
        if _is_header(line) or not line.strip():
            dropping = False
            kept.append(line)
            continue
        top = _TOP_LEVEL_ITEM.match(line) is not None or not _ANY_ITEM.match(line)
        if top:
            dropping = prompt.echoes(line)
        elif prompt.echoes(line):
            continue
        if not dropping:
            kept.append(line)
    out: list[str] = []
    for i, line in enumerate(kept):
        if _is_header(line):
            following = next((x for x in kept[i + 1 :] if x.strip()), None)
            if following is None or _is_header(following):
                continue
        out.append(line)
    text = "\n".join(out).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", text)


_REMINDERS: dict[str, str] = {
    "empty": "Your previous answer held no observations.",
    "unparseable": "Your previous answer was not in the observation format.",
    "echo": "Your previous answer repeated these instructions or the previous observations "
    "instead of observing the new messages.",
    "oversized": "Your previous answer was far longer than the messages it observed.",
    "degenerate": "Your previous answer repeated the same lines over and over.",
    "ungrounded": "Your previous answer held lines that the new messages do not say.",
    "uninformative": "Your previous answer left out what the new messages actually say.",
    "model-error": "Your previous answer could not be read.",
}


def format_reminder(reason: ObservationReason) -> str:
    """The short note added to the prompt for the single retry after ``reason``."""
    return (
        f"{_REMINDERS[reason]} Answer again. Start with a line `<observations>`, then `Date:` "
        "headers and one line per new fact, like `* 🔴 (14:30) User said …`, each fact once and "
        "briefly, about the new messages only; end with a line `</observations>`, then the other "
        "sections asked for. Do not copy the instructions, headings or examples."
    )


def with_format_reminder(
    prompt: Sequence[BaseMessage], reason: ObservationReason
) -> list[BaseMessage]:
    """``prompt`` with :func:`format_reminder` appended to its last human message."""
    out = list(prompt)
    note = format_reminder(reason)
    for index in range(len(out) - 1, -1, -1):
        message = out[index]
        if isinstance(message, HumanMessage):
            content = message.content
            if isinstance(content, str):
                new_content: str | list[str | dict[str, object]] = f"{content}\n\n{note}"
            else:
                new_content = [*content, {"type": "text", "text": note}]
            out[index] = message.model_copy(update={"content": new_content})
            return out
    out.append(HumanMessage(content=note))
    return out
