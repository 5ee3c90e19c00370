"""Whether a reflection kept the substance of the log it condensed.

A reflection replaces the log, so whatever it drops is forgotten for good. It is accepted only
when it is

* not empty and not a repetition loop (``empty``, ``degenerate``);
* smaller than its input (``not-smaller``);
* not absurdly small: at least :data:`MIN_SIZE_SHARE` of the smaller of the input and the
  target (``too-small``; a one-line reply of a 30-line log fails here);
* still dated: when the input has ``Date:`` headers, the output has some, its newest day among
  them, and at least :data:`MIN_DAY_SHARE` of the input's days (``lost-dates``);
* still marked: when the input has 🔴 lines, the output has at least one (``lost-priorities``);
* made of the log: at most :data:`MAX_INVENTED_SHARE` of its lines may say what the log does
  not (``invented``: numbered ``Note 3 4`` lines or ``User likes item 7`` filler in place of
  facts);
* faithful to the facts, counted two ways, both of which must hold (``lost-facts``): of the
  names, numbers, dates and identifiers on the input's 🔴 lines (on all lines when there are
  none) at least :data:`MIN_RETENTION` survive, and of those lines themselves at least as many
  keep most of their content words and numbers (:data:`LINE_KEPT_SHARE`), so facts made of
  common words and small numbers count by what they say, not by a number that survives in
  another line. That share is the *retention* figure reported with every verdict. When
  the 🔴 lines alone are larger than the target (a log of nothing but critical facts), no
  reflection can keep them all and stay bounded: the share required shrinks in proportion
  (:func:`required_retention`), so the oldest facts may go while the one-line and vague
  replies are still rejected.

Compression levels ask the Reflector to keep every 🔴 fact, so a real 3-6x compression keeps
most of them; a vague summary ("discussed the move and some options") keeps few.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Literal

from langchain_om._core.dates import parse_date_header
from langchain_om._core.degenerate import is_degenerate
from langchain_om._core.grounding import content_terms, line_content

__all__ = [
    "INVENTED_OVERLAP",
    "LINE_KEPT_SHARE",
    "MIN_LINE_RETENTION",
    "MAX_INVENTED_SHARE",
    "MIN_DAY_SHARE",
    "MIN_RETENTION",
    "MIN_RETENTION_ALL_LINES",
    "MIN_SIZE_SHARE",
    "RetentionReason",
    "RetentionVerdict",
    "check_reflection",
    "key_facts",
    "required_retention",
]

RetentionReason = Literal[
    "empty",
    "degenerate",
    "not-smaller",
    "too-small",
    "lost-dates",
    "lost-priorities",
    "lost-facts",
    "invented",
]
"""Why a reflection was rejected."""

MIN_SIZE_SHARE = 0.1
"""A reflection must hold at least this share of ``min(input, target)`` tokens."""

MIN_DAY_SHARE = 0.3
"""Share of the input's days that must keep a ``Date:`` header."""

MIN_RETENTION = 0.6
"""Share of the 🔴 lines' facts that must survive."""

MIN_RETENTION_ALL_LINES = 0.4
"""Share of all lines' facts that must survive when the input has no 🔴 line."""

MIN_LINE_RETENTION = 0.4
"""Share of the judged lines (🔴, else all) that must keep their content (see
:data:`LINE_KEPT_SHARE`); lower than :data:`MIN_RETENTION`, as a terse compression rewords."""

LINE_KEPT_SHARE = 0.4
"""A line is kept when this share of its content words and numbers occurs in the reflection,
one word at least (a number alone is not the fact)."""

MAX_INVENTED_SHARE = 0.2
"""Largest share of a reflection's lines whose content the input log does not hold."""

INVENTED_OVERLAP = 0.5
"""A reflection line is made of the log when this share of its content words occurs in it."""

_HIGH = "🔴"
_LEAD = re.compile(
    r"^\s*(?:[-*+•]|\d{1,3}[.)])?\s*(?:[🔴🟡🟢✅]\ufe0f?\s*)?(?:\(\d{1,2}:\d{2}\)\s*)?"
)
_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*")
_TOKEN = re.compile(r"[^\s,;()\"“”]+")
_EDGE = "'’.,:;!?-`*"
_COMMON = frozenset(
    "user user's assistant assistant's the a an i it he she they we you this that these those "
    "his her their our my your and but or if when then also now still new next last "
    "monday tuesday wednesday thursday friday saturday sunday "
    "jan feb mar apr may jun jul aug sep sept oct nov dec january february march april june "
    "july august september october november december".split()
)


@dataclass(frozen=True)
class RetentionVerdict:
    """The judgement of one reflection."""

    accepted: bool
    reason: RetentionReason | None
    """Why it was rejected (``None`` when accepted)."""
    retention: float
    """Share of the key facts kept (1.0 when the input has none)."""
    detail: str
    """A short explanation without any of the log's text (safe for logs and events)."""
    facts: int
    """Key facts in the input (see :func:`key_facts`)."""
    kept_facts: int
    days: int
    """Dated days in the input."""
    kept_days: int


def _content(line: str) -> str:
    return _LEAD.sub("", line, count=1)


def _normal_number(text: str) -> str:
    return re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)


def key_facts(text: str, *, high_only: bool = True) -> set[str]:
    """The names, numbers, dates and identifiers of a log's 🔴 lines (or of all lines).

    Numbers are normalised (``1,200`` → ``1200``); names are capitalised words other than the
    first word of a line, speaker labels, weekdays and months (dates count by their numbers);
    identifiers are tokens holding ``/``, ``_``, ``#``, ``@`` or an inner ``.``. Everything is
    case-folded.
    """
    return set(_key_facts(text, high_only))


@functools.lru_cache(maxsize=32)
def _key_facts(text: str, high_only: bool) -> frozenset[str]:
    """:func:`key_facts`, memoised: the retries of one reflection judge the same input."""
    facts: set[str] = set()
    for line in text.splitlines():
        if high_only and _HIGH not in line[:8]:
            continue
        if parse_date_header(line.strip()) is not None:
            continue
        facts.update(_line_facts(line))
    return frozenset(facts)


@functools.lru_cache(maxsize=4096)
def _line_facts(line: str) -> frozenset[str]:
    """The key facts of one line, memoised: a log's next reflection judges most of its lines
    again."""
    facts: set[str] = set()
    content = _content(line)
    facts.update(_NUMBER.findall(_normal_number(content)))
    for index, raw in enumerate(_TOKEN.findall(content)):
        token = raw.strip(_EDGE)
        if token.endswith(("'s", "’s")):
            token = token[:-2]
        if not token or any(ch.isdigit() for ch in token):
            continue
        folded = token.casefold()
        if any(mark in token for mark in "/_#@") or "." in token:
            facts.add(folded)
        elif index > 0 and token[0].isupper() and folded not in _COMMON:
            facts.add(folded)
    return frozenset(facts)


@functools.lru_cache(maxsize=32)
def _input_days(text: str) -> tuple[object, ...]:
    """:func:`_days` of a reflection's input, memoised like :func:`_key_facts`."""
    return tuple(_days(text))


def _days(text: str) -> list[object]:
    days: list[object] = []
    for line in text.splitlines():
        day = parse_date_header(line.strip())
        if day is not None and day not in days:
            days.append(day)
    return days


def required_retention(input_text: str, *, input_tokens: int, target_tokens: int) -> float:
    """The share of key facts a reflection of ``input_text`` must keep.

    :data:`MIN_RETENTION` of the 🔴 lines' facts (:data:`MIN_RETENTION_ALL_LINES` of all facts
    when there is no 🔴 line), scaled down by ``target / size of the judged lines`` when those
    lines alone do not fit the target: a log made only of critical facts must still shrink to
    its target, which forgets some of them.
    """
    lines = [line for line in input_text.splitlines() if line.strip()]
    high_lines = [line for line in lines if _HIGH in line[:8]]
    base = MIN_RETENTION if high_lines else MIN_RETENTION_ALL_LINES
    judged = high_lines or lines
    chars = sum(len(line) for line in lines)
    if not chars or input_tokens <= 0:
        return base
    judged_tokens = input_tokens * sum(len(line) for line in judged) / chars
    room = max(1, target_tokens) / judged_tokens if judged_tokens else 1.0
    return base * min(1.0, room)


def check_reflection(
    input_text: str,
    output_text: str,
    *,
    input_tokens: int,
    output_tokens: int,
    target_tokens: int,
) -> RetentionVerdict:
    """Accept or reject a reflection of ``input_text`` (see the module docstring).

    Args:
        input_text: the observation log that was condensed.
        output_text: the reflection's observations.
        input_tokens: tokens of ``input_text``.
        output_tokens: tokens of ``output_text``.
        target_tokens: the size the reflection was asked to stay under.
    """
    high = any(_HIGH in line[:8] for line in input_text.splitlines())
    facts = _key_facts(input_text, high)
    haystack = _normal_number(output_text).casefold()
    numbers = set(_NUMBER.findall(haystack))  # once: a per-fact regex scan is quadratic
    kept = sum(1 for fact in facts if (fact in numbers if fact[0].isdigit() else fact in haystack))
    out_terms = _terms(output_text) | numbers
    judged = _judged_lines(input_text, high)
    kept_lines = sum(1 for terms in judged if _kept(terms, out_terms))
    fact_share = kept / len(facts) if facts else 1.0
    line_share = kept_lines / len(judged) if judged else 1.0
    retention = min(fact_share, line_share)
    days_in, days_out = _input_days(input_text), _days(output_text)
    kept_days = sum(1 for day in days_in if day in days_out)

    def verdict(reason: RetentionReason | None, detail: str) -> RetentionVerdict:
        return RetentionVerdict(
            reason is None, reason, retention, detail, len(facts), kept, len(days_in), kept_days
        )

    if not output_text.strip():
        return verdict("empty", "the reflection was empty")
    if is_degenerate(output_text):
        return verdict("degenerate", "the reflection was a repetition loop")
    if output_tokens >= input_tokens:
        return verdict(
            "not-smaller",
            f"the reflection ({output_tokens} tokens) is not smaller than its "
            f"input ({input_tokens})",
        )
    floor = math.ceil(MIN_SIZE_SHARE * min(input_tokens, max(1, target_tokens)))
    if output_tokens < floor:
        return verdict(
            "too-small", f"the reflection ({output_tokens} tokens) is below {floor} tokens"
        )
    if days_in:
        if not days_out:
            return verdict("lost-dates", "the reflection has no Date: headers")
        if days_in[-1] not in days_out:
            return verdict("lost-dates", "the reflection dropped the newest day")
        if kept_days < MIN_DAY_SHARE * len(days_in):
            return verdict("lost-dates", f"only {kept_days} of {len(days_in)} days kept")
    if high and not any(_HIGH in line[:8] for line in output_text.splitlines()):
        return verdict("lost-priorities", "the reflection has no 🔴 line left")
    need = required_retention(input_text, input_tokens=input_tokens, target_tokens=target_tokens)
    scale = need / (MIN_RETENTION if high else MIN_RETENTION_ALL_LINES)
    if fact_share < need or line_share < MIN_LINE_RETENTION * scale:
        return verdict(
            "lost-facts",
            f"kept {kept} of {len(facts)} key facts and {kept_lines} of {len(judged)} key "
            f"lines (need {need:.0%} of the facts, {MIN_LINE_RETENTION * scale:.0%} of the lines)",
        )
    invented, lines = _invented(input_text, output_text)
    if lines and invented > MAX_INVENTED_SHARE * lines:
        return verdict(
            "invented", f"{invented} of {lines} lines say what the log does not (filler)"
        )
    return verdict(
        None, f"kept {kept} of {len(facts)} key facts, {kept_lines} of {len(judged)} lines"
    )


def _terms(text: str) -> set[str]:
    normal = _normal_number(text)
    return content_terms(normal) | set(_NUMBER.findall(normal))


@functools.lru_cache(maxsize=4096)
def _line_terms(line: str) -> frozenset[str]:
    """The terms of an observation line's content, memoised: every reflection of a log
    judges most of the lines the one before it judged."""
    return frozenset(_terms(line_content(line)))


def _kept(terms: frozenset[str], out_terms: set[str]) -> bool:
    found = terms & out_terms
    words = any(not term[0].isdigit() for term in found)
    return words and len(found) >= LINE_KEPT_SHARE * len(terms)


@functools.lru_cache(maxsize=32)
def _judged_lines(text: str, high_only: bool) -> tuple[frozenset[str], ...]:
    """The content terms of each judged line of the input (its 🔴 lines, or all lines)."""
    out: list[frozenset[str]] = []
    for line in text.splitlines():
        if parse_date_header(line.strip()) is not None or not line.strip():
            continue
        if high_only and _HIGH not in line[:8]:
            continue
        terms = _line_terms(line)
        if terms:
            out.append(terms)
    return tuple(out)


def _invented(input_text: str, output_text: str) -> tuple[int, int]:
    """``(lines saying what the input does not, lines)`` of a reflection's output."""
    known = _input_terms(input_text)
    invented = lines = 0
    for line in output_text.splitlines():
        if parse_date_header(line.strip()) is not None:
            continue
        terms = _line_terms(line)
        if not terms:
            continue
        lines += 1
        if len(terms & known) < INVENTED_OVERLAP * len(terms):
            invented += 1
    return invented, lines


@functools.lru_cache(maxsize=32)
def _input_terms(text: str) -> frozenset[str]:
    return frozenset(_terms(text))
