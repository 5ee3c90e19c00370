"""Spend control: a budget of memory's own model calls, and the turn cadence.

Every run here uses a real SQLite file (``from_sqlite``) and a hand-moved clock: the budget is
kept in the store beside the thread or resource, so it survives a restart and is shared by
every memory opened on the same file.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om import ObservationalMemory, SpendLimitError
from langchain_om._core.spend import charge, coerce_ledger, empty_ledger, spend_check
from langchain_om.cli import main
from langchain_om.display import render_text
from langchain_om.errors import OMConfigError, OMUsageError
from langchain_om.events import (
    ObservationStartEvent,
    OMEvent,
    SpendLimitEvent,
    StatusEvent,
    parse_event,
)
from langchain_om.testing import FunctionChatModel, memory_model
from tests.helpers import (
    Clock,
    actor_reply,
    archived_ids,
    build_agent,
    build_graph,
    check_invariants,
    expected_messages,
    user_turn,
)

TURNS = 41
DUE = TURNS - 1
OPTIONS: dict[str, Any] = {
    "observation": {"message_tokens": 60, "buffer_tokens": False},
    "reflection": {"observation_tokens": 20_000},
}
"""From the second turn on, every turn crosses the threshold and observes the turn before it
(the current turn stays): a run of 41 turns makes 40 Observer calls."""


def turn(i: int) -> list[BaseMessage]:
    return [
        HumanMessage(f"Turn {i}: I moved box {i} to the garage shelf near the bikes.", id=f"h{i}"),
        AIMessage(f"Noted: box {i} is on the garage shelf.", id=f"a{i}"),
    ]


class Run:
    """A memory on a SQLite file, its Observer, its events and its clock."""

    def __init__(self, path: Path, clock: Clock | None = None, **options: Any) -> None:
        self.path, self.clock = path, clock or Clock()
        self.model: FunctionChatModel = memory_model(words=4)
        self.events: list[OMEvent] = []
        self.options = {**OPTIONS, **options}
        self.memory = self.open()
        self.sent: list[str] = []

    def open(self) -> ObservationalMemory:
        return ObservationalMemory.from_sqlite(
            str(self.path),
            model=self.model,
            clock=self.clock,
            sleep=lambda s: None,
            on_debug_event=self.events.append,
            **self.options,
        )

    def turn(self, i: int, thread: str = "t", resource: str | None = None) -> Any:
        messages = turn(i)
        self.sent += [m.id or "" for m in messages]
        snap = self.memory.add_messages(thread, messages, resource_id=resource)
        self.clock.now += timedelta(seconds=30)
        return snap

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def keeps_every_message(memory: ObservationalMemory, thread: str, sent: list[str]) -> None:
    """Every message sent is in the window or archived (observed), once, in order."""
    window = [m.id for m in memory.status(thread_id=thread).window]
    assert archived_ids(memory, thread) + window == sent


# -- the acceptance test ---------------------------------------------------------------------


def test_a_run_without_a_budget_makes_forty_calls(tmp_path: Path) -> None:
    run = Run(tmp_path / "free.db")
    for i in range(TURNS):
        run.turn(i)
    assert run.model.call_count == DUE
    assert run.memory.status(thread_id="t").status.spend is None  # no budget, no ledger
    run.memory.close()


def test_cycles_per_hour_caps_the_calls_then_none_until_the_window_rolls(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run = Run(tmp_path / "m.db", spend={"cycles_per_hour": 5})
    caplog.set_level(logging.WARNING, logger="langchain_om")
    calls_at_limit = None
    for i in range(TURNS):
        run.turn(i)
        if calls_at_limit is None and run.of(SpendLimitEvent):
            calls_at_limit = run.model.call_count
    # five cycles were made (one call each), then none: the turns went on without observing
    assert run.model.call_count == calls_at_limit == 5
    skipped = run.of(SpendLimitEvent)
    assert len(skipped) == DUE - 5
    first = skipped[0]
    assert (first.budget, first.used, first.limit, first.per) == ("cycles_per_hour", 5, 5, "thread")
    assert first.operation_type == "observation" and first.resumes_at is not None
    assert parse_event(first.to_part()) == first
    warnings = [r for r in caplog.records if "spend budget" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
    assert "box" not in warnings[0].getMessage()  # no user text in the log
    # nothing left the window unobserved
    keeps_every_message(run.memory, "t", run.sent)
    snap = run.memory.status(thread_id="t")
    assert snap.record["observed_message_count"] == len(archived_ids(run.memory, "t"))
    spend = snap.status.spend
    assert spend is not None and spend.exhausted == "cycles_per_hour"
    assert [(b.name, b.used, b.remaining) for b in spend.budgets] == [("cycles_per_hour", 5, 0)]
    # an hour after the fifth cycle the window has room again: calls resume
    run.clock.now += timedelta(hours=1)
    before = run.model.call_count
    run.turn(TURNS)
    assert run.model.call_count == before + 1
    assert run.of(ObservationStartEvent)[-1].thread_id == "t"
    keeps_every_message(run.memory, "t", run.sent)
    resumed = run.memory.status(thread_id="t").status.spend
    assert resumed is not None and resumed.exhausted is None
    assert resumed.cycles_last_hour == 1 and resumed.cycles_last_day == 6
    run.memory.close()


def test_tokens_per_hour_stops_calls_once_spent(tmp_path: Path) -> None:
    free = Run(tmp_path / "free.db")
    free.turn(0)
    per_cycle = free.memory.status(thread_id="t").status
    free.memory.close()
    run = Run(tmp_path / "m.db", spend={"tokens_per_hour": 3_000})
    for i in range(TURNS):
        run.turn(i)
    spend = run.memory.status(thread_id="t").status.spend
    assert spend is not None and spend.exhausted == "tokens_per_hour"
    calls = run.model.call_count
    assert 0 < calls < DUE
    # the last cycle started below the limit and finished: it may go over by its own cost
    cost = spend.tokens_last_hour / calls
    assert spend.tokens_last_hour < 3_000 + 2 * cost
    assert per_cycle.spend is None
    assert len(run.of(SpendLimitEvent)) == DUE - calls
    keeps_every_message(run.memory, "t", run.sent)
    run.memory.close()


def test_the_budget_survives_a_restart_and_is_shared_by_processes(tmp_path: Path) -> None:
    run = Run(tmp_path / "m.db", spend={"cycles_per_day": 2})
    for i in range(3):
        run.turn(i)
    assert run.model.call_count == 2
    run.memory.close()
    # a restart (a new memory on the same file) finds the budget used up
    again = run.open()
    other = Run(tmp_path / "m.db", clock=run.clock, spend={"cycles_per_day": 2})
    assert again.status(thread_id="t").status.spend.exhausted == "cycles_per_day"  # type: ignore[union-attr]
    again.add_messages("t", turn(3))
    other.turn(4)  # a second process on the same file, same thread
    assert run.model.call_count == 2 and other.model.call_count == 0
    other.clock.now += timedelta(days=1)
    other.turn(5)
    assert other.model.call_count == 1
    again.close()
    other.memory.close()


def test_explicit_observe_raises_naming_the_budget_unless_over_budget(tmp_path: Path) -> None:
    run = Run(tmp_path / "m.db", spend={"cycles_per_hour": 1})
    run.turn(0)
    run.memory.add_messages("t", turn(1))
    with pytest.raises(SpendLimitError) as caught:
        run.memory.observe(thread_id="t")
    error = caught.value
    assert error.budget == "spend.cycles_per_hour" and (error.used, error.limit) == (1, 1)
    assert error.resumes_at and "spend.cycles_per_hour" in error.message
    assert "over_budget=True" in error.message
    assert run.model.call_count == 1
    keeps_every_message(run.memory, "t", [*run.sent, "h1", "a1"])
    snap = run.memory.observe(thread_id="t", over_budget=True)
    assert run.model.call_count == 2 and not snap.window
    assert snap.status.spend is not None and snap.status.spend.cycles_last_hour == 2
    with pytest.raises(SpendLimitError):
        run.memory.reflect(thread_id="t")
    run.memory.reflect(thread_id="t", over_budget=True)
    assert run.model.call_count == 3
    run.memory.close()


async def test_async_observe_raises_too(tmp_path: Path) -> None:
    run = Run(tmp_path / "m.db", spend={"cycles_per_hour": 1})
    await run.memory.aadd_messages("t", turn(0))
    await run.memory.aadd_messages("t", turn(1))
    with pytest.raises(SpendLimitError):
        await run.memory.aobserve(thread_id="t")
    await run.memory.aobserve(thread_id="t", over_budget=True)
    assert run.model.call_count == 2
    await run.memory.aclose()


def test_inspect_shows_usage_and_what_remains(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the command line reads the windows by the wall clock: the run happens just before it
    clock = Clock(datetime.now(UTC) - timedelta(minutes=5))
    run = Run(tmp_path / "m.db", clock, spend={"cycles_per_hour": 5, "tokens_per_day": 1_000_000})
    for i in range(4):
        run.turn(i)
    snap = run.memory.status(thread_id="t")
    line = next(x for x in render_text(snap).splitlines() if x.startswith("spend (thread): "))
    assert " / 1,000,000 tokens today · 3 / 5 cycles this hour" in line
    run.memory.close()
    # the command line opens the file without the app's options: it shows the stored limits
    assert main(["inspect", "--db", str(tmp_path / "m.db"), "--thread", "t", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    spend = data["status"]["spend"]
    assert spend["cycles_last_hour"] == 3 and spend["exhausted"] is None
    budgets = {b["name"]: b for b in spend["budgets"]}
    assert budgets["cycles_per_hour"]["remaining"] == 2
    assert budgets["tokens_per_day"]["used"] == spend["tokens_last_day"] > 0
    assert main(["inspect", "--db", str(tmp_path / "m.db"), "--thread", "t"]) == 0
    assert "3 / 5 cycles this hour" in capsys.readouterr().out


def test_status_events_carry_the_budget(tmp_path: Path) -> None:
    run = Run(tmp_path / "m.db", spend={"cycles_per_hour": 3})
    for i in range(4):
        run.turn(i)
    last = run.of(StatusEvent)[-1].spend
    assert last is not None and last.exhausted == "cycles_per_hour" and last.cycles_last_hour == 3
    run.memory.close()


@pytest.mark.parametrize("door", ["agent", "graph"])
def test_agents_and_graphs_keep_to_the_budget(tmp_path: Path, door: str) -> None:
    run = Run(tmp_path / "m.db", spend={"cycles_per_hour": 2})
    actor = FunctionChatModel(function=actor_reply)
    app = (build_agent if door == "agent" else build_graph)(run.memory, actor)
    config: Any = {"configurable": {"thread_id": "g"}}
    for i in range(12):
        state = app.invoke({"messages": [HumanMessage(user_turn(i))]}, config)
        run.clock.now += timedelta(seconds=30)
    assert run.model.call_count == 2
    assert run.of(SpendLimitEvent)
    assert check_invariants(run.memory, "g", state["messages"]) == expected_messages(12)
    spend = run.memory.status(thread_id="g").status.spend  # read from the checkpoint's thread
    assert spend is not None and spend.cycles_last_hour == 2 and spend.exhausted
    run.memory.close()


# -- background work, the resource, and options -------------------------------------------------


def test_background_buffers_are_budgeted_and_charged(tmp_path: Path) -> None:
    run = Run(
        tmp_path / "m.db",
        observation={"message_tokens": 400, "buffer_tokens": 60},
        spend={"cycles_per_hour": 2},
    )
    run.memory.close()
    run.memory = ObservationalMemory.from_sqlite(
        str(tmp_path / "m.db"),
        model=run.model,
        clock=run.clock,
        sleep=lambda s: None,
        background="manual",
        on_debug_event=run.events.append,
        **run.options,
    )
    for i in range(12):
        run.turn(i)
        run.memory.run_background()
    spend = run.memory.status(thread_id="t").status.spend
    assert spend is not None and spend.cycles_last_hour == 2
    assert run.model.call_count == 2
    assert any(e.background for e in run.of(SpendLimitEvent))
    keeps_every_message(run.memory, "t", run.sent)
    run.memory.close()


def test_resource_scope_budgets_the_resource_across_its_threads(tmp_path: Path) -> None:
    run = Run(tmp_path / "m.db", scope="resource", spend={"cycles_per_hour": 3})
    for i in range(12):
        run.turn(i, thread="a" if i % 2 else "b", resource="u")
    assert run.model.call_count == 3
    skipped = run.of(SpendLimitEvent)
    assert skipped and {e.per for e in skipped} == {"resource"}
    assert {e.thread_id for e in skipped} == {"a", "b"}
    for thread in ("a", "b"):
        spend = run.memory.status(thread_id=thread, resource_id="u").status.spend
        assert spend is not None and spend.per == "resource" and spend.cycles_last_hour == 3
    run.clock.now += timedelta(hours=1)
    run.turn(12, thread="a", resource="u")
    assert run.model.call_count == 4
    run.memory.close()


def test_a_resource_budget_in_thread_scope_is_shared_by_the_users_threads(tmp_path: Path) -> None:
    run = Run(tmp_path / "m.db", spend={"cycles_per_hour": 2, "per": "resource"})
    for i in range(6):  # each thread's second turn observes its first
        run.turn(i, thread="abc"[i % 3], resource="u")
    assert run.model.call_count == 2
    assert [e.thread_id for e in run.of(SpendLimitEvent)] == ["c"]
    run.turn(6, thread="d", resource="someone-else")
    run.turn(7, thread="d", resource="someone-else")
    assert run.model.call_count == 3  # another user's budget
    with pytest.raises(OMUsageError, match="needs a resource id"):
        run.memory.add_messages("e", turn(4))
    run.memory.close()


def test_forget_deletes_the_threads_ledger(tmp_path: Path) -> None:
    run = Run(tmp_path / "m.db", spend={"cycles_per_hour": 1})
    run.turn(0)
    run.memory.forget(thread_id="t")
    spend = run.memory.status(thread_id="t").status.spend
    assert spend is not None and spend.cycles_last_hour == 0
    run.memory.close()


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"spend": {"tokens_per_hour": 0}}, "spend.tokens_per_hour"),
        ({"spend": {"cycles_per_day": 2.5}}, "spend.cycles_per_day"),
        ({"spend": {"tokens_per_hour": 10, "tokens_per_day": 5}}, "spend.tokens_per_hour"),
        ({"spend": {"per": "user"}}, "spend.per"),
        ({"scope": "resource", "spend": {"per": "thread"}}, "spend.per"),
        ({"cadence": {"every_n_turns": 0}}, "cadence.every_n_turns"),
        ({"cadence": {"every_n_turns": 2, "session_end": True}}, "cadence.session_end"),
    ],
)
def test_bad_options_name_the_fix(options: dict[str, Any], option: str) -> None:
    with pytest.raises(OMConfigError) as caught:
        ObservationalMemory(options, model=memory_model())
    assert caught.value.option == option
    assert (
        "Use" in caught.value.message
        or "Lower" in caught.value.message
        or "Keep" in (caught.value.message)
        or "Leave" in caught.value.message
    )


def test_camel_case_spend_options() -> None:
    memory = ObservationalMemory(
        {"spend": {"tokensPerHour": 100, "cyclesPerDay": 9}, "cadence": {"everyNTurns": 2}},
        model=memory_model(),
    )
    assert memory.config.spend.limits == {"tokens_per_hour": 100, "cycles_per_day": 9}
    assert memory.config.cadence.every_n_turns == 2


# -- cadence --------------------------------------------------------------------------------


def observed_turns(
    run: Run, turns: int, thread: str = "t", resource: str | None = None
) -> list[int]:
    """The turns (1-based) whose step started an observation."""
    found = []
    for i in range(turns):
        before = len(run.of(ObservationStartEvent))
        run.turn(i, thread=thread, resource=resource)
        if len(run.of(ObservationStartEvent)) > before:
            found.append(i + 1)
    return found


def test_every_n_turns_observes_only_on_those_turns(tmp_path: Path) -> None:
    run = Run(tmp_path / "m.db", cadence={"every_n_turns": 3})
    assert observed_turns(run, 10) == [3, 6, 9]
    assert run.model.call_count == 3
    keeps_every_message(run.memory, "t", run.sent)
    # an explicit observe() is not held back by the cadence
    snap = run.memory.observe(thread_id="t")
    assert not snap.window and run.model.call_count == 4
    run.memory.close()


def test_every_n_turns_in_resource_scope(tmp_path: Path) -> None:
    run = Run(tmp_path / "m.db", scope="resource", cadence={"every_n_turns": 2})
    assert observed_turns(run, 6, resource="u") == [2, 4, 6]
    run.memory.close()


def test_session_end_observes_only_when_asked(tmp_path: Path) -> None:
    run = Run(tmp_path / "m.db", cadence={"session_end": True})
    assert observed_turns(run, 6) == []
    assert run.model.call_count == 0
    keeps_every_message(run.memory, "t", run.sent)
    snap = run.memory.observe(thread_id="t")  # the session ended
    assert run.model.call_count == 1 and not snap.window
    run.memory.close()


def test_cadence_and_budget_together(tmp_path: Path) -> None:
    run = Run(tmp_path / "m.db", cadence={"every_n_turns": 2}, spend={"cycles_per_hour": 2})
    assert observed_turns(run, 10) == [2, 4]
    # the cadence turns after the budget ran out say so; the others are simply not due
    assert len(run.of(SpendLimitEvent)) == 3
    run.memory.close()


# -- the ledger (pure) ----------------------------------------------------------------------


def test_the_ledger_rolls_its_windows_and_says_when_there_is_room() -> None:
    limits = {"tokens_per_hour": 100, "cycles_per_day": 3}
    ledger = empty_ledger("thread")
    for at, tokens in ((0.0, 60), (30.0, 30), (1_800.0, 20)):  # two in one minute, one later
        ledger = charge(ledger, now=at, tokens=tokens, cycles=1, limits=limits)
    assert [b[2:] for b in ledger["buckets"]] == [[90.0, 2.0], [20.0, 1.0]]
    check = spend_check(ledger, limits, now=1_800.0)
    assert check.exhausted is not None and check.exhausted.name == "tokens_per_hour"
    assert check.tokens_last_hour == 110 and check.cycles_last_day == 3
    # the first minute's bucket is dated by its last charge (30 s): it leaves the hour at
    # 3630 s and the day at 86430 s, when the day has room for a cycle again
    assert check.resumes_at == 30.0 + 86_400.0
    later = spend_check(ledger, {"tokens_per_hour": 100}, now=3_630.5)
    assert later.allowed and later.tokens_last_hour == 20
    assert spend_check(ledger, limits, now=3_629.0, extra_tokens=5).tokens_last_hour == 115
    # a day later everything is pruned at the next charge
    pruned = charge(ledger, now=1_800.0 + 86_401.0, tokens=1, cycles=1, limits=limits)
    assert len(pruned["buckets"]) == 1
    assert coerce_ledger({"v": 1, "buckets": [[1, 2, "x", 4], [0, 1, 2, 3]]}, "thread")[
        "buckets"
    ] == [[0.0, 1.0, 2.0, 3.0]]
    assert coerce_ledger("garbage", "resource") == empty_ledger("resource")
