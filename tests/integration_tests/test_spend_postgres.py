"""The spend budget on PostgreSQL: one ledger for every memory sharing the database.

Two memories opened with ``from_postgres`` on the same database stand for two workers of a
deployment: the cycles one spends count for the other, a restart finds the budget used up,
and the unobserved messages stay in the window until the day has rolled by.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest

from langchain_om import ObservationalMemory, SpendLimitError
from langchain_om.testing import memory_model
from tests.helpers import POSTGRES_URL, Clock, require_postgres
from tests.unit_tests.test_spend_cap import OPTIONS, turn

pytestmark = pytest.mark.postgres

SPEND: dict[str, Any] = {"cycles_per_day": 2}


def _open(clock: Clock, model: Any) -> ObservationalMemory:
    return ObservationalMemory.from_postgres(
        POSTGRES_URL, model=model, clock=clock, sleep=lambda s: None, spend=SPEND, **OPTIONS
    )


def test_workers_on_one_database_share_the_budget() -> None:
    require_postgres()
    thread, clock = f"spend-{uuid.uuid4().hex[:8]}", Clock()
    first_model, second_model = memory_model(words=4), memory_model(words=4)
    first, second = _open(clock, first_model), _open(clock, second_model)
    try:
        sent: list[str] = []
        for i in range(3):
            messages = turn(i)
            sent += [m.id or "" for m in messages]
            first.add_messages(thread, messages)
            clock.now += timedelta(seconds=30)
        assert first_model.call_count == 2  # the third due cycle is over budget
        snap = second.status(thread_id=thread)
        assert snap.status.spend is not None and snap.status.spend.exhausted == "cycles_per_day"
        messages = turn(3)
        sent += [m.id or "" for m in messages]
        second.add_messages(thread, messages)  # the other worker spends nothing either
        assert second_model.call_count == 0
        with pytest.raises(SpendLimitError):
            second.observe(thread_id=thread)
        window = [m.id for m in second.status(thread_id=thread).window]
        archived = [m.id for m in second.archived_messages(thread)]
        assert archived + window == sent  # nothing lost, nothing observed over budget
        clock.now += timedelta(days=1)
        second.observe(thread_id=thread)  # the budget is back
        assert second_model.call_count == 1
    finally:
        first.close()
        second.close()
