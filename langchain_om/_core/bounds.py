"""Size bounds on text memory keeps that no Observer reply was judged for.

Observer and Reflector replies are judged before they enter the log (their lines capped at
:data:`~langchain_om._core.observer.MAX_LINE_CHARS`, the reply at a size plausible for its
input). Text that reaches the record another way is held to bounds of the same kind, per line
and per document:

* a line the agent's ``memory`` tool writes (``correct``) is one observation line: at most
  :data:`MAX_LINE_TOKENS` tokens, the size of the largest reply accepted for a tiny batch;
* a working-memory document (written by the Observer, the application or the tool) and the
  value of any extractor (a text section or a schema extractor's JSON) is at most
  :data:`MAX_VALUE_TOKENS` tokens (which also bounds its lines: a line of ``MAX_LINE_CHARS``
  characters is already larger).

Every value is shown to the agent at each model call, so an unbounded one (a 200 000-character
correction, an 800 KB schema value) would crowd out the conversation and every later cycle.
A value over its bound is refused, never cut silently: the caller reports it (a tool error, an
``OMUsageError``, an extraction failure) and keeps what was there.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from langchain_om._core.observer import MAX_LINE_CHARS

__all__ = [
    "MAX_LINE_CHARS",
    "MAX_LINE_TOKENS",
    "MAX_VALUE_TOKENS",
    "line_problem",
    "value_problem",
    "value_text",
]

MAX_LINE_TOKENS = 256
"""Most tokens of one observation line the ``memory`` tool writes."""

MAX_VALUE_TOKENS = 2_000
"""Most tokens of a working-memory document or an extractor's value (as JSON when typed)."""


def value_text(value: Any) -> str:
    """The text a value is measured by: itself for a string, else its JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def line_problem(line: str, count: Callable[[str], int]) -> str | None:
    """Why ``line`` is too large for one observation line, or ``None`` when it fits."""
    if len(line) > MAX_LINE_CHARS:
        return (
            f"the line has {len(line)} characters; an observation line holds at most "
            f"{MAX_LINE_CHARS}"
        )
    tokens = count(line)
    if tokens > MAX_LINE_TOKENS:
        return (
            f"the line has {tokens} tokens; an observation line holds at most "
            f"{MAX_LINE_TOKENS} (write one short fact)"
        )
    return None


def value_problem(value: Any, count: Callable[[str], int], *, what: str) -> str | None:
    """Why ``value`` is too large to keep as ``what``, or ``None`` when it fits."""
    tokens = count(value_text(value))
    if tokens > MAX_VALUE_TOKENS:
        return f"{what} has {tokens} tokens; it may hold at most {MAX_VALUE_TOKENS}"
    return None
