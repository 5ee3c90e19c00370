"""What the Observer is shown, and how its answer is read.

The Observer gets a fixed system prompt (plus the user's ``observation.instruction``) and ONE
human message with clearly headed sections: previous observations (budgeted, see
:mod:`langchain_om._core.truncation`), prior thread metadata, the new messages rendered as
dated text lines (image/file parts forwarded as content blocks), and the task.

Its answer holds an ``<observations>`` block and hint sections; :func:`parse_observer_output`
reads it without ever raising and flags repetition loops (:mod:`.degenerate`).

The prompt text lives in :mod:`.observer_prompts` and the message rendering in
:mod:`.observer_input`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_om._core.dates import format_date, parse_date_header
from langchain_om._core.degenerate import is_degenerate
from langchain_om._core.markup import neutralise
from langchain_om._core.observer_input import FormattedHistory
from langchain_om._core.observer_prompts import (
    ALL_HINTS,
    NO_HINTS,
    HintSwitch,
    InstructionMode,
    observer_system_prompt,
)
from langchain_om._core.truncation import TruncatedObservations

__all__ = [
    "BUILTIN_SECTIONS",
    "MAX_LINE_CHARS",
    "ObserverOutput",
    "build_observer_messages",
    "order_lines_by_time",
    "parse_observer_output",
    "split_sections",
    "tag_name",
    "title_hint",
    "without_hints",
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
    instruction_mode: InstructionMode = "append",
    hints: HintSwitch = ALL_HINTS,
) -> list[BaseMessage]:
    """The Observer's prompt: ``[SystemMessage, HumanMessage]``.

    Args:
        history: The new messages, from :func:`format_messages_for_observer`.
        previous: The budgeted view of the existing log (``None`` or empty = none).
        prior_hints: Last values: ``current-task``, ``suggested-response``, ``thread-title``
            and extractor slugs (snake_case keys are accepted too).
        instruction: ``observation.instruction``, appended to the system prompt, or in place
            of its guidance on what to record (``instruction_mode="replace"``).
        thread_title: Ask for a ``<thread-title>`` (and show the prior title).
        skip_continuation_hints: Ask for no hints this time (background buffering); the
            system prompt stays the same, so the prompt cache serves both kinds of call.
        extractors: ``(slug, instructions)`` of inline extractors, one section each.
        instruction_mode: ``observation.instruction_mode`` (see
            :func:`~langchain_om._core.observer_prompts.observer_system_prompt`).
        hints: The continuation hints asked for (and shown from last time); the others are
            named nowhere in the prompt.

    Returns:
        The system message and ONE human message (text, then attachments, then the task).
    """
    system = observer_system_prompt(instruction, instruction_mode, hints)

    sections: list[str] = []
    if previous is not None and previous.text.strip():
        sections.append(
            "## Previous Observations\n\n"
            f"{neutralise(previous.text.strip(), dates=False)}\n\n"
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

    prior = {_hint_key(k): v for k, v in prior_hints.items() if isinstance(v, str) and v.strip()}
    for key, on in (
        ("thread-title", thread_title),
        ("current-task", hints.current_task),
        ("suggested-response", hints.suggested_response),
    ):
        if not on:
            prior.pop(key, None)
    builtin: tuple[str, ...] = ("current-task", "suggested-response", "thread-title")
    ordered = [k for k in builtin if k in prior]
    ordered += [k for k in prior if k not in ordered]
    if ordered:
        rows = "\n".join(f"- prior {key}: {_one_line(prior[key])}" for key in ordered)
        sections.append(f"## Prior Thread Metadata\n\n{rows}")

    sections.append(
        "## New Messages to Observe\n\n" + (history.text.strip() or "(no new messages)")
    )
    head = "\n\n".join(sections)
    asked = NO_HINTS if skip_continuation_hints else hints
    task = _task_text(thread_title, asked, extractors, prior)

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
    asked: HintSwitch,
    extractors: Sequence[tuple[str, str]],
    hints: Mapping[str, str],
) -> str:
    rows = [
        '- <observations>: new observations for the messages under "New Messages to '
        'Observe", under `Date:` headers.'
    ]
    if asked.current_task:
        rows.append(
            "- <current-task>: what the assistant is working on at the end of these messages "
            "(Primary, and Secondary if any)."
        )
    if asked.suggested_response:
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
        if not asked.any
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
    covered: int | None = None
    """Messages of the observed batch the observations cover, when the reply was cut short
    and its lines salvaged; ``None``: the whole batch."""
    parts: tuple[tuple[int, int], ...] = ()
    """A batch observed in parts: ``(lines, messages)`` of each part, in order (the lines of
    ``observations`` each part wrote and how many messages it was written from)."""


_LIST_LINE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+\S")
_LONE_TAG = re.compile(r"^\s*</?[A-Za-z][\w-]*\s*>\s*$")
_TOP_LEVEL = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s")
_LINE_TIME = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+(?:[^\s(]{1,4}\s*)?\((\d{1,2}):(\d{2})\)")


_TAG_AT_LINE_START = re.compile(r"^<(/?)([A-Za-z][\w-]*)\s*>")


def tag_name(name: str) -> str:
    """A section tag's canonical name: case-folded, ``_`` read as ``-``."""
    return name.strip().lower().replace("_", "-")


def _tag_at(line: str, known: frozenset[str]) -> tuple[bool, str, int] | None:
    """``(closing, name, end)`` of a known section tag that opens ``line``, or ``None``.

    Only a tag at the very start of the line counts: indented or quoted tags are content.
    """
    match = _TAG_AT_LINE_START.match(line)
    if match is None:
        return None
    name = tag_name(match.group(2))
    if name not in known:
        return None
    return match.group(1) == "/", name, match.end()


def _strip_trailing_close(line: str, name: str) -> str | None:
    """``line`` without a closing ``</name>`` that ends it, or ``None`` if it does not."""
    match = re.search(r"</([A-Za-z][\w-]*)\s*>\s*$", line)
    if match is None or tag_name(match.group(1)) != name:
        return None
    return line[: match.start()]


def split_sections(text: str, tags: Sequence[str]) -> tuple[list[tuple[str, str]], str]:
    """Read ``text`` as a line protocol: its top-level sections, and the text outside them.

    A section opens with ``<tag>`` at the very start of a line (case-insensitive, ``_`` or
    ``-``) and closes with ``</tag>`` at the start of a later line, or at the end of its
    opening line (``<thread-title>Trip</thread-title>``). A section without a closing line
    runs to the next line that opens a known section, or to the end (a ``</tag>`` ending its
    last line is dropped). Tags anywhere else, including opening tags of other sections inside
    a closed section, are content.

    Returns:
        ``[(tag, content), ...]`` in order of appearance, and the lines outside every section.
    """
    known = frozenset(tag_name(t) for t in tags)
    lines = text.split("\n")
    sections: list[tuple[str, str]] = []
    rest: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        found = _tag_at(lines[i], known)
        if found is None or found[0]:
            if found is None:
                rest.append(lines[i])
            i += 1
            continue
        _, name, end = found
        first = lines[i][end:]
        single = _strip_trailing_close(first, name)
        if single is not None:
            sections.append((name, single))
            i += 1
            continue
        close = next(
            (
                j
                for j in range(i + 1, n)
                if (t := _tag_at(lines[j], known)) is not None and t[0] and t[1] == name
            ),
            None,
        )
        body = [first] if first.strip() else []
        if close is None:
            close = next(
                (
                    j
                    for j in range(i + 1, n)
                    if (t := _tag_at(lines[j], known)) is not None and not t[0]
                ),
                n,
            )
            chunk = lines[i + 1 : close]
            while chunk and not chunk[-1].strip():
                chunk.pop()
            if chunk and (last := _strip_trailing_close(chunk[-1], name)) is not None:
                chunk[-1] = last
            sections.append((name, "\n".join(body + chunk)))
            i = close
            continue
        sections.append((name, "\n".join(body + lines[i + 1 : close])))
        i = close + 1
    return sections, "\n".join(rest)


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
    return None if hint is None else title_hint(hint)


def title_hint(text: str) -> str | None:
    """A proposed thread title as kept: its first line, without quotes or marks, 200 chars."""
    lines = text.strip().splitlines()
    title = lines[0].strip().strip("\"'*#`").strip() if lines else ""
    return title[:200] or None


def _clean_observations(lines: Sequence[str], *, lists_only: bool) -> str:
    out: list[str] = []
    for raw in lines:
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("```") or _LONE_TAG.match(line):
            continue
        header = None if line[:1] in (" ", "\t") else parse_date_header(line.strip("*#_ ").strip())
        if header is not None:
            if out:
                out.append("")
            out.append(f"Date: {format_date(header)}")
            continue
        if lists_only and not _LIST_LINE.match(line):
            continue
        out.append(_cap(line))
    return "\n".join(out)


def parse_observer_output(
    text: str, *, extractor_slugs: Sequence[str] = (), source: str | None = None
) -> ObserverOutput:
    """Read an Observer (or Reflector) answer; never raises.

    A repetition loop gives ``degenerate=True`` and no observations. The answer is read as a
    line protocol (:func:`split_sections`): section tags open and close only at the start of a
    line, case-insensitively, and a tag quoted inside a line, or inside another closed section,
    is content; so the current task comes from the Observer's own ``<current-task>`` section,
    never from text quoted in an observation. Several ``<observations>`` blocks are joined;
    without any, list lines and ``Date:`` headers outside every section are kept. A ``Date:``
    header counts only unindented. Lines are capped at :data:`MAX_LINE_CHARS` and top-level lines
    ordered by time within each date (:func:`order_lines_by_time`).

    ``source`` is the text the answer was written from (the Observer's rendered input): a
    repeated line that the source repeats as often is faithful, not a loop (see
    :func:`~langchain_om._core.degenerate.find_loop`). Never pass the log as the source of a
    reflection.
    """
    raw = text
    if is_degenerate(raw, source=source):
        return ObserverOutput("", None, None, None, {}, True, raw)
    slugs = [
        t for t in dict.fromkeys(tag_name(s) for s in extractor_slugs) if t not in BUILTIN_SECTIONS
    ]
    sections, rest = split_sections(raw, [*BUILTIN_SECTIONS, *slugs])
    found: dict[str, list[str]] = {}
    for name, content in sections:
        found.setdefault(name, []).append(content)
    extracted: dict[str, str] = {}
    for slug in slugs:
        value = _hint(found.get(slug, []))
        if value is not None:
            extracted[slug] = value
    hints = {tag: found.get(tag, []) for tag in ("current-task", "suggested-response")}
    hints["thread-title"] = found.get("thread-title", [])
    blocks = found.get("observations", [])
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


def without_hints(output: ObserverOutput, hints: HintSwitch) -> ObserverOutput:
    """``output`` without the continuation hints ``hints`` turns off.

    A model may write a hint section it was not asked for (a structured schema has the fields,
    the compact prompt its own layout); a hint that is off is never kept.
    """
    if hints.current_task and hints.suggested_response:
        return output
    return replace(
        output,
        current_task=output.current_task if hints.current_task else None,
        suggested_response=output.suggested_response if hints.suggested_response else None,
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
