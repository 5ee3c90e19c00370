"""Two users, one thread id, on SQLite and PostgreSQL: 0 reads and 0 deletes across users."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_om import ObservationalMemory
from langchain_om.testing import memory_model
from tests.helpers import FIXED
from tests.isolation_scenarios import run_two_users

URL = os.environ.get("LANGCHAIN_OM_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
OPTIONS: dict[str, Any] = {
    "model": memory_model(),
    "observation": {"message_tokens": 300, "buffer_tokens": False},
    "reflection": {"observation_tokens": 3_000},
    "clock": lambda: FIXED,
    "sleep": lambda s: None,
}


def test_two_users_on_sqlite(tmp_path: Path) -> None:
    with ObservationalMemory.from_sqlite(str(tmp_path / "om.db"), **OPTIONS) as memory:
        result = run_two_users(memory)
    assert (result["reads"], result["deletes"], result["refused"]) == (0, 0, 11)


@pytest.fixture
def postgres() -> Iterator[tuple[Any, Any]]:
    psycopg = pytest.importorskip("psycopg")
    saver_cls = pytest.importorskip("langgraph.checkpoint.postgres").PostgresSaver
    store_cls = pytest.importorskip("langgraph.store.postgres").PostgresStore
    try:
        psycopg.connect(URL, connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is required in CI at {URL}: {exc}")
        pytest.skip(f"no PostgreSQL at {URL}")
    with saver_cls.from_conn_string(URL) as saver, store_cls.from_conn_string(URL) as store:
        saver.setup()
        store.setup()
        yield saver, store


@pytest.mark.postgres
def test_two_users_on_postgres(postgres: tuple[Any, Any]) -> None:
    saver, store = postgres
    memory = ObservationalMemory(store=store, checkpointer=saver, **OPTIONS)
    result = run_two_users(memory)
    assert (result["reads"], result["deletes"], result["refused"]) == (0, 0, 11)
