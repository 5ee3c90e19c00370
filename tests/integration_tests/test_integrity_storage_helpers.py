"""Any id works on any store; any text can be stored."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.base import BaseStore, InvalidNamespaceError
from langgraph.store.memory import InMemoryStore
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore

from langchain_om._core.labels import (
    MAX_LABEL_BYTES,
    decode_label,
    encode_label,
    is_valid_label,
    legacy_label,
)
from langchain_om._core.sanitize import (
    has_unstorable,
    restore_text,
    sanitize_text,
    sanitize_value,
)
from tests.helpers import POSTGRES_URL, require_postgres

ODD_IDS = [
    "ana@acme.eu",
    "acme.eu",
    ".",
    "..",
    "",
    "a\x00b",
    "team/room 12",
    "  spaced  ",
    "Zürich · 東京 · 🦜",
    "~tilde",
    "~",
    "~2E",
    "lone \ud83d half",
    "x" * 500,
    "é" * 500,
    "🦜" * 500,
    "tab\there",
]


@pytest.mark.parametrize("value", ODD_IDS, ids=repr)
def test_odd_ids_round_trip_through_valid_labels(value: str) -> None:
    label = encode_label(value)
    assert is_valid_label(label)
    assert len(label.encode("utf-8")) <= MAX_LABEL_BYTES
    decoded = decode_label(label)
    if decoded is None:  # the digest form of a very long id
        assert len(value.encode("utf-8", "surrogatepass")) > MAX_LABEL_BYTES // 3
        assert value == "🦜" * 500
        assert label == encode_label(value)  # stable
    else:
        assert decoded == value


@pytest.mark.parametrize(
    "value", ["thread-1", "user_42", "3f2a9c1e-8d4b-4f6a-9e2d-1c7b5a3e9f00", "Ana", "team/room 12"]
)
def test_ordinary_ids_are_their_own_label(value: str) -> None:
    assert encode_label(value) == value
    assert decode_label(value) == value
    assert legacy_label(value) is None


def test_ids_that_look_encoded_are_escaped_and_keep_a_legacy_label() -> None:
    assert encode_label("~2E") != "~2E"
    assert decode_label(encode_label("~2E")) == "~2E"
    assert legacy_label("~2E") == "~2E"  # it was stored under its own name before
    assert legacy_label("acme.eu") is None  # was never storable, nothing to read back


@settings(max_examples=500)
@given(st.text(alphabet=st.characters(codec=None, min_codepoint=0), max_size=80))
def test_encoding_is_injective_and_reversible(value: str) -> None:
    label = encode_label(value)
    assert is_valid_label(label)
    assert decode_label(label) == value


@given(st.text(max_size=40), st.text(max_size=40))
def test_different_ids_get_different_labels(a: str, b: str) -> None:
    if a != b:
        assert encode_label(a) != encode_label(b)


def test_non_string_ids_are_refused() -> None:
    with pytest.raises(TypeError, match="strings"):
        encode_label(42)  # type: ignore[arg-type]


# ----------------------------------------------------------------------- real stores


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest) -> Iterator[BaseStore]:
    if request.param == "memory":
        yield InMemoryStore()
    elif request.param == "sqlite":
        with SqliteStore.from_conn_string(":memory:") as sqlite:
            sqlite.setup()
            yield sqlite
    else:
        require_postgres()
        with PostgresStore.from_conn_string(POSTGRES_URL) as postgres:
            postgres.setup()
            yield postgres


def test_every_store_accepts_every_encoded_id(store: BaseStore) -> None:
    run = uuid.uuid4().hex[:8]
    for index, value in enumerate(ODD_IDS):
        namespace = ("langchain_om_test", run, encode_label(value))
        store.put(namespace, "current", {"id": value and sanitize_text(value), "i": index})
    for index, value in enumerate(ODD_IDS):
        item = store.get(("langchain_om_test", run, encode_label(value)), "current")
        assert item is not None and item.value["i"] == index
    listed = store.list_namespaces(prefix=("langchain_om_test", run))
    decoded = {decode_label(ns[-1]) for ns in listed}
    assert {v for v in ODD_IDS if decode_label(encode_label(v)) is not None} <= decoded
    assert len(listed) == len(ODD_IDS)


def test_sqlite_and_postgres_reject_the_raw_ids(store: BaseStore) -> None:
    if isinstance(store, InMemoryStore):
        pytest.skip("the in-memory store validates through BaseStore.put only")
    with pytest.raises(InvalidNamespaceError):
        store.put(("langchain_om_test", "ana@acme.eu"), "k", {"v": 1})


def test_every_store_accepts_sanitised_text(store: BaseStore) -> None:
    nasty = {"text": "a\x00b \ud83d end", "nested": [{"k\x00": "\udc00"}], "ok": 1}
    clean, changed = sanitize_value(nasty)
    assert changed
    ns = ("langchain_om_test", uuid.uuid4().hex[:8])
    store.put(ns, "m", clean)
    item = store.get(ns, "m")
    assert item is not None
    assert item.value == clean
    assert restore_text(item.value["text"]) == nasty["text"]


# ----------------------------------------------------------------------------- sanitise


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ("plain", "plain"),
        ("a\x00b", "a⟦U+0000⟧b"),
        ("cut emoji \ud83d", "cut emoji ⟦U+D83D⟧"),
        ("\udc00 low", "⟦U+DC00⟧ low"),
        ("pair \ud83e\udd9c joined", "pair 🦜 joined"),
        ("🦜 fine", "🦜 fine"),
    ],
)
def test_sanitize_text(text: str, clean: str) -> None:
    assert sanitize_text(text) == clean
    assert not has_unstorable(sanitize_text(text))
    clean.encode("utf-8")  # storable


@settings(max_examples=300)
@given(st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0xE000)))
def test_sanitised_text_is_storable_and_restores(text: str) -> None:
    clean = sanitize_text(text)
    clean.encode("utf-8")
    assert "\x00" not in clean
    restored = restore_text(clean)
    # exact, except that a pair of halves is joined into its character
    assert (
        restored.encode("utf-16", "surrogatepass") == text.encode("utf-16", "surrogatepass")
        or restored == text
    )


def test_sanitize_value_keeps_unchanged_values_as_they_are() -> None:
    value: dict[str, Any] = {"a": ["x", 1, None, {"b": "y"}], "c": (1, "z")}
    out, changed = sanitize_value(value)
    assert out is value and not changed
    out, changed = sanitize_value({"a": ("ok", "bad\x00")})
    assert changed and out == {"a": ("ok", "bad⟦U+0000⟧")}
