"""The edit lifecycle, fast: a few seeds per front door on the in-memory store."""

from __future__ import annotations

import random

import pytest

from langchain_om import ObservationalMemory
from tests.helpers import Clock
from tests.lifecycle import FaultyModel
from tests.lifecycle_edits import EDIT_DOORS, EDIT_OPTIONS, LABEL_IDS, EditDoor, run_edit_lifecycle

SEEDS = range(3)


@pytest.mark.parametrize("door", EDIT_DOORS)
def test_edits_stick_and_nothing_is_lost_in_memory(door: EditDoor) -> None:
    steps = 0
    for seed in SEEDS:
        clock = Clock()
        faulty = FaultyModel(random.Random(2_000 + seed), rate=0.2)
        memory = ObservationalMemory(
            model=faulty.model(), clock=clock, sleep=lambda s: None, **EDIT_OPTIONS
        )
        thread = f"{LABEL_IDS[seed % len(LABEL_IDS)]}:{seed}"
        done = run_edit_lifecycle(memory, door, seed, clock=clock, faulty=faulty, thread_id=thread)
        steps += done.steps
        memory.close()
    assert steps >= 8 * len(SEEDS)
