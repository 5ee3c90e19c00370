"""Namespace labels: memoised labels equal labels encoded afresh; no id takes another's data."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.memory import InMemoryStore

from langchain_om._core import labels
from langchain_om.tools import create_recall_tool
from tests.helpers import make_memory
from tests.label_ids import check_labels_injective, check_no_takeover, label_ids

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


# -- no id takes over another's data ---------------------------------------------------------


def test_ids_have_distinct_labels_and_opening_one_moves_nothing() -> None:
    """1 000 ids here; 10 000 on each store in ``integration_tests/test_label_collisions``."""
    ids = label_ids(1_000)
    assert len(ids) >= 1_000
    assert {"a.b", "~a~2Eb", "alice@example.com", "~alice@example~2Ecom"} <= set(ids)
    as_labels = {labels.encode_label(i) for i in ids} & set(ids)
    assert len(as_labels) >= len(ids) // 2  # ids that are another id's (or their own) label
    check_labels_injective(ids)
    check_no_takeover(InMemoryStore(), ids)


def test_a_legacy_label_that_is_another_ids_label_is_never_migrated() -> None:
    assert labels.encode_label("a.b") == "~a~2Eb"
    assert labels.legacy_label("~a~2Eb") is None  # it is a.b's label: never moved away
    assert labels.legacy_label("~alice@example~2Ecom") is None
    assert labels.legacy_label("~~h" + "0" * 64) is None  # a digest label of a long id
    assert labels.legacy_label("~old-thread") == "~old-thread"  # no id has it: it moves


@pytest.mark.parametrize(
    ("owner", "intruder"), [("alice@example.com", "~alice@example~2Ecom"), ("a.b", "~a~2Eb")]
)
@pytest.mark.parametrize("resources", [False, True])
def test_a_thread_named_like_another_threads_label_reads_nothing_of_it(
    owner: str, intruder: str, resources: bool
) -> None:
    memory = make_memory(observation={"message_tokens": 300, "buffer_tokens": False})
    mine, theirs = ("alice", "mallory") if resources else (None, None)
    turn = [
        HumanMessage("My card PIN is 4711. " * 40, id="h1"),
        AIMessage("Noted your card PIN, I will keep it safe.", id="a1"),
    ]
    memory.add_messages(owner, turn, resource_id=mine)
    memory.observe(thread_id=owner, resource_id=mine)
    assert [m.id for m in memory.archived_messages(owner)] == ["h1", "a1"]
    snap = memory.add_messages(intruder, [HumanMessage("hi", id="x1")], resource_id=theirs)
    assert "4711" not in snap.observations and [m.id for m in snap.window] == ["x1"]
    assert memory.archived_messages(intruder) == []
    assert [m.id for m in memory.archived_messages(owner)] == ["h1", "a1"]
    assert "4711" in memory.status(thread_id=owner, resource_id=mine).observations
    recall = create_recall_tool(memory)
    cfg: RunnableConfig = {"configurable": {"thread_id": intruder, "resource_id": theirs}}
    assert "4711" not in recall.invoke({"anchor": "start"}, cfg)
