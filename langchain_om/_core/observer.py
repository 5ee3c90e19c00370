"""What the Observer is shown, and how its answer is read.

The Observer gets a fixed system prompt (plus the user's ``observation.instruction``) and ONE
human message with clearly headed sections: previous observations (budgeted, see
:mod:`langchain_om._core.truncation`), prior thread metadata, the new messages rendered as
dated text lines (image/file parts forwarded as content blocks), and the task.

Its answer holds an ``<observations>`` block and hint sections; :func:`parse_observer_output`
reads it without ever raising and flags repetition loops (:mod:`.degenerate`).

The prompt text lives in :mod:`.observer_prompts` and the message rendering in
:mod:`.observer_input`; their public names are re-exported here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_om._core.dates import format_date, parse_date_header
from langchain_om._core.degenerate import is_degenerate
from langchain_om._core.observer_input import FormattedHistory, format_messages_for_observer
from langchain_om._core.observer_prompts import OBSERVATION_FORMAT_GUIDE, OBSERVER_SYSTEM_PROMPT
from langchain_om._core.truncation import TruncatedObservations

__all__ = [
    "BUILTIN_SECTIONS",
    "MAX_LINE_CHARS",
    "OBSERVATION_FORMAT_GUIDE",
    "OBSERVER_SYSTEM_PROMPT",
    "FormattedHistory",
    "ObserverOutput",
    "build_observer_messages",
    "format_messages_for_observer",
    "order_lines_by_time",
    "parse_observer_output",
]

MAX_LINE_CHARS = 10_000
"""Longest observation line kept; longer lines are cut and marked ``… [truncated]``."""

BUILTIN_SECTIONS: tuple[str, ...] = (
    "observations",
    "current-task",
    "suggested-response",
    "thread-title",
)
"""Output sections with a fixed meaning (extractor slugs must differ from these)."""

_CUSTOM_HEADING = "## Custom Instructions"
_TRUNCATED = "… [truncated]"

# --------------------------------------------------------------------------------------------
# Building the prompt
# --------------------------------------------------------------------------------------------


def _hint_key(key: str) -> str:
    return key.strip().lower().replace("_", "-")


def _one_line(value: str) -> str:
    return " ".join(value.split())


def build_observer_messages(
    *,
    history: FormattedHistory,
    previous: TruncatedObservations | None,
    prior_hints: Mapping[str, str],
    instruction: str | None,
    thread_title: bool,
    skip_continuation_hints: bool = False,
    extractors: Sequence[tuple[str, str]] = (),
) -> list[BaseMessage]:
    """The Observer's prompt: ``[SystemMessage, HumanMessage]``.

    Args:
        history: The new messages, from :func:`format_messages_for_observer`.
        previous: The budgeted view of the existing log (``None`` or empty = none).
        prior_hints: Last values: ``current-task``, ``suggested-response``, ``thread-title``
            and extractor slugs (snake_case keys are accepted too).
        instruction: ``observation.instruction``, appended to the system prompt.
        thread_title: Ask for a ``<thread-title>`` (and show the prior title).
        skip_continuation_hints: Ask for observations only (background buffering).
        extractors: ``(slug, instructions)`` of inline extractors, one section each.

    Returns:
        The system message and ONE human message (text, then attachments, then the task).
    """
    system = OBSERVER_SYSTEM_PROMPT
    if instruction and instruction.strip():
        system = f"{system}\n\n{_CUSTOM_HEADING}\n\n{instruction.strip()}"

    sections: list[str] = []
    if previous is not None and previous.text.strip():
        sections.append(
            "## Previous Observations\n\n"
            f"{previous.text.strip()}\n\n"
            "These are already recorded. Do not repeat them: your new observations will be "
            "appended after them."
        )
        if previous.truncated:
            sections.append(
                f"Note: to save space, {previous.hidden_lines} older observation lines are "
                "hidden from the view above (shown as `[N observations hidden here]`). The "
                "full log is stored intact; do not try to restore or rewrite hidden lines."
            )
    elif previous is not None and previous.hidden_lines:
        noun = "observation" if previous.hidden_lines == 1 else "observations"
        sections.append(
            "## Previous Observations\n\n"
            f"This thread already has {previous.hidden_lines} recorded {noun}; they are not "
            "shown here to save space. They are stored intact: observe only the new messages "
            "below, and do not restate what earlier parts of the conversation must have covered."
        )

    hints = {_hint_key(k): v for k, v in prior_hints.items() if isinstance(v, str) and v.strip()}
    if not thread_title:
        hints.pop("thread-title", None)
    builtin: tuple[str, ...] = ("current-task", "suggested-response", "thread-title")
    ordered = [k for k in builtin if k in hints]
    ordered += [k for k in hints if k not in ordered]
    if ordered:
        rows = "\n".join(f"- prior {key}: {_one_line(hints[key])}" for key in ordered)
        sections.append(f"## Prior Thread Metadata\n\n{rows}")

    sections.append(
        "## New Messages to Observe\n\n" + (history.text.strip() or "(no new messages)")
    )
    head = "\n\n".join(sections)
    task = _task_text(thread_title, skip_continuation_hints, extractors, hints)

    content: str | list[str | dict[str, Any]]
    if history.attachments:
        labels = list(history.attachment_labels)
        labels += [f"[Attachment #{i + 1}]" for i in range(len(labels), len(history.attachments))]
        parts: list[str | dict[str, Any]] = [
            {
                "type": "text",
                "text": f"{head}\n\n### Attachments\n\nThe attachments referenced above, "
                "each after its label:",
            }
        ]
        for label, block in zip(labels, history.attachments, strict=False):
            parts.append({"type": "text", "text": label})
            parts.append(block)
        parts.append({"type": "text", "text": task})
        content = parts
    else:
        content = f"{head}\n\n{task}"
    return [SystemMessage(content=system), HumanMessage(content=content)]


def _task_text(
    thread_title: bool,
    skip_hints: bool,
    extractors: Sequence[tuple[str, str]],
    hints: Mapping[str, str],
) -> str:
    rows = [
        '- <observations>: new observations for the messages under "New Messages to '
        'Observe", under `Date:` headers.'
    ]
    if not skip_hints:
        rows.append(
            "- <current-task>: what the assistant is working on at the end of these messages "
            "(Primary, and Secondary if any)."
        )
        rows.append("- <suggested-response>: how the assistant should continue from here.")
    if thread_title:
        keep = (
            " Keep the prior thread-title unless the topic of the conversation has really changed."
            if "thread-title" in hints
            else ""
        )
        rows.append(
            "- <thread-title>: a short title for the whole conversation, a 2 to 5 word noun "
            f"phrase.{keep}"
        )
    for slug, instructions in extractors:
        prior = (
            f" Start from the prior {slug} listed above: update what changed, keep the rest."
            if slug in hints
            else ""
        )
        text = "\n  ".join(row.strip() for row in instructions.strip().splitlines() if row.strip())
        rows.append(f"- <{slug}>: {text}{prior}")
    lead = (
        "Record what is new in the messages above. Always write the <observations> block, "
        "even when the new messages add little."
        if skip_hints
        else "Record what is new in the messages above; do not repeat previous observations."
    )
    return (
        "---\n\n## Your Task\n\n"
        f"{lead} Answer with these sections, in this order, and nothing else:\n" + "\n".join(rows)
    )


# --------------------------------------------------------------------------------------------
# Parsing the answer
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ObserverOutput:
    """What the Observer (or the Reflector) answered."""

    observations: str
    """Observation lines with ``Date:`` headers ("" when none or degenerate)."""
    current_task: str | None
    suggested_response: str | None
    thread_title: str | None
    extracted: dict[str, str]
    """Inline extractor values by slug (non-empty only)."""
    degenerate: bool
    """The answer was a repetition loop and must not be used."""
    raw: str
    """The unparsed answer."""


_LIST_LINE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+\S")
_LONE_TAG = re.compile(r"^\s*</?[A-Za-z][\w-]*\s*>\s*$")
_TOP_LEVEL = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s")
_LINE_TIME = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+(?:[^\s(]{1,4}\s*)?\((\d{1,2}):(\d{2})\)")


def _open_re(tag: str) -> re.Pattern[str]:
    return re.compile(rf"^[ \t]*<{re.escape(tag)}\s*>", re.MULTILINE)


def _take_sections(text: str, tag: str, stop: re.Pattern[str]) -> tuple[list[str], str]:
    """Contents of every ``<tag>`` section opened at a line start, and the text without them.

    An unclosed section runs to the next known section opening, or to the end.
    """
    opening = _open_re(tag)
    closing = re.compile(rf"</{re.escape(tag)}\s*>")
    found: list[str] = []
    kept: list[str] = []
    pos = 0
    while (match := opening.search(text, pos)) is not None:
        start = match.end()
        close = closing.search(text, start)
        if close is not None:
            end_content, end = close.start(), close.end()
        else:
            nxt = stop.search(text, start)
            end_content = end = nxt.start() if nxt is not None else len(text)
        found.append(text[start:end_content])
        kept.append(text[pos : match.start()])
        pos = end
    kept.append(text[pos:])
    return found, "".join(kept)


def _cap(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + _TRUNCATED


def _hint(values: list[str]) -> str | None:
    for value in values:
        lines = [_cap(line.rstrip()) for line in value.strip().splitlines()]
        text = "\n".join(lines).strip()
        if text:
            return text
    return None


def _title(values: list[str]) -> str | None:
    hint = _hint(values)
    if hint is None:
        return None
    title = hint.splitlines()[0].strip().strip("\"'*#`").strip()
    return title[:200] or None


def _clean_observations(lines: Sequence[str], *, lists_only: bool) -> str:
    out: list[str] = []
    for raw in lines:
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("```") or _LONE_TAG.match(line):
            continue
        header = parse_date_header(line.strip().strip("*#_ ").strip())
        if header is not None:
            if out:
                out.append("")
            out.append(f"Date: {format_date(header)}")
            continue
        if lists_only and not _LIST_LINE.match(line):
            continue
        out.append(_cap(line))
    return "\n".join(out)


def parse_observer_output(text: str, *, extractor_slugs: Sequence[str] = ()) -> ObserverOutput:
    """Read an Observer (or Reflector) answer; never raises.

    A repetition loop gives ``degenerate=True`` and no observations. Inline extractor sections
    are read and removed first, then the hint sections. ``<observations>`` blocks must open at
    a line start (several are joined); without any, list lines and ``Date:`` headers of the
    remaining text are kept. Lines are capped at :data:`MAX_LINE_CHARS` and top-level lines
    ordered by time within each date (:func:`order_lines_by_time`).
    """
    raw = text
    if is_degenerate(raw):
        return ObserverOutput("", None, None, None, {}, True, raw)
    slugs = [s for s in dict.fromkeys(extractor_slugs) if s and s not in BUILTIN_SECTIONS]
    all_tags = [*BUILTIN_SECTIONS, *slugs]
    stop = re.compile(
        r"^[ \t]*<(?:" + "|".join(re.escape(t) for t in all_tags) + r")\s*>", re.MULTILINE
    )
    rest = raw
    extracted: dict[str, str] = {}
    for slug in slugs:
        values, rest = _take_sections(rest, slug, stop)
        value = _hint(values)
        if value is not None:
            extracted[slug] = value
    hints: dict[str, list[str]] = {}
    for tag in ("current-task", "suggested-response", "thread-title"):
        hints[tag], rest = _take_sections(rest, tag, stop)
    blocks, rest = _take_sections(rest, "observations", stop)
    if blocks:
        observations = _clean_observations("\n".join(blocks).splitlines(), lists_only=False)
    else:
        observations = _clean_observations(rest.splitlines(), lists_only=True)
    return ObserverOutput(
        observations=order_lines_by_time(observations),
        current_task=_hint(hints["current-task"]),
        suggested_response=_hint(hints["suggested-response"]),
        thread_title=_title(hints["thread-title"]),
        extracted=extracted,
        degenerate=False,
        raw=raw,
    )


def order_lines_by_time(observations: str) -> str:
    """Sort top-level lines by their ``(HH:MM)`` time within each ``Date:`` group.

    Sub-items move with their parent; the sort is stable. A group is left as it is when any
    of its top-level lines has no 24-hour time.
    """
    out: list[str] = []
    group: list[str] = []
    for line in observations.split("\n"):
        if parse_date_header(line) is not None:
            out.extend(_order_group(group))
            group = []
            out.append(line)
        else:
            group.append(line)
    out.extend(_order_group(group))
    return "\n".join(out)


def _time_key(line: str) -> tuple[int, int] | None:
    match = _LINE_TIME.match(line)
    if match is None:
        return None
    hour, minute = int(match.group(1)), int(match.group(2))
    return (hour, minute) if hour < 24 and minute < 60 else None


def _order_group(lines: list[str]) -> list[str]:
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    body, trailing = lines[:end], lines[end:]
    preface: list[str] = []
    items: list[list[str]] = []
    for line in body:
        if _TOP_LEVEL.match(line):
            items.append([line])
        elif items:
            items[-1].append(line)
        else:
            preface.append(line)
    keys = [_time_key(item[0]) for item in items]
    if len(items) < 2 or any(key is None for key in keys):
        return lines
    order = sorted(range(len(items)), key=lambda i: keys[i] or (0, 0))
    return preface + [line for i in order for line in items[i]] + trailing
