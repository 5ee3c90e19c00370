"""A budget for memory's own model calls, and observing every third turn.

``spend={"cycles_per_hour": 3}`` lets memory run at most three Observer/Reflector cycles per
rolling hour for a thread (``tokens_per_hour``, ``tokens_per_day`` and ``cycles_per_day`` work
the same way, ``per="resource"`` budgets a user across their threads). Once it is used up,
turns go on without calling a model: the messages stay in the window, unobserved, a
``data-om-spend-limit`` event says why and one WARNING is logged; an explicit ``observe()``
raises ``SpendLimitError`` (``over_budget=True`` observes anyway). The budget is kept in the
SQLite file beside the thread, so a restart or another process sees the same one. When the
hour has rolled by, memory observes again.

``cadence={"every_n_turns": 3}`` observes only on every third turn, whatever the thresholds.

    python examples/spend_cap.py
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from langchain_om import ObservationalMemory, SpendLimitError
from langchain_om.display import spend_line
from langchain_om.events import ObservationStartEvent, OMEvent, SpendLimitEvent
from langchain_om.testing import memory_model


class Clock:
    """A clock this script moves by hand (memory reads the time from it)."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def turn(i: int) -> list[Any]:
    return [
        HumanMessage(f"Turn {i}: my parcel number {i} went to the Porto depot today."),
        AIMessage(f"Noted: parcel {i} is at the Porto depot."),
    ]


OPTIONS: dict[str, Any] = {"observation": {"message_tokens": 60, "buffer_tokens": False}}

with tempfile.TemporaryDirectory() as folder:
    path = str(Path(folder) / "memory.db")
    clock, observer, events = Clock(), memory_model(words=4), list[OMEvent]()
    memory = ObservationalMemory.from_sqlite(
        path,
        model=observer,
        clock=clock,
        on_debug_event=events.append,
        spend={"cycles_per_hour": 3},
        **OPTIONS,
    )
    for i in range(10):
        snap = memory.add_messages("maya", turn(i))
        clock.now += timedelta(minutes=1)
    skipped = [e for e in events if isinstance(e, SpendLimitEvent)]
    print("memory calls in 10 turns:", observer.call_count)
    print("turns that skipped a cycle:", len(skipped), "budget:", skipped[0].budget)
    print("unobserved messages kept in the window:", len(snap.window))
    print(spend_line(memory.status(thread_id="maya").status))
    try:
        memory.observe(thread_id="maya")
    except SpendLimitError as error:
        print("observe() refused:", error.budget, "has room again at", error.resumes_at)
    memory.close()

    # A restart on the same file keeps the budget; an hour later memory observes again.
    memory = ObservationalMemory.from_sqlite(
        path, model=observer, clock=clock, spend={"cycles_per_hour": 3}, **OPTIONS
    )
    clock.now += timedelta(hours=1)
    snap = memory.add_messages("maya", turn(10))
    print("an hour later, memory calls:", observer.call_count, "window:", len(snap.window))
    memory.close()

    # Cadence: observe only on every third turn.
    events.clear()
    memory = ObservationalMemory.from_sqlite(
        path,
        model=memory_model(words=4),
        clock=clock,
        on_debug_event=events.append,
        cadence={"every_n_turns": 3},
        **OPTIONS,
    )
    observed = []
    for i in range(9):
        before = sum(isinstance(e, ObservationStartEvent) for e in events)
        memory.add_messages("leo", turn(i))
        if sum(isinstance(e, ObservationStartEvent) for e in events) > before:
            observed.append(i + 1)
    print("with every_n_turns=3, observed on turns:", observed)
    memory.close()
