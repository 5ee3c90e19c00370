"""A custom preamble: a template around the observation log, the hints and today's date.

Placeholders (``str.format`` syntax, ``{{`` and ``}}`` for literal braces):

* ``{observations}`` — the ``<observations>`` block (one cache block per group);
* ``{hints}`` — the ``<current-task>`` / ``<suggested-response>`` block;
* ``{current_date}`` — today in the record's timezone, e.g. ``Tuesday, December 1, 2026``;
* ``{default_preamble}`` — the built-in usage guidance, to extend rather than replace it.

Without ``{observations}`` the log follows the template; without ``{hints}`` the hints come
last. The template is checked when the config is built: an unknown placeholder, a positional
``{}``, a format spec or a stray brace is an error that names it.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from datetime import date

__all__ = [
    "PREAMBLE_PLACEHOLDERS",
    "date_text",
    "preamble_problems",
    "render_preamble",
    "template_text",
]

PREAMBLE_PLACEHOLDERS = ("observations", "hints", "current_date", "default_preamble")
"""The placeholders a custom preamble may use."""

_BLOCKS = ("observations", "hints")


def preamble_problems(template: str) -> list[str]:
    """What is wrong with ``template``, as phrases after "has" (empty when it is usable)."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        return [f"a malformed template ({exc})"]
    problems: list[str] = []
    unknown = []
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        if field not in PREAMBLE_PLACEHOLDERS:
            unknown.append("{" + field + "}" if field else "{}")
        elif spec or conversion:
            problems.append(f"a format spec or conversion on {{{field}}}")
    if unknown:
        problems.insert(0, "unknown placeholder(s) " + ", ".join(dict.fromkeys(unknown)))
    for name in _BLOCKS:
        if sum(field == name for _, field, _, _ in parsed) > 1:
            problems.append(f"{{{name}}} more than once")
    return problems


def date_text(today: date) -> str:
    """``Tuesday, December 1, 2026``."""
    return f"{today:%A, %B} {today.day}, {today.year}"


def template_text(template: str) -> str:
    """The template's own words (placeholders removed), to protect its line openings."""
    return "".join(literal for literal, _, _, _ in string.Formatter().parse(template))


def render_preamble(
    template: str,
    *,
    observation_blocks: Sequence[str],
    hints: str,
    today: date,
    default: str,
) -> list[str]:
    """The context blocks of a custom preamble (checked by :func:`preamble_problems`).

    Text between the block placeholders becomes blocks of its own; empty blocks are dropped.
    """
    blocks: list[str] = []
    text = ""
    used: set[str] = set()

    def flush() -> None:
        nonlocal text
        if text.strip():
            blocks.append(text.strip())
        text = ""

    values = {"current_date": date_text(today), "default_preamble": default}
    for literal, field, _, _ in string.Formatter().parse(template):
        text += literal
        if field in _BLOCKS:
            flush()
            used.add(field)
            blocks.extend(
                observation_blocks if field == "observations" else [hints] if hints else []
            )
        elif field is not None:
            text += values[field]
    flush()
    if "observations" not in used:
        blocks.extend(observation_blocks)
    if "hints" not in used and hints:
        blocks.append(hints)
    return blocks
