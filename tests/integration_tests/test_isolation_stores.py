"""Two users, one thread id, on SQLite and PostgreSQL: 0 reads and 0 deletes across users."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from langchain_om import ObservationalMemory
from tests.helpers import memory_options
from tests.isolation_scenarios import run_two_users

OPTIONS = memory_options(observation={"message_tokens": 300, "buffer_tokens": False})


def test_two_users_on_sqlite(tmp_path: Path) -> None:
    with ObservationalMemory.from_sqlite(str(tmp_path / "om.db"), **OPTIONS) as memory:
        result = run_two_users(memory)
    assert (result["reads"], result["deletes"], result["refused"]) == (0, 0, 11)


@pytest.mark.postgres
def test_two_users_on_postgres(postgres: tuple[Any, Any]) -> None:
    saver, store = postgres
    memory = ObservationalMemory(store=store, checkpointer=saver, **OPTIONS)
    result = run_two_users(memory)
    assert (result["reads"], result["deletes"], result["refused"]) == (0, 0, 11)
