"""Branch-aware recall: a checkpoint fork's search and pages return only what its branch holds.

Fork at message 36 of 48, continue both branches (each observes after the fork), then random
search and page queries on each branch: 0 results from the other branch. (The acceptance run,
100 queries per branch on a SQLite file and on PostgreSQL, is in the integration tests.)
"""

from __future__ import annotations

import pytest

from langchain_om import ObservationalMemory
from langchain_om.testing import HashEmbeddings, memory_model
from tests.helpers import FIXED
from tests.recall_fuzz import run_branch_fuzz


def _memory() -> ObservationalMemory:
    return ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 250, "buffer_tokens": False},
        reflection={"observation_tokens": 100_000},
        retrieval={"vector": True, "min_score": 0.0},
        embeddings=HashEmbeddings(dims=64),
        clock=lambda: FIXED,
        sleep=lambda s: None,
    )


@pytest.mark.parametrize("door", ["agent", "graph"])
def test_a_fork_never_recalls_the_other_branch(door: str) -> None:
    report = run_branch_fuzz(_memory(), door, queries=40, seed=7)
    assert report.leaks == []
    assert report.calls == {"orig": 40, "fork": 40}
    assert report.items > 120  # the queries read real data, they are not all errors
