"""sanitize_value's JSON pre-check answers exactly as the walk over the value would."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_om._core import sanitize

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
