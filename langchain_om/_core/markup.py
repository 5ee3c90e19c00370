"""Reversible neutralisation of the memory's own markup in text it did not write.

The memory talks to its models in a small markup: section tags (``<observations>``,
``</observations>``, ``<current-task>``, ``<suggested-response>``, ``<thread-title>``, the
extractor sections), ``Date:`` headers at the start of a line, group headings (``## Group``,
``_range:``) and the preamble that introduces the memory. User, tool and observation text that
contains this markup could close a block early or forge one, so it is neutralised before it
reaches the Observer and before it is rendered into the agent's context.

Neutralising puts a backslash in front of each piece of markup: ``\\<current-task>``,
``\\Date: Nov 2, 2026``. A backslash run already in front of markup gets one more, so
:func:`restore` (which removes one) gives back exactly the original text:
``restore(neutralise(t)) == t`` for every ``t`` with the same options. Text without markup is
left unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

__all__ = [
    "GROUP_MARKERS",
    "MEMORY_TAGS",
    "line_openings",
    "neutralise",
    "restore",
]

MEMORY_TAGS: tuple[str, ...] = (
    "observations",
    "current-task",
    "suggested-response",
    "thread-title",
    "thread",
    "archived-observations",
    "archived-observation",
)
"""Section tags the memory reads or writes (extractor slugs come on top)."""

GROUP_MARKERS: tuple[str, ...] = ("## Group", "_range:", "_kind:")
"""Line openings of the group headings the memory renders."""

DATE_MARKER = "Date:"

_OPENING_WORDS = 4


def line_openings(*texts: str) -> tuple[str, ...]:
    """The first words of every line of ``texts`` (a preamble), as line openings to neutralise.

    Lines that hold a section tag are covered by the tag rule and left out; list dashes are
    dropped; openings shorter than 8 characters are too common to be markup and left out.
    """
    found: list[str] = []
    for text in texts:
        for line in text.splitlines():
            words = line.strip().removeprefix("- ").split()
            opening = " ".join(words[:_OPENING_WORDS])
            if len(opening) >= 8 and "<" not in opening and opening not in found:
                found.append(opening)
    return tuple(found)


@lru_cache(maxsize=64)
def _tag_re(tags: tuple[str, ...]) -> re.Pattern[str]:
    names = sorted({t.strip().lower().replace("_", "-") for t in tags if t.strip()}, key=len)
    alternatives = "|".join(
        "[-_]".join(re.escape(part) for part in name.split("-")) for name in reversed(names)
    )
    return re.compile(rf"(\\*)(</?(?:{alternatives}))(?=[\s>/]|$)", re.IGNORECASE)


@lru_cache(maxsize=64)
def _line_re(openings: tuple[str, ...]) -> re.Pattern[str] | None:
    if not openings:
        return None
    alternatives = "|".join(re.escape(o) for o in sorted(set(openings), key=len, reverse=True))
    return re.compile(rf"^([ \t]*(?:[-*] )?)(\\*)({alternatives})", re.IGNORECASE | re.MULTILINE)


def _options(
    tags: Iterable[str], openings: Sequence[str], dates: bool
) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    lines = (*((DATE_MARKER,) if dates else ()), *GROUP_MARKERS, *openings)
    return _tag_re(tuple(tags)), _line_re(tuple(lines))


def neutralise(
    text: str,
    *,
    tags: Iterable[str] = MEMORY_TAGS,
    openings: Sequence[str] = (),
    dates: bool = True,
) -> str:
    """``text`` with the memory's markup escaped (see the module docstring).

    Args:
        text: user, tool or observation text.
        tags: section tags to escape wherever they occur (case-insensitive, ``_`` or ``-``).
        openings: further line openings to escape (the preamble's, from
            :func:`line_openings`); group headings are always escaped.
        dates: escape ``Date:`` at the start of a line. Keep it on for conversation text and
            hints; turn it off for an observation log, whose headers are real.
    """
    tag_re, line_re = _options(tags, openings, dates)
    # a tag needs a "<": most texts have none, and the pattern is tried at every position
    out = tag_re.sub(lambda m: "\\" + m.group(1) + m.group(2), text) if "<" in text else text
    if line_re is not None:
        out = line_re.sub(lambda m: m.group(1) + "\\" + m.group(2) + m.group(3), out)
    return out


def restore(
    text: str,
    *,
    tags: Iterable[str] = MEMORY_TAGS,
    openings: Sequence[str] = (),
    dates: bool = True,
) -> str:
    """Undo :func:`neutralise` (called with the same options)."""
    tag_re, line_re = _options(tags, openings, dates)
    out = text
    if line_re is not None:
        out = line_re.sub(
            lambda m: m.group(1) + m.group(2)[1:] + m.group(3) if m.group(2) else m.group(0),
            out,
        )
    if "<" not in out:
        return out
    return tag_re.sub(lambda m: m.group(1)[1:] + m.group(2) if m.group(1) else m.group(0), out)
