"""The scorer, case by case against the rules of LoCoMo's evaluation script, and the judge."""

from __future__ import annotations

import pytest

from langchain_om.eval import (
    contains,
    exact_match,
    judge_messages,
    locomo_score,
    multi_answer_f1,
    normalize_answer,
    parse_verdict,
    token_f1,
)


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("The Cat, and a Dog!", "cat dog"),  # commas, case, punctuation, a/an/the/and
        ("an apple", "apple"),
        ("theatre and the band", "theatre band"),  # whole words only
        ("  Porto\t\nLisbon ", "porto lisbon"),  # whitespace collapsed
        ("7 May, 2023.", "7 may 2023"),
        ("it's Ana's", "its anas"),  # apostrophes are punctuation
    ],
)
def test_normalisation(text: str, normal: str) -> None:
    assert normalize_answer(text) == normal


def test_f1_stems_words() -> None:
    # Porter stemming: running/runs -> run, dogs/dog -> dog; without it nothing would match.
    assert token_f1("running dogs", "the dog runs") == 1.0
    assert token_f1("studies", "studying") == 1.0


def test_f1_counts_shared_tokens() -> None:
    # "lisbon portugal" vs "lisbon": P = 1/2, R = 1 -> F1 = 2/3.
    assert token_f1("Lisbon, Portugal", "Lisbon") == pytest.approx(2 / 3)
    # 6 predicted tokens, 4 reference tokens (a dropped), 2 shared: P=1/3, R=1/2 -> 2/5.
    assert token_f1("big news left bakery coffee roastery", "a coffee roastery in Lisbon") == (
        pytest.approx(2 / 5)
    )
    # Repeated tokens count once per occurrence on each side: "pixel pixel" vs "pixel".
    assert token_f1("pixel pixel", "pixel") == pytest.approx(2 / 3)


@pytest.mark.parametrize(("pred", "ref"), [("", "Porto"), ("Porto", ""), ("the", "a"), ("x", "y")])
def test_f1_zero_without_shared_tokens(pred: str, ref: str) -> None:
    assert token_f1(pred, ref) == 0.0


def test_multi_hop_splits_on_commas() -> None:
    assert locomo_score("Lisbon, Porto", "Porto, Lisbon", 1) == 1.0
    # Only one of two reference parts found: (1 + 0) / 2.
    assert locomo_score("Porto", "Porto, Lisbon", 1) == 0.5
    # One prediction part against each reference part: F1("porto lisbon", "porto") = 2/3 each.
    assert locomo_score("Porto and Lisbon", "Porto, Lisbon", 1) == pytest.approx(2 / 3)
    assert multi_answer_f1("Porto, Lisbon", "Porto") == 1.0  # the best part counts
    # Category 4 does not split: "porto lisbon" (commas dropped) vs "lisbon porto" -> 1.
    assert locomo_score("Porto, Lisbon", "Lisbon, Porto", 4) == 1.0
    assert locomo_score("Porto", "Porto, Lisbon", 4) == pytest.approx(2 / 3)


def test_open_domain_uses_the_first_answer_part() -> None:
    assert locomo_score("Ana", "Ana; a violin teacher", 3) == 1.0
    assert locomo_score("a violin teacher", "Ana; a violin teacher", 3) == 0.0
    # Other categories keep the ';' part: "ana" vs "ana violin teacher" -> P=1, R=1/3 -> 1/2.
    assert locomo_score("Ana", "Ana; a violin teacher", 4) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("prediction", "score"),
    [
        ("No information available.", 1.0),
        ("That was not mentioned in the conversation", 1.0),
        ("NOT MENTIONED", 1.0),
        ("There is no information available about it.", 1.0),
        ("I don't know", 0.0),
        ("A tabby", 0.0),
        ("no information", 0.0),
    ],
)
def test_adversarial(prediction: str, score: float) -> None:
    assert locomo_score(prediction, "", 5) == score


def test_temporal_and_single_hop_are_plain_f1() -> None:
    assert locomo_score("7 May, 2023", "7 May 2023", 2) == 1.0
    # "ran sunday 14 march" vs "14 march 2026": P=2/4, R=2/3 -> 4/7.
    assert locomo_score("ran Sunday 14 March", "14 March 2026", 2) == pytest.approx(4 / 7)
    assert locomo_score("Pixel", "pixel", 4) == 1.0


def test_exact_match_and_contains() -> None:
    assert exact_match("The Grand Fjord Hotel.", "grand fjord hotel") == 1.0
    assert exact_match("Grand Fjord", "Grand Fjord Hotel") == 0.0
    assert contains("She works in Lisbon now", "Lisbon") == 1.0
    assert contains("Lisbonne", "Lisbon") == 0.0  # whole words
    assert contains("anything", "") == 0.0


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("yes", True),
        ("Yes.", True),
        ("**YES** it is", True),
        ("no, because", False),
        ("No", False),
        ("maybe", None),
        ("", None),
        ("yesterday", None),
        ("The answer: yes", None),
    ],
)
def test_parse_verdict(reply: str, verdict: bool | None) -> None:
    assert parse_verdict(reply) is verdict


def test_judge_prompt_per_question_type() -> None:
    def prompt(qtype: str, abstention: bool = False) -> str:
        return judge_messages("Q?", "REF", "RESP", question_type=qtype, abstention=abstention)[
            0
        ].text

    default = prompt("single-session-user")
    assert "Question: Q?\nCorrect answer: REF\nResponse: RESP" in default
    assert prompt("multi-session") == default
    assert prompt("some-new-type") == default
    update, temporal = prompt("knowledge-update"), prompt("temporal-reasoning")
    assert "latest value" in update and update != default
    assert "off by at most one day" in temporal
    assert "Rubric: REF" in prompt("single-session-preference")
    abstain = prompt("temporal-reasoning", abstention=True)
    assert "Explanation: REF" in abstain and "does not know" in abstain
