"""A deterministic stand-in for the Observer and Reflector models.

:func:`memory_model` returns a :class:`FunctionChatModel` that answers like a well-behaved
Observer (one observation per message it is shown, under the same ``Date:`` headers) and
Reflector (keeps the dates, every 🔴 line and about ``keep`` of the other lines, shortened,
without their times when nothing else shortened; when that is still above the size the prompt
asks for, it keeps every k-th line). It needs no network and gives the same output for the same
input, so apps that use OM can be tested offline.
"""

from __future__ import annotations

import re
from typing import Literal

from langchain_core.messages import BaseMessage

from langchain_om.offline import history_lines
from langchain_om.testing._models import FunctionChatModel
from langchain_om.testing._replies import RecordedCall


def _section(text: str, start: str, stops: tuple[str, ...]) -> str:
    index = text.find(start)
    if index < 0:
        return ""
    body = text[index + len(start) :]
    ends = [body.find(s) for s in stops if body.find(s) >= 0]
    return body[: min(ends)] if ends else body


def _observe(history: str, words: int) -> str:
    out: list[str] = []
    for role, time, text in history_lines(history):
        if role == "Date":
            out.append(text)
            continue
        short = " ".join(text.split()[:words])
        priority = "🔴" if role == "User" else "🟡"
        out.append(f"* {priority} ({time}) {role} said: {short}")
    return "\n".join(out)


def _reflect(
    observations: str, keep: float, words: int, target: int | None = None, even: bool = False
) -> str:
    lines = [line for line in observations.splitlines() if line.strip()]
    kept: list[str] = []
    bullets = [line for line in lines if not line.startswith("Date:")]
    step = max(1, round(1 / keep)) if keep > 0 else len(bullets) + 1
    index = 0
    for line in lines:
        if line.startswith("Date:"):
            if not kept or kept[-1] != line:
                kept.append(line)
            continue
        if "🔴" in line[:6] or index % step == 0:
            kept.append(" ".join(line.split()[: 4 + words]))
        index += 1
    while kept and kept[-1].startswith("Date:"):
        kept.pop()
    if not any(not k.startswith("Date:") for k in kept) and bullets:
        kept.append(bullets[-1])
    if len(" ".join(kept).split()) >= len(" ".join(lines).split()) - 1:  # barely condensed:
        # drop the times as well, so the reflection is smaller than its input
        kept = [" ".join(p for p in line.split() if not _TIME.fullmatch(p)) for line in kept]
    if target is not None:
        kept = _thinned_within(kept, target, even)
    return "\n".join(kept)


_TARGET = re.compile(r"under about (\d+) tokens")
_TIME = re.compile(r"\(\d{1,2}:\d{2}\)")


def _estimate(lines: list[str]) -> int:
    """A generous token estimate (about three characters a token; marks cost more)."""
    return sum(len(line) // 3 + 2 for line in lines)


def _thinned_within(lines: list[str], target: int, even: bool = False) -> list[str]:
    """Every k-th observation line (the first and the newest always), so they fit ``target``.

    ``Date:`` headers stay with the lines they date; the thinning is even, like a Reflector
    that drops detail everywhere rather than forgetting the start. With ``even`` it keeps a
    share of about ``0.65 * target / size`` of the lines instead (as many as surely fit).
    """
    bullets = [i for i, line in enumerate(lines) if not line.startswith("Date:")]
    size = _estimate([lines[i] for i in bullets])
    # ``even`` aims below the target: the estimate runs low on lines with marks and times,
    # and a reply over the target costs the caller a retry at the next compression level.
    goal = max(1, int(0.65 * target) if even else target)
    if size < goal or len(bullets) < 3:
        return lines
    if even:
        share = goal / size
        keep = {i for n, i in enumerate(bullets) if int((n + 1) * share) > int(n * share)}
    else:
        keep = set(bullets[:: -(-size // max(1, target)) + 1])
    keep.add(bullets[-1])
    out: list[str] = []
    header: str | None = None
    for i, line in enumerate(lines):
        if line.startswith("Date:"):
            header = line
        elif i in keep:
            if header is not None:
                out.append(header)
                header = None
            out.append(line)
    return out


def _label(history: str) -> str:
    """A catalog label: the first words of the first user message shown."""
    for role, _, text in history_lines(history):
        if role == "User":
            return "User: " + " ".join(text.split()[:8])
    return "Conversation"


def memory_model(
    *,
    words: int = 8,
    keep: float = 0.3,
    name: str = "memory",
    even: bool = False,
    stream_by: Literal["word", "reply"] = "word",
) -> FunctionChatModel:
    """A scripted model that acts as both Observer and Reflector.

    Args:
        words: words of each message (or observation) kept in an observation line.
        keep: fraction of the lines other than 🔴 ones a reflection keeps (one in
            ``round(1/keep)``; every 🔴 line and the date headers are kept).
        name: the model name it reports.
        even: when a reflection must shrink to the size its prompt asks for, keep as many
            lines as fit, spread evenly (long logs of distinct facts: every k-th line keeps
            too few to pass the retention check); by default every k-th line.
        stream_by: how a streamed reply arrives: ``"word"`` chunks (as providers stream) or
            the whole ``"reply"`` in one chunk (benchmarks beside a model answering at once).

    Example:
        >>> from langchain_om import ObservationalMemory
        >>> from langchain_om.testing import memory_model
        >>> memory = ObservationalMemory(model=memory_model(), observation={"message_tokens": 50,
        ...     "buffer_tokens": False})
        >>> from langchain_core.messages import HumanMessage
        >>> snap = memory.observe(thread_id="t", messages=[HumanMessage("I live in Lisbon.")])
        >>> "User said: I live in Lisbon." in snap.observations
        True
        >>> chunks = memory_model(stream_by="reply").stream("## New Messages to Observe")
        >>> len(list(chunks))  # the whole reply, then the closing chunk
        2
    """
    if not 0 < keep <= 1:
        raise ValueError("keep must be in (0, 1]")

    def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
        prompt = messages[-1].text if messages else ""
        if "## Observations to Condense" in prompt:
            body = _section(prompt, "## Observations to Condense", ("\n## ",))
            asked = _TARGET.search(prompt)
            text = _reflect(body, keep, words, int(asked.group(1)) if asked else None, even)
            return f"<observations>\n{text}\n</observations>"
        history = _section(prompt, "## New Messages to Observe", ("\n### ", "\n---", "\n## "))
        text = _observe(history, words)
        task = "Continue the conversation"
        summary = ""
        if "- <archive-summary>:" in prompt:  # archive mode asks for the group's catalog label
            summary = f"\n<archive-summary>{_label(history)}</archive-summary>"
        return (
            f"<observations>\n{text}\n</observations>\n"
            f"<current-task>{task}</current-task>\n"
            "<suggested-response>Answer the latest message.</suggested-response>" + summary
        )

    return FunctionChatModel(function=reply, model_name=name, stream_by=stream_by)
