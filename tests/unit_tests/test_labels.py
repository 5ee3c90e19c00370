"""Memoised namespace labels equal labels encoded afresh."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_om._core import labels

IDS = st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0xE000))


@settings(max_examples=300)
@given(st.one_of(IDS, st.sampled_from(["t1", "~t", "a.b", "x" * 400, "ana@acme.eu"])))
def test_a_memoised_label_equals_a_fresh_one(value: str) -> None:
    first = labels.encode_label(value)
    assert labels.encode_label(value) == first == labels._encode(value)
    labels._LABELS.clear()
    assert labels.encode_label(value) == first


def test_the_label_memo_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(labels, "_LABELS_MAX", 3)
    labels._LABELS.clear()
    for i in range(10):
        assert labels.encode_label(f"~id{i}") == labels._encode(f"~id{i}")
    assert len(labels._LABELS) <= 3
