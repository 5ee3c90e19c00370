"""Whether an observation line is supported by the messages it claims to observe.

A line is *grounded* when what it says can be found in the batch: it makes a claim (at least
:data:`MIN_CLAIM_WORDS` content words, names and numbers), every name it uses and every number
(other than dates and clock times, which the Observer derives from message dates) occurs in the
batch's messages, and enough of its content words occur in one message (or two adjacent ones).
The message that supports it best is the line's *support*: when a reply was cut short, the
messages up to the last supported one are the ones its lines cover.

Words are compared by a crude stem (``swimming`` ~ ``swim``, ``counseling`` ~ ``counselor``):
the comparison only has to tell copied or paraphrased content from invented content, and the
words an observation adds of its own (``User``, ``said``, ``mentioned``) are left out.

:func:`information` counts what a set of lines tells about the batch (grounded names, numbers
and content words): the measure behind the floor on lazy observations.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "MIN_CLAIM_WORDS",
    "Grounding",
    "Sources",
    "content_terms",
    "information",
    "line_content",
]

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_NAME = re.compile(r"\b[A-Z][^\W\d_]+(?:['’][^\W\d_]+)?")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
_BULLET = re.compile(r"^\s*(?:[-*+•>]+|\d{1,3}[.)])\s*")
_MARKS = re.compile("[🔴🟡🟢✅⚠❌\ufe0f]")
_CLOCK = re.compile(r"\(?\b\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]\.?m\.?)?\)?", re.IGNORECASE)
_MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
).split()
_DAYS = "monday tuesday wednesday thursday friday saturday sunday mon tue wed thu fri sat sun"
_MONTH = "|".join(_MONTHS)
_DATE_PHRASE = re.compile(
    rf"\b(?:(?:{_MONTH})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTH})\.?(?:,?\s+\d{{4}})?"
    rf"|\d{{4}}-\d{{2}}-\d{{2}}|(?:{_MONTH})\.?\s+\d{{4}})\b",
    re.IGNORECASE,
)
_RESOLVED = re.compile(r"\((?:meaning|estimated|i\.e\.|on|around|about)\b[^)]*\)", re.IGNORECASE)

_STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have haven't
    having he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll
    i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor
    not of off on once only or other ought our ours ourselves out over own same shan't she
    she'd she'll she's should shouldn't so some such than that that's the their theirs them
    themselves then there there's these they they'd they'll they're they've this those through
    to too under until up very was wasn't we we'd we'll we're we've were weren't what what's
    when when's where where's which while who who's whom why why's with won't would wouldn't
    you you'd you'll you're you've your yours yourself yourselves just really yes yeah oh okay ok
    hey hi hello thanks thank well still even now will shall get got going gonna lot lots much
    many one ones thing things something anything everything way also ever every
    """.split()
)
_META = frozenset(
    """
    user assistant said says saying mentioned mentions told tells stated states noted notes
    shared shares talked talks discussed discusses explained explains replied replies
    responded responds asked asks expressed expresses conversation message messages chat
    date observation observations today yesterday tomorrow week weeks day days month months
    year years time times earlier later
    """.split()
)
_NOT_NAMES = frozenset({*_STOPWORDS, *_META, *_MONTHS, *_DAYS.split(), "i", "date"})
_NUMBER_WORDS = {
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "twenty": "20",
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "hundred": "100",
    "half": "0.5",
    "once": "1",
    "twice": "2",
}
_STEM_CHARS = 5

MIN_CLAIM_WORDS = 3
"""A grounded line says something: at least this many content words, names and numbers
(``Tomasz: I'm not sure what to do`` says nothing that could be checked)."""


@functools.lru_cache(maxsize=16_384)
def _stem(word: str) -> str:
    """The stem of a word (memoised: a conversation repeats its words)."""
    w = word.casefold().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    for suffix, replacement, shortest in (
        ("ies", "y", 5),
        ("ing", "", 6),
        ("ed", "", 5),
        ("es", "", 5),
        ("s", "", 4),
    ):
        if w.endswith(suffix) and len(w) >= shortest and not w.endswith("ss"):
            w = w[: len(w) - len(suffix)] + replacement
            if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
                w = w[:-1]  # swimm -> swim, planned -> plan
            break
    else:
        suffix = ""
    if suffix in ("", "ing", "s") and len(w) > 3 and w.endswith("e"):
        w = w[:-1]  # like, liking -> lik (as likes, liked); agree, agreeing -> agre (as agreed)
    return w[:_STEM_CHARS] if len(w) > _STEM_CHARS else w


def _numbers(text: str) -> set[str]:
    found = {n.replace(",", "") for n in _NUMBER.findall(text)}
    for word in _WORD.findall(text.casefold()):
        if word in _NUMBER_WORDS:
            found.add(_NUMBER_WORDS[word])
    return found


def line_content(line: str) -> str:
    """The claim of an observation line: bullet, priority mark, clock time and the resolved
    date the Observer appends (``(meaning Mar 4, 2026)``) removed."""
    text = line.strip()
    previous = None
    while text and text != previous:
        previous = text
        text = _MARKS.sub("", _BULLET.sub("", text, count=1)).strip()
    text = _CLOCK.sub(" ", text)
    return _RESOLVED.sub(" ", text).strip()


def content_terms(text: str) -> set[str]:
    """The stems of the content words of ``text`` (stop words and observation verbs dropped)."""
    return {term for word in _WORD.findall(text) if (term := _term(word)) is not None}


@functools.lru_cache(maxsize=16_384)
def _term(word: str) -> str | None:
    """A word's stem, or ``None`` for a stop word, an observation verb or a short word."""
    folded = word.casefold().replace("’", "'").removesuffix("'s")
    if len(folded) > 2 and folded not in _STOPWORDS and folded not in _META:
        return _stem(folded)
    return None


@functools.lru_cache(maxsize=4096)
def _claims(line: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """Names, numbers and content stems of an observation line's content (dates excluded).

    Memoised: a reply's lines are grounded, then counted for the information they carry.
    """
    undated = _DATE_PHRASE.sub(" ", line_content(line))
    names = {n.casefold() for n in _NAME.findall(undated) if n.casefold() not in _NOT_NAMES}
    numbers = {
        n.replace(",", "")
        for n in _NUMBER.findall(undated)
        if not (len(n) == 4 and n.startswith(("19", "20")))
    }
    return frozenset(names), frozenset(numbers), frozenset(content_terms(undated))


@dataclass(frozen=True)
class Grounding:
    """How well the batch supports one observation line."""

    line: str
    grounded: bool
    support: int | None
    """Index of the message (of the batch) that supports the line best, if any does."""
    overlap: float
    """Share of the line's content words found in its best support."""
    unsupported_names: int
    unsupported_numbers: int


class Sources:
    """The messages of one batch, indexed for grounding lines against them.

    Args:
        texts: each message's text, in batch order.
    """

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)
        self._terms = [content_terms(t) for t in self.texts]
        # each message's terms with the next one's: a line may be supported by a message pair
        self._pairs = [
            here | self._terms[index + 1] if index + 1 < len(self._terms) else here
            for index, here in enumerate(self._terms)
        ]
        joined = "\n".join(self.texts)
        self._words = {w.casefold() for w in _WORD.findall(joined)}
        self._numbers = _numbers(joined)
        self._all_terms: set[str] = set().union(*self._terms) if self._terms else set()

    def __len__(self) -> int:
        return len(self.texts)

    def has_name(self, name: str) -> bool:
        """Whether ``name`` (case-folded) is a word of the batch, or a stem of one."""
        return name in self._words or any(
            w.startswith(name) or name.startswith(w) for w in self._words if len(w) >= 4
        )

    def ground(self, line: str, *, min_overlap: float) -> Grounding:
        """How the batch supports ``line``; grounded at ``min_overlap`` of its content words."""
        names, numbers, terms = _claims(line)
        missing_names = sum(1 for n in names if not self.has_name(n))
        missing_numbers = len(numbers - self._numbers)
        best, support = 0.0, None
        if terms:
            for index, (here, pair) in enumerate(zip(self._terms, self._pairs, strict=True)):
                share = len(terms & here) / len(terms)
                paired = len(terms & pair) / len(terms)
                if share > best:
                    best, support = share, index
                if paired > best + 1e-9:
                    best, support = paired, index + 1
        claims = len(terms) + len(numbers)
        grounded = (
            claims >= MIN_CLAIM_WORDS
            and best >= min_overlap
            and not missing_names
            and not missing_numbers
        )
        return Grounding(line, grounded, support, best, missing_names, missing_numbers)

    def known_terms(self, lines: Iterable[str]) -> set[str]:
        """The names, numbers and content stems of ``lines`` that the batch also holds."""
        found: set[str] = set()
        for line in lines:
            names, numbers, terms = _claims(line)
            known_names = {n for n in names if self.has_name(n)}
            found |= {f"name:{n}" for n in known_names}
            found |= {f"num:{n}" for n in numbers & self._numbers}
            found |= (terms - {_stem(n) for n in known_names}) & self._all_terms
        return found


def information(lines: Iterable[str], sources: Sources) -> int:
    """How many distinct grounded names, numbers and content words ``lines`` carry."""
    return len(sources.known_terms(lines))
