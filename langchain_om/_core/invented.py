"""Observation lines about tool calls that no observed message contains (invented).

Small models copy the shape of the prompt's examples as content: given an example like
``Assistant searched … and found …`` they report searches nobody ran
(``Gina searched "Dance Studio Location" and found "There are many …"``). A line *reports a
tool call* when it says a search or lookup was run with a quoted query or a result
(``searched "…"``, ``looked up "…"``, ``searched for … and found "…"``), says the assistant
searched or looked something up, or names a tool being called (``called the weather tool``,
``Tool Call``/``Tool Result``).

:func:`invented_tool_lines` returns the reporting lines the batch does not back: every one
when the batch holds no tool call at all, and, when it does, the lines that name a called tool
the batch never calls (``called the weather tool`` when only ``lookup`` ran). Plain statements
by a person (``User searched for flats last week``) are not tool calls and are kept.
:func:`drop_invented_tool_lines` removes them (with their detail sub-lines) from an
:class:`~langchain_om._core.observer.ObserverOutput`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import replace

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_om._core.dates import parse_date_header
from langchain_om._core.observer import ObserverOutput

__all__ = ["drop_invented_tool_lines", "invented_tool_lines", "tool_names"]

_QUOTE = "\"'“‘«`"
_SEARCH_QUOTED = re.compile(
    rf"\b(?:searched|search(?:ed)? (?:for|the web for)|looked up|queried|googled)\s*[{_QUOTE}]",
    re.IGNORECASE,
)
_SEARCH_FOUND = re.compile(
    rf"\b(?:searched|looked up|queried)\b.{{0,160}}\b(?:found|returned|got|showed)\s*[{_QUOTE}]",
    re.IGNORECASE,
)
_ASSISTANT_SEARCHED = re.compile(
    r"\bassistant\s+(?:searched|looked up|queried|fetched|browsed|googled)\b", re.IGNORECASE
)
_TOOL_WORDS = re.compile(r"\b(?:tool[ _-]?call|tool[ _-]?result|function call)s?\b", re.IGNORECASE)
_CALLED_TOOL = re.compile(
    r"\b(?:called|used|ran|invoked|run|call(?:ing)?)\s+(?:the\s+|a\s+)?"
    r"[`\"']?([A-Za-z_][\w.-]*)[`\"']?\s+(?:tool|function|api)\b",
    re.IGNORECASE,
)
_TOP_LEVEL = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s")
_DETAIL = re.compile(r"^\s+(?:[-*+•]|\d{1,3}[.)])\s")


def tool_names(messages: Sequence[BaseMessage]) -> set[str]:
    """Names of the tools the messages call (assistant tool calls and tool results)."""
    names: set[str] = set()
    for message in messages:
        if isinstance(message, AIMessage):
            names.update(str(call["name"]) for call in message.tool_calls if call.get("name"))
        elif isinstance(message, ToolMessage) and message.name:
            names.add(message.name)
    return names


def _reports_tool_call(line: str) -> bool:
    return bool(
        _SEARCH_QUOTED.search(line)
        or _SEARCH_FOUND.search(line)
        or _ASSISTANT_SEARCHED.search(line)
        or _TOOL_WORDS.search(line)
        or _CALLED_TOOL.search(line)
    )


def _backed(line: str, called: Collection[str]) -> bool:
    if not called:
        return False
    named = _CALLED_TOOL.search(line)
    if named is None:
        return True  # a tool did run; the line does not name another one
    return named.group(1).lower() in {name.lower() for name in called}


def invented_tool_lines(observations: str, called: Collection[str]) -> list[str]:
    """The observation lines reporting a tool call that ``called`` (the batch's tools) lacks.

    Args:
        observations: the log lines of one reply (``Date:`` headers allowed).
        called: names of the tools the observed messages call (:func:`tool_names`).
    """
    return [
        line
        for line in observations.splitlines()
        if line.strip() and _reports_tool_call(line) and not _backed(line, called)
    ]


def drop_invented_tool_lines(
    output: ObserverOutput, messages: Sequence[BaseMessage]
) -> tuple[ObserverOutput, int]:
    """``output`` without the observations about tool calls ``messages`` do not contain.

    A dropped top-level line takes its indented detail lines with it, and a ``Date:`` header
    left without observations goes too.

    Returns:
        The output and the number of lines dropped (0: ``output`` itself).
    """
    invented = set(invented_tool_lines(output.observations, tool_names(messages)))
    if not invented:
        return output, 0
    kept: list[str] = []
    dropped = 0
    skipping = False
    for line in output.observations.splitlines():
        detail = bool(_DETAIL.match(line))
        if detail and skipping:
            continue
        if line in invented:
            dropped += 1
            skipping = skipping or bool(_TOP_LEVEL.match(line))
            continue
        if not detail:
            skipping = False
        kept.append(line)
    return replace(output, observations="\n".join(_without_empty_days(kept)).strip()), dropped


def _without_empty_days(lines: Sequence[str]) -> list[str]:
    """``lines`` without ``Date:`` headers that no longer head any observation."""
    out: list[str] = []
    pending: list[str] = []
    for line in lines:
        if parse_date_header(line) is not None:
            pending = [line]
        elif pending and not line.strip():
            pending.append(line)
        else:
            out.extend(pending)
            pending = []
            out.append(line)
    return out
