"""Structured Observer/Reflector output: a schema a model can fill, rendered to the text log.

With ``with_structured_output`` the Observer answers :class:`StructuredObserverOutput` (the
Reflector :class:`StructuredReflectorOutput`) instead of tagged text. :func:`render_structured`
turns the answer into the same :class:`~langchain_om._core.observer.ObserverOutput` the text
parser gives for the equivalent text (:func:`structured_to_text`): ``Date:`` headers, one
``* <priority> (HH:MM) text`` line per observation with ``  * -> detail`` sub-items, lines
capped and ordered by time within each date, hints stripped, the title cut to one line.
Observations are grouped under one header per date, dates in calendar order.

:func:`structured_from_observations` reads a well-formed log back into observations (for
tests and conversions); it raises on lines the schema cannot hold.

:func:`lenient_structured` reads a reply that failed strict validation (an observation with
time ``25:00`` fails the whole reply) keeping its valid observations, and says how many it
dropped; :data:`STRUCTURED_OBSERVER_NOTE` and :data:`STRUCTURED_REFLECTOR_NOTE` end the system
prompt in structured mode, mapping the prompt's tagged sections to the schema's fields.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import date as Date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from langchain_om._core.dates import format_date, parse_date_header
from langchain_om._core.degenerate import is_degenerate
from langchain_om._core.observer import (
    BUILTIN_SECTIONS,
    ObserverOutput,
    _cap,
    _hint,
    _title,
    order_lines_by_time,
)

__all__ = [
    "PRIORITY_MARKS",
    "STRUCTURED_OBSERVER_NOTE",
    "STRUCTURED_REFLECTOR_NOTE",
    "ExtractedValue",
    "StructuredObservation",
    "StructuredObserverOutput",
    "StructuredReflectorOutput",
    "lenient_structured",
    "render_structured",
    "reply_data",
    "structured_from_observations",
    "structured_to_text",
]

Priority = Literal["high", "medium", "low", "done"]

PRIORITY_MARKS: dict[str, str] = {"high": "🔴", "medium": "🟡", "low": "🟢", "done": "✅"}
"""The mark each priority is written with in the log."""

_BY_MARK = {mark: name for name, mark in PRIORITY_MARKS.items()}
_TIME = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*$")


def _one_line(text: str) -> str:
    return " ".join(text.split())


class StructuredObservation(BaseModel):
    """One observation: when it happened, how much it matters, what happened."""

    model_config = ConfigDict(frozen=True)

    date: Date = Field(description="Calendar date of the event, YYYY-MM-DD.")
    time: str = Field(description="24-hour time of the event, HH:MM.")
    priority: Priority = Field(
        description="high: facts about the user, decisions, open goals; medium: task details "
        "and results; low: minor details; done: a completed request with its outcome."
    )
    text: str = Field(description="What happened, in one line.")
    details: list[str] = Field(
        default_factory=list, description="Optional details of this observation, one per item."
    )

    @field_validator("time")
    @classmethod
    def _check_time(cls, value: str) -> str:
        match = _TIME.match(value)
        if match is None or int(match.group(1)) > 23 or int(match.group(2)) > 59:
            raise ValueError(f"time must be HH:MM on a 24-hour clock, not {value!r}")
        return f"{int(match.group(1)):02d}:{match.group(2)}"

    @field_validator("priority", mode="before")
    @classmethod
    def _check_priority(cls, value: object) -> object:
        return _BY_MARK.get(value, value) if isinstance(value, str) else value

    @field_validator("text")
    @classmethod
    def _check_text(cls, value: str) -> str:
        text = _one_line(value)
        if not text:
            raise ValueError("an observation needs a text")
        return text

    @field_validator("details")
    @classmethod
    def _check_details(cls, value: list[str]) -> list[str]:
        return [d for d in (_one_line(v) for v in value) if d]

    def lines(self) -> list[str]:
        """The log lines of this observation (capped like the text parser caps them)."""
        head = f"* {PRIORITY_MARKS[self.priority]} ({self.time}) {self.text}"
        return [_cap(head)] + [_cap(f"  * -> {d}") for d in self.details]


class ExtractedValue(BaseModel):
    """The current value of one extractor."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="The extractor's name, exactly as listed.")
    value: str = Field(description="Its up-to-date value.")


class StructuredReflectorOutput(BaseModel):
    """What the Reflector answers: the condensed observations, and optional hints."""

    model_config = ConfigDict(frozen=True)

    observations: list[StructuredObservation] = Field(default_factory=list)
    current_task: str | None = Field(default=None, description="What the assistant works on.")
    suggested_response: str | None = Field(
        default=None, description="How the assistant should continue."
    )


class StructuredObserverOutput(StructuredReflectorOutput):
    """What the Observer answers: new observations, hints, title and extractor values."""

    thread_title: str | None = Field(
        default=None, description="A 2 to 5 word title for the whole conversation."
    )
    extracted: list[ExtractedValue] = Field(
        default_factory=list, description="Values of the listed extractors."
    )


def _observation_lines(observations: Sequence[StructuredObservation]) -> list[str]:
    days = sorted({o.date for o in observations})
    lines: list[str] = []
    for day in days:
        if lines:
            lines.append("")
        lines.append(f"Date: {format_date(day)}")
        for obs in observations:
            if obs.date == day:
                lines.extend(obs.lines())
    return lines


def _extracted(
    output: StructuredReflectorOutput, slugs: Sequence[str] | None
) -> list[tuple[str, str]]:
    values = output.extracted if isinstance(output, StructuredObserverOutput) else []
    wanted = None if slugs is None else set(slugs)
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for item in values:
        name = item.name.strip()
        if not name or name in BUILTIN_SECTIONS or name in seen:
            continue
        if wanted is not None and name not in wanted:
            continue
        seen.add(name)
        out.append((name, item.value))
    return out


def structured_to_text(
    output: StructuredReflectorOutput, *, extractor_slugs: Sequence[str] | None = None
) -> str:
    """The tagged text answer equivalent to ``output`` (what a text-mode model would write)."""
    parts = ["<observations>", *_observation_lines(output.observations), "</observations>"]
    hints: list[tuple[str, str | None]] = [
        ("current-task", output.current_task),
        ("suggested-response", output.suggested_response),
    ]
    if isinstance(output, StructuredObserverOutput):
        hints.append(("thread-title", output.thread_title))
    hints.extend(_extracted(output, extractor_slugs))
    for tag, value in hints:
        if value is not None and value.strip():
            parts += [f"<{tag}>", value.strip(), f"</{tag}>"]
    return "\n".join(parts)


def render_structured(
    output: StructuredReflectorOutput, *, extractor_slugs: Sequence[str] | None = None
) -> ObserverOutput:
    """``output`` as the :class:`ObserverOutput` the text parser gives for its equivalent text.

    Args:
        output: the structured answer.
        extractor_slugs: extractor values to keep (``None``: every listed name that is not a
            built-in section).
    """
    raw = structured_to_text(output, extractor_slugs=extractor_slugs)
    if is_degenerate(raw):
        return ObserverOutput("", None, None, None, {}, True, raw)
    extracted: dict[str, str] = {}
    for name, value in _extracted(output, extractor_slugs):
        hint = _hint([value])
        if hint is not None:
            extracted[name] = hint
    title = output.thread_title if isinstance(output, StructuredObserverOutput) else None
    return ObserverOutput(
        observations=order_lines_by_time("\n".join(_observation_lines(output.observations))),
        current_task=_hint([output.current_task or ""]),
        suggested_response=_hint([output.suggested_response or ""]),
        thread_title=_title([title or ""]),
        extracted=extracted,
        degenerate=False,
        raw=raw,
    )


_LINE = re.compile(r"^\* (\S+) \((\d{2}:\d{2})\) (.+)$")
_DETAIL = re.compile(r"^  \* -> (.+)$")


def structured_from_observations(observations: str) -> list[StructuredObservation]:
    """The observations of a well-formed log (``Date:`` headers, priority lines, details).

    Raises:
        ValueError: a line is not a header, an observation or a detail of one.
    """
    out: list[StructuredObservation] = []
    day: Date | None = None
    for number, line in enumerate(observations.splitlines(), start=1):
        if not line.strip():
            continue
        header = parse_date_header(line)
        if header is not None:
            day = header
            continue
        detail = _DETAIL.match(line)
        if detail is not None and out:
            last = out[-1]
            out[-1] = last.model_copy(update={"details": [*last.details, detail.group(1)]})
            continue
        match = _LINE.match(line)
        if match is None or day is None or match.group(1) not in _BY_MARK:
            raise ValueError(f"line {number} is not a dated observation: {line!r}")
        out.append(
            StructuredObservation(
                date=day, time=match.group(2), priority=match.group(1), text=match.group(3)
            )
        )
    return out


_NOTE = """\
## Answer format for this call

Answer by filling the JSON schema you are given, not with tags. Each observation is one \
object: `date` (YYYY-MM-DD, from the messages), `time` (HH:MM, 24-hour), `priority` \
(high, medium, low or done, as the priorities above), `text` (what happened, one line, with \
names, numbers and dates exactly as written) and optional `details`."""

STRUCTURED_OBSERVER_NOTE = (
    _NOTE
    + """ The sections the task asks for are fields: <observations> is `observations`, \
<current-task> is `current_task`, <suggested-response> is `suggested_response`, \
<thread-title> is `thread_title`, and any other named section is an item of `extracted` \
(`name` and `value`). Leave out the fields the task does not ask for."""
)
"""Ends the Observer's system prompt when it answers the schema."""

STRUCTURED_REFLECTOR_NOTE = (
    _NOTE
    + """ The consolidated log is `observations`; <current-task> is `current_task` and \
<suggested-response> is `suggested_response`."""
)
"""Ends the Reflector's system prompt when it answers the schema."""

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def reply_data(tool_args: Mapping[str, Any] | None, text: str) -> dict[str, Any] | None:
    """The JSON object of a structured reply: its tool-call arguments, else its text as JSON.

    A JSON text cut off by the output limit keeps what it wrote before the value that was
    cut (an observation cut inside its details keeps its date, time, priority and text). Returns
    ``None`` when neither holds a JSON object.
    """
    if tool_args is not None:
        return dict(tool_args)
    fenced = _FENCE.match(text)
    body = (fenced.group(1) if fenced else text).strip()
    try:
        data = json.loads(body)
    except ValueError:
        data = _truncated_object(body)
    return data if isinstance(data, dict) else None


_MAX_REPAIRS = 200


def _open_brackets(text: str) -> tuple[list[str], int | None]:
    """The brackets still open at the end of ``text``, and where an unclosed string starts."""
    stack: list[str] = []
    start: int | None = None
    escaped = False
    for i, ch in enumerate(text):
        if start is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                start = None
        elif ch == '"':
            start = i
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
    return stack, start


def _closed(text: str) -> Any:
    """``text`` cut at its unclosed string (and that string's key) with its brackets closed.

    The value being written when the limit struck is dropped, the fields before it kept:
    an observation cut inside its ``details`` keeps its date, time, priority and text.
    """
    stack, start = _open_brackets(text)
    body = text if start is None else text[:start]
    body = body.rstrip().rstrip(",").rstrip()
    if body.endswith(":"):  # a key whose value was cut: drop the key too
        body = body[:-1].rstrip()
        quote = body[:-1].rfind('"') if body.endswith('"') else -1
        body = body[:quote].rstrip().rstrip(",").rstrip() if quote >= 0 else body
    if body.endswith("{") and len(stack) > 1:  # an object cut before its first field
        body = body[:-1].rstrip().rstrip(",").rstrip()
        stack.pop()
    closers = "".join("}" if b == "{" else "]" for b in reversed(stack))
    try:
        return json.loads(body + closers)
    except ValueError:
        return None


def _truncated_object(text: str) -> Any:
    """A reply cut off by the output limit, up to the value it was writing.

    ``{"observations": [{…}, {…}, {"da`` becomes ``{"observations": [{…}, {…}]}``, and an
    observation cut inside a field keeps the fields before it (:func:`_closed`); when that
    cannot be read, the reply up to its last complete object.
    """
    if not text.startswith("{"):
        return None
    closed = _closed(text)
    if isinstance(closed, dict):
        return closed
    ends = [i for i, ch in enumerate(text) if ch == "}"][-_MAX_REPAIRS:]
    for end in reversed(ends):
        for tail in ("]}", "}", "]}]}"):
            try:
                return json.loads(text[: end + 1] + tail)
            except ValueError:
                continue
    return None


def lenient_structured(
    data: Mapping[str, Any], schema: type[StructuredReflectorOutput]
) -> tuple[StructuredReflectorOutput, int]:
    """``data`` as ``schema``, dropping the observations that do not validate.

    Returns:
        The answer and the number of observations dropped.

    Raises:
        ValidationError: the answer is invalid apart from its observations.
    """
    items = data.get("observations") or []
    kept: list[StructuredObservation] = []
    dropped = 0
    for item in items if isinstance(items, list) else []:
        try:
            kept.append(StructuredObservation.model_validate(item))
        except ValidationError:
            dropped += 1
    rest = {k: v for k, v in data.items() if k != "observations"}
    output = schema.model_validate({**rest, "observations": []})
    return output.model_copy(update={"observations": kept}), dropped
