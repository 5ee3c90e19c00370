"""Scores for an answer against its reference: LoCoMo's token F1, exact match, contains, judge.

LoCoMo's rules (its evaluation script), applied by :func:`locomo_score`:

- normalisation: drop commas, lowercase, remove punctuation, remove the words ``a``, ``an``,
  ``the`` and ``and``, collapse whitespace; then Porter-stem every token (NLTK's stemmer, as
  the script uses);
- token F1 on the stemmed tokens (0 when nothing is shared);
- category 1 (multi-hop): prediction and reference are split on ``,``; each reference part
  takes its best F1 against any prediction part; the score is their mean;
- category 3 (open-domain): only the reference's first ``;``-separated part counts;
- category 5 (adversarial): 1 when the prediction contains ``no information available`` or
  ``not mentioned`` (any case), else 0;
- categories 2 and 4: plain F1.

The LLM judge (:func:`judge_messages`, :func:`parse_verdict`) asks a user-chosen model one
yes/no question per answer with a fixed prompt per LongMemEval question type.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from langchain_om.errors import MissingProviderError

__all__ = [
    "ABSTENTION_PHRASES",
    "contains",
    "exact_match",
    "judge_messages",
    "locomo_score",
    "multi_answer_f1",
    "normalize_answer",
    "parse_verdict",
    "stem_tokens",
    "token_f1",
]

ABSTENTION_PHRASES = ("no information available", "not mentioned")
"""What an adversarial (category 5) answer must contain to score 1."""

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation: no commas, lowercase, no punctuation or articles, single spaces."""
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    try:
        from nltk.stem.porter import PorterStemmer  # noqa: PLC0415 - optional extra "eval"
    except ImportError as exc:
        raise MissingProviderError(
            "LoCoMo's F1 stems words with NLTK's Porter stemmer: pip install 'langchain-om[eval]' "
            "(or pip install nltk; no NLTK data download is needed)."
        ) from exc
    return PorterStemmer()


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer().stem(word))


def stem_tokens(text: str) -> list[str]:
    """The normalised, Porter-stemmed tokens of ``text``."""
    return [_stem(w) for w in normalize_answer(text).split()]


def token_f1(prediction: str, reference: str) -> float:
    """Token F1 of two answers after normalisation and stemming (0 when nothing is shared)."""
    pred, ref = stem_tokens(prediction), stem_tokens(reference)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, reference: str) -> float:
    """Category 1: mean over reference parts of the best F1 against any prediction part."""
    preds = [p.strip() for p in prediction.split(",")]
    refs = [r.strip() for r in reference.split(",")]
    return sum(max(token_f1(p, r) for p in preds) for r in refs) / len(refs)


def locomo_score(prediction: str, reference: str, category: int) -> float:
    """The LoCoMo score of ``prediction`` for a question of ``category`` (1-5)."""
    if category == 5:
        lowered = prediction.lower()
        return 1.0 if any(p in lowered for p in ABSTENTION_PHRASES) else 0.0
    if category == 1:
        return multi_answer_f1(prediction, reference)
    if category == 3:
        reference = reference.split(";")[0].strip()
    return token_f1(prediction, reference)


def exact_match(prediction: str, reference: str) -> float:
    """1 when both normalise to the same text (no stemming), else 0."""
    return float(normalize_answer(prediction) == normalize_answer(reference))


def contains(prediction: str, reference: str) -> float:
    """1 when the normalised reference occurs in the normalised prediction (as whole words)."""
    ref = normalize_answer(reference)
    if not ref:
        return 0.0
    return float(f" {ref} " in f" {normalize_answer(prediction)} ")


# --- the LLM judge ---------------------------------------------------------------------------

_JUDGE_HEAD = (
    "You grade an answer to a question about a long conversation between a user and an "
    "assistant. Reply with exactly one word: yes or no."
)
_JUDGE_RULES: dict[str, str] = {
    "default": (
        "Reply yes if the response contains the correct answer or an equivalent one. A response "
        "that gives only part of the correct answer, or adds a conflicting answer, is wrong."
    ),
    "temporal-reasoning": (
        "Reply yes if the response contains the correct answer or an equivalent one. Dates and "
        "durations count as correct when they are off by at most one day (or one unit of what "
        "is counted, e.g. weeks). A response that gives only part of the answer is wrong."
    ),
    "knowledge-update": (
        "The user's information changed over time and the correct answer is the latest value. "
        "Reply yes if the response gives the latest value, even if it also mentions older ones "
        "as earlier values; reply no if it gives an older value as the current one."
    ),
    "single-session-preference": (
        "The correct answer is a rubric describing what a good personalised response does. "
        "Reply yes if the response recalls and uses the user's personal information as the "
        "rubric asks; it need not cover every point of the rubric."
    ),
    "abstention": (
        "The conversation does not contain the information the question asks for; the "
        "explanation says why. Reply yes if the response says it does not know or cannot "
        "answer from the conversation; reply no if it gives an answer."
    ),
}


def judge_messages(
    question: str, reference: str, response: str, *, question_type: str, abstention: bool
) -> list[BaseMessage]:
    """The judge's prompt for one answer (fixed per question type; abstention overrides)."""
    rule = (
        _JUDGE_RULES["abstention" if abstention else question_type]
        if (abstention or question_type in _JUDGE_RULES)
        else _JUDGE_RULES["default"]
    )
    label = (
        "Explanation"
        if abstention
        else ("Rubric" if question_type == "single-session-preference" else "Correct answer")
    )
    text = (
        f"{_JUDGE_HEAD}\n\n{rule}\n\nQuestion: {question}\n{label}: {reference}\n"
        f"Response: {response}\n\nIs the response correct? Answer yes or no."
    )
    return [HumanMessage(text)]


_VERDICT = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


def parse_verdict(text: str) -> bool | None:
    """``True``/``False`` for a reply that starts with yes/no, else ``None`` (not a verdict)."""
    match = _VERDICT.match(text.strip())
    return None if match is None else match.group(1).lower() == "yes"
