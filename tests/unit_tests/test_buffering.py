"""Async buffering and activation: non-blocking, the activation choice, invariants, races."""

from __future__ import annotations

import random
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om._core.thresholds import choose_activation, chunk_chain, should_buffer
from langchain_om.storage import archive_ns, archived_message, buffer_ns
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def archived_ids(memory: ObservationalMemory, thread_id: str) -> list[str]:
    items = sorted(memory.store.search(archive_ns(thread_id), limit=1_000_000), key=lambda i: i.key)
    return [archived_message(i).id or "" for i in items]


# -- the activation choice --------------------------------------------------------------


@pytest.mark.parametrize(
    ("chunks", "pending", "floor", "force", "expected"),
    [
        # target removal 800: the boundary at 800 is exact
        ([400, 400, 200], 1_000, 200, False, 2),
        # over boundary (8_500) overshoots the 8_000 target by 500 <= 0.95*floor: take it
        ([5_000, 3_500, 1_000], 10_000, 2_000, False, 2),
        # over boundary overshoots by 2_000 > 0.95*floor: take the under boundary
        ([3_000, 7_000], 10_000, 2_000, False, 1),
        # over would leave 500 < the 1_000 minimum window: take the under boundary
        ([5_000, 4_500], 10_000, 2_000, False, 1),
        # with a floor under 1_000 the minimum is the floor itself: no overshoot allowed
        ([300, 600, 100], 1_000, 200, False, 1),
        # absolute retention (floor 1_000 of 5_000): target 4_000
        ([2_000, 2_000, 500], 5_000, 1_000, False, 2),
        # minimum remaining window: the over boundary would leave 50 < min(1000, floor)
        ([500, 450], 1_000, 300, False, 1),
        # forced (beyond block_after): the over boundary if it still leaves the minimum,
        # even when it overshoots by more than 0.95*floor (unforced takes the under one)
        ([50_000, 49_000], 100_000, 25_000, True, 2),
        ([50_000, 49_000], 100_000, 25_000, False, 1),
        # a single chunk that leaves nothing above the minimum is still activated
        ([1_000], 1_000, 200, False, 1),
        ([], 1_000, 200, False, 0),
    ],
)
def test_activation_choice(
    chunks: list[int], pending: int, floor: int, force: bool, expected: int
) -> None:
    choice = choose_activation(chunks, pending=pending, floor=floor, force_max=force)
    assert choice.count == expected
    assert choice.removed_tokens == sum(chunks[:expected])
    assert choice.remaining_tokens == max(0, pending - sum(chunks[:expected]))


def test_buffer_trigger_interval_halves_near_threshold() -> None:
    assert not should_buffer(unbuffered=500, pending=3_000, threshold=10_000, interval=2_000)
    assert should_buffer(unbuffered=2_000, pending=3_000, threshold=10_000, interval=2_000)
    # within 1.1 intervals of the threshold the interval halves
    assert should_buffer(unbuffered=1_000, pending=8_000, threshold=10_000, interval=2_000)
    assert should_buffer(unbuffered=10, pending=10, threshold=10_000, interval=2_000, idle=True)
    assert not should_buffer(unbuffered=0, pending=0, threshold=10, interval=2, idle=True)


def test_chunk_chain_keeps_the_contiguous_prefix() -> None:
    a = {"message_ids": ["m1", "m2"]}
    b = {"message_ids": ["m3"]}
    stale = {"message_ids": ["m0"]}
    gap = {"message_ids": ["m5"]}
    chain, rest = chunk_chain(["m1", "m2", "m3", "m4", "m5"], [b, gap, a, stale])
    assert chain == [a, b]
    assert rest == [gap, stale]


# -- non-blocking ------------------------------------------------------------------------


def test_buffering_does_not_block_the_turn() -> None:
    observer = memory_model()
    observer.delay = 2.0
    memory = ObservationalMemory(
        model=observer, observation={"message_tokens": 400, "buffer_tokens": 100}
    )
    events: list[str] = []
    memory.on_debug_event = lambda e: events.append(e.type)
    actor = FunctionChatModel(function=lambda m, i: f"Answer {i.index}: " + "ok " * 20)
    agent = create_agent(
        actor,
        [],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )
    cfg = {"configurable": {"thread_id": "t"}}
    durations = []
    turn = 0
    while not memory.background_running("t"):
        start = time.monotonic()
        agent.invoke({"messages": [HumanMessage(f"Turn {turn}: " + "words " * 20)]}, cfg)
        durations.append(time.monotonic() - start)
        turn += 1
        assert turn < 20
    assert durations[-1] < 1.0, "the turn that started a buffer waited for the Observer"
    memory.wait_for_background()
    assert "data-om-buffering-end" in events
    observer_calls = observer.call_count
    # Keep talking until the threshold: the buffered chunk activates without an Observer call.
    while "data-om-activation" not in events:
        start = time.monotonic()
        agent.invoke({"messages": [HumanMessage(f"Turn {turn}: " + "words " * 20)]}, cfg)
        assert time.monotonic() - start < 1.0
        turn += 1
        assert turn < 40
    assert "data-om-observation-start" not in events  # no synchronous observation
    assert observer.call_count - observer_calls <= 1  # at most a new background buffer
    memory.close()


# -- randomized lifecycle ----------------------------------------------------------------


def lifecycle(seed: int) -> None:
    rng = random.Random(seed)
    clock = Clock()
    failing = {"observer": False, "reflector": False}
    base = memory_model()

    def reply(messages: list[BaseMessage], info: RecordedCall) -> Any:
        is_reflector = "## Observations to Condense" in messages[-1].text
        if failing["reflector" if is_reflector else "observer"]:
            raise RuntimeError("scripted model failure")
        return base.function(messages, info)  # type: ignore[misc]

    message_tokens = rng.choice([300, 500, 800])
    memory = ObservationalMemory(
        model=FunctionChatModel(function=reply),
        observation={
            "message_tokens": message_tokens,
            "buffer_tokens": rng.choice([0.2, 0.3, 100]),
            "buffer_activation": rng.choice([0.8, 0.5, 1.0]),
            "block_after": rng.choice([1.2, 1.5]),
            "activate_after_idle": rng.choice([False, "5m", 60_000]),
            "failure_policy": "continue",
        },
        reflection={"observation_tokens": rng.choice([300, 600])},
        activate_on_provider_change=rng.random() < 0.5,
        clock=clock,
        background="manual",
        sleep=lambda s: None,
    )
    thread = "t"
    sent: list[str] = []
    window: list[BaseMessage] = []
    record: dict[str, Any] | None = None
    cursor = 0
    models = ["openai/gpt-5-mini", "google/gemini-2.5-flash"]
    actor = models[0]
    for step in range(rng.randrange(30, 60)):
        # new messages: a user turn, sometimes with a tool call and its result
        words = " ".join(f"w{rng.randrange(999)}" for _ in range(rng.randrange(3, 80)))
        new: list[BaseMessage] = [HumanMessage(words, id=f"h{step}")]
        if rng.random() < 0.3:
            call = {"name": "tool", "args": {"x": step}, "id": f"c{step}"}
            new.append(AIMessage("", tool_calls=[call], id=f"ai{step}"))
            new.append(
                ToolMessage("r " * rng.randrange(5, 60), tool_call_id=f"c{step}", id=f"t{step}")
            )
        new.append(AIMessage(f"answer {step} " + words[:60], id=f"a{step}"))
        sent.extend(m.id or "" for m in new)
        window = window + new
        failing["observer"] = rng.random() < 0.15
        failing["reflector"] = rng.random() < 0.15
        if rng.random() < 0.1:
            clock.now += timedelta(minutes=rng.choice([2, 10, 90]))  # idle gap
        if rng.random() < 0.1:
            actor = models[1 - models.index(actor)]  # provider switch
        before_record = record
        out = memory.step(thread_id=thread, window=window, record=record, actor_model=actor)
        record, window = dict(out.record), out.window
        # failures remove nothing: what left the window is archived
        assert [m.id for m in out.removed] == archived_ids(memory, thread)[cursor:]
        # the cursor never moves back
        assert record["observed_message_count"] >= cursor
        cursor = record["observed_message_count"]
        # every message is archived or in the window, in order, once
        assert archived_ids(memory, thread) + [m.id for m in window] == sent
        assert len(archived_ids(memory, thread)) == cursor
        assert not window or not isinstance(window[0], ToolMessage)
        if before_record is not None:
            assert record["generation"] >= before_record["generation"]
        # background work: run it, drop it (a crash), or leave it in flight
        roll = rng.random()
        if roll < 0.6:
            memory.run_background()
        elif roll < 0.75:
            memory._background.drop_pending()
        clock.now += timedelta(seconds=rng.randrange(1, 30))
    # stored chunks never strand messages: each names messages still in the window
    window_ids = {m.id for m in window}
    for item in memory.store.search(buffer_ns(thread), limit=10_000):
        ids = set(item.value["message_ids"])
        assert ids <= window_ids or not ids & window_ids


@pytest.mark.parametrize("seed", range(120))
def test_randomized_lifecycle(seed: int) -> None:
    lifecycle(seed)


# -- reflection buffering, early activation, failures --------------------------------------


def test_buffered_reflection_keeps_what_was_appended_since() -> None:
    memory = ObservationalMemory(
        model=memory_model(keep=0.5),
        observation={"message_tokens": 200},
        reflection={"observation_tokens": 400, "buffer_activation": 0.5},
        background="manual",
    )
    events: list[Any] = []
    memory.on_debug_event = events.append
    record: dict[str, Any] | None = None
    window: list[BaseMessage] = []
    started = False
    for i in range(200):
        window = window + [
            HumanMessage(f"fact {i} " + "detail " * 15, id=f"h{i}"),
            AIMessage(f"noted {i}", id=f"a{i}"),
        ]
        out = memory.step(thread_id="t", window=window, record=record)
        record, window = dict(out.record), out.window
        if "ref:t" in memory._background.pending and not started:
            started = True
            covered = [g["id"] for g in record["groups"]]
        memory.run_background()  # runs buffered observations and the background reflection
        if any(e.type == "data-om-activation" and e.operation_type == "reflection" for e in events):
            break
    assert started
    swap = next(
        e for e in events if e.type == "data-om-activation" and e.operation_type == "reflection"
    )
    assert swap.generation_count == record["generation"] >= 1
    first = record["groups"][0]
    assert first["kind"] == "reflection"
    merged = set(first["sources"])
    assert merged and merged <= set(covered)  # it replaced only groups that existed then
    # groups appended after the reflection started are kept, after it, untouched
    later = record["groups"][1:]
    assert later and all(g["id"] not in merged for g in later)


class Feeder:
    """Feeds user/assistant turns through ``memory.step`` and runs background work."""

    def __init__(self, memory: ObservationalMemory, clock: Clock | None = None) -> None:
        self.memory, self.clock = memory, clock
        self.events: list[Any] = []
        memory.on_debug_event = self.events.append
        self.window: list[BaseMessage] = []
        self.record: Any = None

    def turns(self, n: int, **step: Any) -> None:
        for i in range(n):
            self.add(
                [HumanMessage(f"turn {i} " + "w " * 60, id=f"h{i}"), AIMessage("ok", id=f"a{i}")],
                **step,
            )
            self.memory.run_background()
            if self.clock is not None:
                self.clock.now += timedelta(seconds=10)

    def add(self, messages: list[BaseMessage], **step: Any) -> Any:
        self.window = self.window + messages
        out = self.memory.step(thread_id="t", window=self.window, record=self.record, **step)
        self.record, self.window = out.record, out.window
        return out

    def activations(self) -> list[Any]:
        return [e for e in self.events if e.type == "data-om-activation"]


def test_idle_ttl_activates_below_the_threshold() -> None:
    clock = Clock()
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 1_000, "buffer_tokens": 100},
        activate_after_idle="5m",
        clock=clock,
        background="manual",
    )
    feed = Feeder(memory, clock)
    feed.turns(4)
    assert not feed.activations()
    clock.now += timedelta(minutes=6)
    out = feed.add([HumanMessage("back again", id="late")])
    assert feed.activations() and feed.activations()[0].triggered_by == "ttl"
    assert out.status is not None and out.status.messages.tokens < 1_000
    assert out.window[-1].id == "late"


def test_provider_change_activates() -> None:
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 1_000, "buffer_tokens": 100},
        activate_on_provider_change=True,
        background="manual",
    )
    feed = Feeder(memory)
    feed.turns(4, actor_model="openai/gpt-5")
    assert not feed.activations()
    feed.add([HumanMessage("switching", id="s")], actor_model="anthropic/claude")
    activation = feed.activations()
    assert activation and activation[0].triggered_by == "provider_change"
    assert activation[0].previous_model == "openai/gpt-5"
    assert activation[0].current_model == "anthropic/claude"


def test_failed_buffer_is_reported_not_raised_and_sync_takes_over() -> None:
    ends: list[dict[str, Any]] = []
    state = {"fail": True}
    base = memory_model()

    def reply(messages: list[BaseMessage], info: RecordedCall) -> Any:
        if state["fail"]:
            raise RuntimeError("observer down")
        return base.function(messages, info)  # type: ignore[misc]

    memory = ObservationalMemory(
        model=FunctionChatModel(function=reply),
        observation={"message_tokens": 400, "buffer_tokens": 100},
        hooks={"on_observation_end": ends.append},
        background="manual",
    )
    events: list[str] = []
    memory.on_debug_event = lambda e: events.append(e.type)
    window: list[BaseMessage] = []
    record = None
    i = 0
    while "data-om-buffering-failed" not in events:
        window = window + [
            HumanMessage(f"turn {i} " + "w " * 40, id=f"h{i}"),
            AIMessage("ok", id=f"a{i}"),
        ]
        out = memory.step(thread_id="t", window=window, record=record)
        record, window = out.record, out.window
        memory.run_background()  # fails, must not raise
        i += 1
    assert ends and ends[-1]["trigger"] == "async-buffer" and ends[-1]["error"] is not None
    state["fail"] = False
    while "data-om-observation-end" not in events:
        window = window + [
            HumanMessage(f"turn {i} " + "w " * 40, id=f"h{i}"),
            AIMessage("ok", id=f"a{i}"),
        ]
        out = memory.step(thread_id="t", window=window, record=record)
        record, window = out.record, out.window
        i += 1
        assert i < 50
    assert out.observed


def test_status_reports_buffered_work() -> None:
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 1_000, "buffer_tokens": 100},
        background="manual",
    )
    window: list[BaseMessage] = []
    record = None
    statuses = []
    for i in range(6):
        window = window + [
            HumanMessage(f"turn {i} " + "w " * 60, id=f"h{i}"),
            AIMessage("ok", id=f"a{i}"),
        ]
        out = memory.step(thread_id="t", window=window, record=record)
        record, window = out.record, out.window
        statuses.append(out.status)
        memory.run_background()
    last = statuses[-1]
    assert last is not None
    assert last.buffered_observations.chunks >= 1
    assert last.buffered_observations.message_tokens > 0
    assert 0 < last.buffered_observations.projected_message_removal <= last.messages.tokens
    assert any(s is not None and s.buffered_observations.status == "running" for s in statuses)


# -- races and defaults ----------------------------------------------------------------------


def test_two_writers_on_one_thread_lose_nothing() -> None:
    memory = ObservationalMemory(
        model=memory_model(), observation={"message_tokens": 300, "buffer_tokens": 60}
    )
    sent: list[list[str]] = [[], []]

    def writer(k: int) -> None:
        for i in range(40):
            msgs = [
                HumanMessage(f"w{k} turn {i} " + "x " * 20, id=f"w{k}-h{i}"),
                AIMessage(f"ok {k} {i}", id=f"w{k}-a{i}"),
            ]
            sent[k].extend(m.id or "" for m in msgs)
            memory.add_messages("shared", msgs)

    threads = [threading.Thread(target=writer, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    memory.wait_for_background()
    snap = memory.status(thread_id="shared")
    everything = archived_ids(memory, "shared") + [m.id for m in snap.window]
    assert sorted(everything) == sorted(sent[0] + sent[1])
    assert len(everything) == len(set(everything))
    # each writer's own messages keep their order
    for k in (0, 1):
        assert [i for i in everything if i.startswith(f"w{k}-")] == sent[k]
    memory.close()


@pytest.mark.slow
def test_default_settings_window_oscillates() -> None:
    memory = ObservationalMemory(model=memory_model(), background="manual")
    events: list[Any] = []
    memory.on_debug_event = events.append
    window: list[BaseMessage] = []
    record = None
    fractions = []
    rng = random.Random(1)
    for i in range(900):
        text = " ".join(f"w{rng.randrange(5000)}" for _ in range(rng.randrange(40, 160)))
        window = window + [
            HumanMessage(text, id=f"h{i}"),
            AIMessage("ok " + text[:200], id=f"a{i}"),
        ]
        out = memory.step(thread_id="t", window=window, record=record)
        record, window = out.record, out.window
        assert out.status is not None
        fractions.append(out.status.messages.tokens / out.status.messages.threshold)
        memory.run_background()
    counts = {
        "activations": sum(1 for e in events if e.type == "data-om-activation"),
        "sync_observations": sum(
            1
            for e in events
            if e.type == "data-om-observation-end" and e.operation_type == "observation"
        ),
        "buffers": sum(1 for e in events if e.type == "data-om-buffering-end"),
    }
    steady = fractions[len(fractions) // 3 :]
    print(f"window min {min(steady):.2f} max {max(steady):.2f} of message_tokens; {counts}")
    assert counts["activations"] >= 5
    assert counts["sync_observations"] <= counts["activations"] // 10
    assert min(steady) < 0.35 and max(steady) <= 1.0
