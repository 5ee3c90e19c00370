"""The lifecycle invariant, fast: a few seeds per front door on the in-memory store."""

from __future__ import annotations

import random

import pytest

from langchain_om import ObservationalMemory
from tests.helpers import Clock
from tests.lifecycle import DOORS, OPTIONS, Door, FaultyModel, run_lifecycle

SEEDS = range(7)


@pytest.mark.parametrize("door", DOORS)
def test_lifecycle_loses_nothing_in_memory(door: Door) -> None:
    steps = 0
    for seed in SEEDS:
        clock = Clock()
        faulty = FaultyModel(random.Random(1_000 + seed))
        memory = ObservationalMemory(
            model=faulty.model(), clock=clock, sleep=lambda s: None, **OPTIONS
        )
        # Odd ids (dots, an email address) work on the in-memory store.
        thread = f"user.{seed}@acme.eu" if seed % 2 else None
        done = run_lifecycle(memory, door, seed, clock=clock, faulty=faulty, thread_id=thread)
        steps += done.steps
    assert steps >= 8 * len(SEEDS)
