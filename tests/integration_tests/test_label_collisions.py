"""No id takes over another id's data, on every store: 10 000 ids, each one's label an id too.

``alice@example.com`` is stored under ``~alice@example~2Ecom``, ``a.b`` under ``~a~2Eb``; a
thread literally named like that label is a different thread. Labels are injective, and the
legacy-label migration a first access runs never moves data from a label that is another id's
label today (see :mod:`tests.label_ids`). On InMemoryStore, a SQLite file and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore

from langchain_om import ObservationalMemory
from tests.helpers import POSTGRES_URL, memory_options, require_postgres
from tests.label_ids import check_labels_injective, check_no_takeover, label_ids, remove_items


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    if request.param == "memory":
        yield InMemoryStore()
    elif request.param == "sqlite":
        with SqliteStore.from_conn_string(str(tmp_path / "labels.db")) as sqlite:
            sqlite.setup()
            yield sqlite
    else:
        require_postgres()
        with PostgresStore.from_conn_string(POSTGRES_URL) as postgres:
            postgres.setup()
            yield postgres


@pytest.mark.slow
def test_ten_thousand_ids_never_take_over_each_other(store: BaseStore) -> None:
    ids = label_ids(10_000)
    assert len(ids) >= 10_000
    check_labels_injective(ids)
    try:
        check_no_takeover(store, ids)
    finally:
        remove_items(store, ids)


@pytest.mark.parametrize(
    ("owner", "intruder"), [("alice@example.com", "~alice@example~2Ecom"), ("a.b", "~a~2Eb")]
)
def test_a_thread_named_like_alices_label_leaves_her_history(
    store: BaseStore, owner: str, intruder: str
) -> None:
    memory = ObservationalMemory(
        store=store, **memory_options(observation={"message_tokens": 300, "buffer_tokens": False})
    )
    try:
        memory.forget(thread_id=owner)
        memory.forget(thread_id=intruder)
        turn = [
            HumanMessage("My card PIN is 4711. " * 40, id="h1"),
            AIMessage("Noted your card PIN, I will keep it safe.", id="a1"),
        ]
        memory.add_messages(owner, turn, resource_id="alice")
        memory.observe(thread_id=owner, resource_id="alice")
        snap = memory.add_messages(intruder, [HumanMessage("hi", id="x1")], resource_id="mallory")
        assert "4711" not in snap.observations and [m.id for m in snap.window] == ["x1"]
        assert memory.archived_messages(intruder) == []
        assert [m.id for m in memory.archived_messages(owner)] == ["h1", "a1"]
        assert "4711" in memory.status(thread_id=owner, resource_id="alice").observations
    finally:
        memory.forget(thread_id=owner)
        memory.forget(thread_id=intruder)
        memory.close()
