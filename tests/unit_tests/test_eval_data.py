"""Loaders of the evaluation formats, on the synthetic fixtures and on broken files."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from langchain_om.eval import EvalDataError, load_dataset, load_jsonl, load_locomo, sample_questions
from langchain_om.eval import load_longmemeval as load_lme

DATA = Path(__file__).resolve().parents[2] / "examples" / "data" / "eval"
LOCOMO = DATA / "locomo_synthetic.json"
LME = DATA / "longmemeval_synthetic.json"
JSONL = DATA / "transcript.jsonl"


def test_locomo_fixture() -> None:
    ds = load_locomo(LOCOMO)
    (conv,) = ds.conversations
    assert [len(s.turns) for s in conv.sessions] == [12, 12, 12]
    first = conv.sessions[0].turns[0]
    assert (first.speaker, first.role, first.id) == ("Maya", "user", "syn-1:D1:1")
    assert first.content == "Maya: Hi Jon! I just started a new job at a bakery in Porto."
    assert {t.role for t in conv.turns if t.speaker == "Jon"} == {"assistant"}
    # "6:30 pm on 15 March, 2026", one second per turn.
    second = conv.sessions[1].turns
    assert second[0].timestamp == datetime(2026, 3, 15, 18, 30, tzinfo=UTC)
    assert second[3].timestamp - second[0].timestamp == timedelta(seconds=3)
    cats = [(q.category, q.rule, q.abstention) for q in conv.questions]
    assert cats == [
        ("single-hop", 4, False),
        ("temporal", 2, False),
        ("multi-hop", 1, False),
        ("single-hop", 4, False),
        ("open-domain", 3, False),
        ("adversarial", 5, True),
    ]
    assert conv.questions[5].answer == ""  # category 5 has only an adversarial_answer
    assert all(q.asked_at > conv.turns[-1].timestamp for q in conv.questions)


def test_longmemeval_fixture_and_session_order(tmp_path: Path) -> None:
    ds = load_lme(LME)
    assert len(ds.conversations) == 5  # one haystack per question
    last = ds.questions[-1]
    assert (last.id, last.abstention, last.rule) == ("syn-q5_abs", True, 5)
    assert ds.questions[1].category == "knowledge-update"
    assert ds.questions[0].asked_at == datetime(2026, 4, 10, 10, 0, tzinfo=UTC)
    data = json.loads(LME.read_text())[:1]
    data[0]["haystack_dates"] = ["2026/04/04 (Sat) 11:15", "2026/03/02 (Mon) 09:00", "2026/03/15"]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data))
    (conv,) = load_lme(path).conversations
    assert [s.id for s in conv.sessions] == ["s2", "s3", "s1"]  # by date
    assert conv.turns[0].role == "user" and conv.turns[0].text.startswith("I ran the Porto")


def test_jsonl_fixture() -> None:
    ds = load_jsonl(JSONL)
    (conv,) = ds.conversations
    assert [s.id for s in conv.sessions] == ["2026-03-02", "2026-03-20"]
    q1, q2, q3 = conv.questions
    assert q1.asked_at == conv.turns[-1].timestamp  # default: the last message's time
    assert q2.asked_at == datetime(2026, 3, 21, 9, 0, tzinfo=UTC)
    assert (q2.rule, q2.category) == (2, "temporal")
    assert (q3.abstention, q3.rule, q3.category) == (True, 5, "adversarial")


@pytest.mark.parametrize(
    ("fmt", "content", "message"),
    [
        ("jsonl", '{"role": "user", "content": "hi"}\n', "needs a timestamp"),
        ("jsonl", '{"role": "robot", "content": "hi", "timestamp": 0}\n', "role must be"),
        ("jsonl", '{"question": "q?", "conversation": "x"}\n', "has no messages"),
        ("jsonl", "not json\n", "not valid JSON"),
        ("locomo", "{}", "JSON list of samples"),
        (
            "locomo",
            json.dumps(
                [
                    {
                        "sample_id": "s",
                        "conversation": {
                            "speaker_a": "A",
                            "session_1": [],
                            "session_1_date_time": "yesterday",
                        },
                    }
                ]
            ),
            "session_1_date_time: expected a date like",
        ),
        (
            "locomo",
            json.dumps(
                [
                    {
                        "sample_id": "s",
                        "conversation": {
                            "speaker_a": "A",
                            "session_1": [{"speaker": "A", "text": "x"}],
                            "session_1_date_time": "1:56 pm on 8 May, 2023",
                        },
                        "qa": [{"question": "q", "answer": "a", "category": 7}],
                    }
                ]
            ),
            "category must be 1-5",
        ),
        (
            "longmemeval",
            json.dumps([{"question_id": "q", "haystack_sessions": [[]], "haystack_dates": []}]),
            "1 haystack_sessions but 0",
        ),
        ("parquet", "", "unknown format"),
    ],
)
def test_bad_files_name_the_problem(tmp_path: Path, fmt: str, content: str, message: str) -> None:
    path = tmp_path / "data"
    path.write_text(content)
    with pytest.raises(EvalDataError, match=message):
        load_dataset(fmt, path)


def test_sampling_is_seeded_and_keeps_file_order() -> None:
    ds = load_lme(LME)
    picked = sample_questions(ds, 3, seed=1)
    assert len(picked) == 3
    assert picked == sample_questions(ds, 3, seed=1)
    order = [q.id for q in ds.questions]
    assert [q.id for q in picked] == sorted((q.id for q in picked), key=order.index)
    draws = {tuple(q.id for q in sample_questions(ds, 3, seed=s)) for s in range(6)}
    assert len(draws) > 1  # the seed matters
    assert sample_questions(ds, None, seed=1) == ds.questions
    assert sample_questions(ds, 99, seed=1) == ds.questions
