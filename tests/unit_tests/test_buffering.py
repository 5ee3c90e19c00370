"""Async buffering and activation: non-blocking, the activation choice, invariants, races."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.base import GetOp, Op, Result, SearchOp
from langgraph.store.memory import InMemoryStore

from langchain_om import ObservationalMemory
from langchain_om._core.thresholds import choose_activation, chunk_chain, should_buffer
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import Clock, archived_ids

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


# -- reflection buffering, early activation, failures --------------------------------------


_WORDS = "apple birch cedar dune ember fjord grove heron iris jade kelp lotus maple".split()


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
        # Distinct facts: lines that differ only in a number read as a loop to the Reflector.
        one, two, three = _WORDS[i % 13], _WORDS[i // 13 % 13], _WORDS[(5 * i + 3) % 13]
        window = window + [
            HumanMessage(
                f"fact {i}: my {one} {two} sits by the {three} " + "detail " * 11, id=f"h{i}"
            ),
            AIMessage(f"noted the {two} {one} near the {three}", id=f"a{i}"),
        ]
        out = memory.step(thread_id="t", window=window, record=record)
        record, window = dict(out.record), out.window
        if "ref:t" in memory._background.pending and not started:
            started = True
            covered = [g["id"] for g in record["groups"]]
        memory.run_background()  # runs buffered observations and the background reflection
        if any(e.type == "data-om-activation" and e.operation_type == "reflection" for e in events):
            break
    assert started and record is not None
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


# -- races -----------------------------------------------------------------------------------


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
    everything = archived_ids(memory, "shared") + [m.id or "" for m in snap.window]
    assert sorted(everything) == sorted(sent[0] + sent[1])
    assert len(everything) == len(set(everything))
    # each writer's own messages keep their order
    for k in (0, 1):
        assert [i for i in everything if i.startswith(f"w{k}-")] == sent[k]
    memory.close()


# -- reads by known keys -----------------------------------------------------------------


class _OpLog(InMemoryStore):
    """An in-memory store that records the ops of every batch."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[Op] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.ops.extend(ops)
        return super().batch(ops)


def test_turns_read_buffered_chunks_by_key_not_by_namespace_search() -> None:
    store = _OpLog()
    for n in range(20):  # other threads' chunks: never read by this thread's turns
        ns = ("langchain_om", "buffer", f"other-{n}")
        store.put(ns, "h0", {"message_ids": ["h0"], "text": "x", "tokens": 1})
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 1_000, "buffer_tokens": 100},
        store=store,
        background="manual",
    )
    feed = Feeder(memory)
    feed.turns(20)
    assert feed.activations()  # chunks were buffered, found by key, and activated
    searches = [op for op in store.ops if isinstance(op, SearchOp)]
    assert not [op for op in searches if "buffer" in op.namespace_prefix]
    reads = [op for op in store.ops if isinstance(op, GetOp) and "buffer" in op.namespace]
    assert reads and {op.namespace[-1] for op in reads} == {"t"}


def test_a_failing_background_reflection_backs_off_across_turns() -> None:
    """A background reflection that fails is not started again at the next turn: later turns
    wait out the backoff (exponential from 5 s), then try again; a success clears it."""
    clock = Clock()
    state = {"fail": True}
    reflector_calls: list[int] = []

    def reflector(messages: list[BaseMessage], info: RecordedCall) -> Any:
        reflector_calls.append(len(reflector_calls))
        if state["fail"]:
            raise RuntimeError("reflector down")
        return memory_model(keep=0.5).function(messages, info)  # type: ignore[misc]

    memory = ObservationalMemory(
        observation={"message_tokens": 200, "model": memory_model()},
        reflection={
            "observation_tokens": 400,
            "buffer_activation": 0.5,
            "model": FunctionChatModel(function=reflector),
        },
        background="manual",
        clock=clock,
    )
    events: list[Any] = []
    memory.on_debug_event = events.append
    record: dict[str, Any] | None = None
    window: list[BaseMessage] = []

    def turn(i: int) -> None:
        nonlocal record, window
        window = window + [
            HumanMessage(f"fact {i} " + "detail " * 15, id=f"h{i}"),
            AIMessage(f"noted {i}", id=f"a{i}"),
        ]
        out = memory.step(thread_id="t", window=window, record=record)
        record, window = dict(out.record), out.window
        memory.run_background()
        clock.now += timedelta(seconds=1)

    i = 0
    while not reflector_calls and i < 200:
        turn(i)
        i += 1
    assert reflector_calls, "no background reflection started"
    failed = [e for e in events if e.type == "data-om-buffering-failed"]
    assert failed and failed[-1].operation_type == "reflection"
    calls_after_first_failure = len(reflector_calls)
    for _ in range(3):  # 3 s later: still inside the 5 s backoff
        turn(i)
        i += 1
    assert len(reflector_calls) == calls_after_first_failure
    state["fail"] = False
    for _ in range(6):  # past the delay: tried again, and it succeeds
        turn(i)
        i += 1
    assert len(reflector_calls) > calls_after_first_failure
    assert record is not None


def test_a_failing_background_observation_backs_off_across_turns() -> None:
    """Buffering that fails is not retried at every turn: 1 s turns with a failing Observer
    call it after 5 s, then 10 s (exponential backoff), not at each of the turns between."""
    clock = Clock()
    calls: list[int] = []

    def observer(messages: list[BaseMessage], info: RecordedCall) -> Any:
        calls.append(len(calls))
        raise RuntimeError("observer down")

    memory = ObservationalMemory(
        model=FunctionChatModel(function=observer),
        observation={"message_tokens": 2_000, "buffer_tokens": 0.2, "failure_policy": "continue"},
        background="manual",
        clock=clock,
    )
    record: Any = None
    window: list[BaseMessage] = []
    per_turn: list[int] = []
    for i in range(22):
        window = window + [
            HumanMessage(f"turn {i} " + "w " * 60, id=f"h{i}"),
            AIMessage("ok", id=f"a{i}"),
        ]
        out = memory.step(thread_id="t", window=window, record=record)
        record, window = out.record, out.window
        memory.run_background()  # fails, must not raise
        per_turn.append(len(calls))
        clock.now += timedelta(seconds=1)
    first = per_turn.index(1)
    assert per_turn[first + 4] == 1  # inside the first 5 s: no new attempt
    assert per_turn[first + 5] == 2  # the second attempt
    assert per_turn[first + 14] == 2  # inside the next 10 s
    assert len(window) == 44  # nothing was removed
