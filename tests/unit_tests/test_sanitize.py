"""sanitize_value's JSON pre-check answers exactly as the walk over the value would."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.base import GetOp, Op, PutOp

from langchain_om._core import sanitize
from langchain_om._plans.effects import storable

TEXT = st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0xE000))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.one_of(TEXT, st.integers()), inner, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=400)
@given(VALUES)
def test_sanitize_value_equals_the_walk(value: Any) -> None:
    out, changed = sanitize.sanitize_value(value)
    walked, walk_changed = sanitize._sanitize(value)
    assert changed == walk_changed
    assert repr(out) == repr(walked)
    if not changed:
        assert out is value


def test_values_json_cannot_hold_as_they_are_are_walked() -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    for value, expected in [
        ({"at": when, "t": "a\x00"}, {"at": when, "t": "a⟦U+0000⟧"}),
        ({("k",): "v"}, {("k",): "v"}),
        ({"spelled": "\\u0000 is text"}, {"spelled": "\\u0000 is text"}),
        ({"cut": ["\ud83d"]}, {"cut": ["⟦U+D83D⟧"]}),
    ]:
        out, changed = sanitize.sanitize_value(value)
        assert out == expected
        assert changed == (out != value)


@pytest.mark.parametrize(
    "keys",
    [
        ["m1", "m2", "m3"],
        ["m1", "a\x00b", "m3"],
        ["\ud83d", "\ude00"],  # two halves in two keys: each is still a lone surrogate
        ["ok", "cut emoji \ud83d"],
    ],
)
def test_get_batches_are_sanitised_key_by_key(keys: list[str]) -> None:
    ops: list[Op] = [GetOp(("om", "buffer"), key) for key in keys]
    out = [op for op in storable(ops) if isinstance(op, GetOp)]
    assert len(out) == len(keys)
    assert [op.key for op in out] == [sanitize.sanitize_text(k) for k in keys]
    assert all(not sanitize.has_unstorable(op.key) for op in out)
    assert all(op.namespace == ("om", "buffer") for op in out)


def test_a_mixed_batch_sanitises_puts_and_gets() -> None:
    ops: list[Op] = [GetOp(("om",), "a\x00"), PutOp(("om",), "k", {"text": "x\x00y"})]
    get, put = storable(ops)
    assert isinstance(get, GetOp) and get.key == "a⟦U+0000⟧"
    assert isinstance(put, PutOp) and put.value == {"text": "x⟦U+0000⟧y"}
