"""Buffering in resource scope: chunks of a user's threads, activated once, never elsewhere.

Two users on one SQLite file: Alice with threads ``a1`` and ``a2``, Bob with ``b1``. Memory
buffers the resources' threads in the background (``observation.buffer_tokens`` set) and
activates the chunks at the threshold. Through the sync and the async front doors: every
chunk a user's buffers stored is activated exactly once, into that user's log; the other
user reads none of it (not in their Observer's prompts, log or context); after every step
each message is in its window or its archive exactly once, and only a message whose
observation is in the log has left the window.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om._core.resource import (
    ResourceDelta,
    Section,
    new_resource_record,
)
from langchain_om._core.resource_chunks import (
    activate_chunks,
    add_chunk,
    last_covered,
    new_chunk,
    prune_chunks,
)
from langchain_om.events import ActivationEvent, BufferingEndEvent, OMEvent
from langchain_om.testing import FunctionChatModel
from tests.helpers import FIXED, thread_observer_reply
from tests.unit_tests.test_resource_frontdoors import (
    DOORS,
    FACT,
    actor,
    resource_memory,
    system_text,
)

USERS = {"a1": "alice", "a2": "alice", "b1": "bob"}
WORDS = {"alice": "violin Oslo fjord", "bob": "cactus Lima desert"}
"""What each user talks about: the other user's words must never reach them."""
FILLER = "and some more about my week " * 5
FRONT_FILLER = (
    "then we talked about the garden, the rainy weather, the trip to the coast we planned "
    "for June, and the book about old lighthouses I started reading last night"
)


def options(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "model": FunctionChatModel(function=thread_observer_reply),
        "scope": "resource",
        "obscure_thread_ids": False,
        "observation": {"message_tokens": 400, "buffer_tokens": 100},
        "reflection": {"observation_tokens": 100_000},
        "clock": lambda: FIXED,
        "sleep": lambda s: None,
    }
    base.update(overrides)
    return base


def said(thread: str, i: int) -> str:
    """The start of a user message, as the scripted Observer's line quotes it."""
    return f"{thread}-turn-{i} {WORDS[USERS[thread]]}"


def turn(thread: str, i: int) -> tuple[HumanMessage, AIMessage]:
    return (
        HumanMessage(f"{said(thread, i)} {FILLER}", id=f"{thread}-h{i}"),
        AIMessage(f"Noted {i}.", id=f"{thread}-a{i}"),
    )


class SyncDoor:
    """The sync front door; background work runs on worker threads."""

    def __init__(self, memory: ObservationalMemory) -> None:
        self.memory = memory

    def add(self, thread: str, messages: list[BaseMessage], *, wait: bool = True) -> None:
        self.memory.add_messages(thread, messages, resource_id=USERS[thread])
        if wait:
            self.memory.wait_for_background()

    def observe(self, thread: str) -> None:
        self.memory.observe(thread_id=thread, resource_id=USERS[thread])
        self.memory.wait_for_background()

    def state(self, thread: str) -> tuple[list[BaseMessage], list[BaseMessage], str, str]:
        """Archive, window, the shared log and the memory context of ``thread``."""
        snap = self.memory.status(thread_id=thread, resource_id=USERS[thread])
        context = self.memory.get_context(thread_id=thread, resource_id=USERS[thread])
        archive = self.memory.archived_messages(thread)
        return archive, snap.window, snap.observations, "\n".join(m.text for m in context)


class AsyncDoor(SyncDoor):
    """The async front door; background work runs as tasks, awaited in the same loop."""

    def add(self, thread: str, messages: list[BaseMessage], *, wait: bool = True) -> None:
        async def run() -> None:
            await self.memory.aadd_messages(thread, messages, resource_id=USERS[thread])
            await self.memory.await_for_background()

        asyncio.run(run())

    def observe(self, thread: str) -> None:
        async def run() -> None:
            await self.memory.aobserve(thread_id=thread, resource_id=USERS[thread])
            await self.memory.await_for_background()

        asyncio.run(run())

    def state(self, thread: str) -> tuple[list[BaseMessage], list[BaseMessage], str, str]:
        async def run() -> tuple[list[BaseMessage], list[BaseMessage], str, str]:
            resource = USERS[thread]
            snap = await self.memory.astatus(thread_id=thread, resource_id=resource)
            context = await self.memory.aget_context(thread_id=thread, resource_id=resource)
            archive = await self.memory.aarchived_messages(thread)
            return archive, snap.window, snap.observations, "\n".join(m.text for m in context)

        return asyncio.run(run())


class Checker:
    """After every step: each message once in window or archive, in order, and only
    messages whose observation is in the user's log archived; no word of the other user."""

    def __init__(self, door: SyncDoor) -> None:
        self.door = door
        self.sent: dict[str, list[str]] = {t: [] for t in USERS}
        self.cross_reads = 0

    def check(self, thread: str) -> None:
        archive, window, log, context = self.door.state(thread)
        ids = [m.id for m in archive] + [m.id for m in window]
        assert ids == self.sent[thread], f"{thread}: lost, doubled or reordered: {ids}"
        for m in archive:
            if isinstance(m, HumanMessage):
                line = "User said: " + " ".join(m.text.split()[:3])
                assert line in log, f"{thread}: {m.id} left the window unobserved"
        other = next(u for u in WORDS if u != USERS[thread])
        self.cross_reads += sum(w in log + context for w in WORDS[other].split())

    def step(self, thread: str, messages: list[BaseMessage], **kwargs: Any) -> None:
        self.sent[thread] += [m.id or "" for m in messages]
        self.door.add(thread, messages, **kwargs)
        self.check(thread)


def events_of(kind: type[OMEvent], events: list[OMEvent], user: str) -> list[Any]:
    return [e for e in events if isinstance(e, kind) and USERS[e.thread_id] == user]


def run_three_threads(door_type: type[SyncDoor], path: Path, rounds: int = 8) -> None:
    events: list[OMEvent] = []
    observer = FunctionChatModel(function=thread_observer_reply)
    memory = ObservationalMemory.from_sqlite(
        str(path), **options(model=observer, on_debug_event=events.append)
    )
    checker = Checker(door_type(memory))
    try:
        for i in range(rounds):
            for thread in ("a1", "b1", "a2"):
                human, ai = turn(thread, i)
                checker.step(thread, [human])
                checker.step(thread, [ai])
        for thread in USERS:  # activates what is left, observes the rest
            checker.door.observe(thread)
            checker.check(thread)
        logs = {t: checker.door.state(t)[2] for t in USERS}
    finally:
        memory.close()

    assert checker.cross_reads == 0
    for call in observer.calls:  # one user per Observer prompt
        prompt = "\n".join(m.text for m in call.messages)
        assert not ("violin" in prompt and "cactus" in prompt), "an Observer read both users"
    for user in WORDS:
        log = logs["a1" if user == "alice" else "b1"]
        stored = events_of(BufferingEndEvent, events, user)
        activations = events_of(ActivationEvent, events, user)
        assert stored and activations, f"{user}: nothing was buffered and activated"
        # Every message a chunk stored was activated, once.
        assert sum(e.covered_messages for e in stored) == sum(
            e.messages_activated for e in activations
        )
        for event in activations:
            assert event.triggered_by == "threshold"
            for line in event.observations.splitlines():
                if line.startswith("* "):
                    assert log.count(line) == 1, f"{user}: {line!r} activated twice or lost"
        # Each user message of the user's threads is observed exactly once, in their log.
        quoted = Counter(re.findall(r"User said: (\S+-turn-\d+)", log))
        mine = [t for t in USERS if USERS[t] == user]
        assert quoted == Counter({f"{t}-turn-{i}": 1 for t in mine for i in range(rounds)})


@pytest.mark.parametrize("door", [SyncDoor, AsyncDoor], ids=["sync", "async"])
def test_each_users_chunks_are_activated_once_into_their_own_log(
    door: type[SyncDoor], tmp_path: Path
) -> None:
    run_three_threads(door, tmp_path / "om.sqlite")


def test_two_memories_on_one_file_store_a_racing_buffer_once(tmp_path: Path) -> None:
    """Two processes' memories buffer the same messages: the second chunk is not stored, and
    the one stored is activated once."""
    path = str(tmp_path / "om.sqlite")
    events: list[OMEvent] = []
    kwargs = options(
        background="manual",
        on_debug_event=events.append,
        observation={"message_tokens": 400, "buffer_tokens": 40},
    )
    first = ObservationalMemory.from_sqlite(path, **kwargs)
    second = ObservationalMemory.from_sqlite(path, **kwargs)
    try:
        for i in range(2):
            first.add_messages("a1", list(turn("a1", i)), resource_id="alice")
            first.run_background()
        # Both memories schedule a buffer of a2's first turn (each in its own process).
        human, ai = turn("a2", 0)
        first.add_messages("a2", [human, ai, turn("a2", 1)[0]], resource_id="alice")
        second.add_messages("a1", [], resource_id="alice")
        racing = len(events)
        first.run_background()
        second.run_background()
        ends = [e for e in events[racing:] if isinstance(e, BufferingEndEvent)]
        assert sorted((e.covered_messages or 0) > 0 for e in ends) == [False, True]
        for i in range(2, 8):
            second.add_messages("a1", list(turn("a1", i)), resource_id="alice")
            second.run_background()
        assert [e for e in events if isinstance(e, ActivationEvent)]
        first.observe(thread_id="a2", resource_id="alice")  # activates what is left
        covered = sum(e.covered_messages or 0 for e in events if isinstance(e, BufferingEndEvent))
        activated = sum(e.messages_activated for e in events if isinstance(e, ActivationEvent))
        assert activated == covered
        log = first.status(thread_id="a1", resource_id="alice").observations
        quoted = Counter(re.findall(r"User said: (\S+-turn-\d+)", log))
        assert quoted and all(n == 1 for n in quoted.values()), quoted
    finally:
        first.close()
        second.close()


def test_threads_of_both_users_stepping_at_once_lose_and_double_nothing(tmp_path: Path) -> None:
    """Three threads step concurrently, buffers in flight: invariants hold, users stay apart."""
    memory = ObservationalMemory.from_sqlite(str(tmp_path / "om.sqlite"), **options())
    door = SyncDoor(memory)
    checker = Checker(door)
    errors: list[BaseException] = []

    def drive(thread: str) -> None:
        try:
            for i in range(8):
                human, ai = turn(thread, i)
                checker.sent[thread] += [human.id or "", ai.id or ""]
                door.add(thread, [human], wait=False)
                door.add(thread, [ai], wait=False)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    try:
        workers = [threading.Thread(target=drive, args=(t,)) for t in USERS]
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=120)
        assert not errors, errors
        memory.wait_for_background()
        for thread in USERS:
            door.observe(thread)
            checker.check(thread)
        assert checker.cross_reads == 0
        for thread in USERS:
            log = door.state(thread)[2]
            quoted = Counter(re.findall(r"User said: (\S+-turn-\d+)", log))
            mine = [t for t in USERS if USERS[t] == USERS[thread]]
            assert quoted == Counter({f"{t}-turn-{i}": 1 for t in mine for i in range(8)})
    finally:
        memory.close()


# -- the pure part: adding, activating and pruning chunks --------------------------------------


def _chunk(record: Any, thread: str, ids: list[str], *, after: dict[str, str] | None = None) -> Any:
    delta = ResourceDelta(
        delta_id=f"d-{thread}-{'-'.join(ids)}",
        observed={thread: ids},
        sections=[Section(thread, "Nov 30, 2026", tuple(f"* 🔴 (09:00) {i}" for i in ids))],
        labels={thread: thread},
    )
    return new_chunk(
        delta,
        after=last_covered(record) if after is None else after,
        thread_tokens={thread: 10 * len(ids)},
        section_tokens=[5],
        created_at="",
    )


def test_a_chunk_is_stored_once_and_activated_once() -> None:
    record = new_resource_record("alice")
    chunk = _chunk(record, "a1", ["m1", "m2"])
    stored, changed = add_chunk(record, chunk)
    assert changed and stored["version"] == 1 and len(stored["chunks"]) == 1
    again, changed = add_chunk(stored, _chunk(record, "a1", ["m1", "m2", "m3"]))
    assert not changed and again is stored, "a racing buffer of the same messages is dropped"
    active, done = activate_chunks(stored, {chunk["id"]})
    assert [c["id"] for c in done] == [chunk["id"]] and active["chunks"] == []
    assert active["cursors"] == {"a1": ["m1", "m2"]} and active["version"] == 2
    twice, done = activate_chunks(active, {chunk["id"]})
    assert twice is active and done == [], "activated once, whoever tries again"
    assert add_chunk(active, chunk) == (active, False), "an activated chunk is not stored again"


def test_a_chunk_that_does_not_continue_its_threads_chain_is_not_stored() -> None:
    record = new_resource_record("alice")
    first, _ = add_chunk(record, _chunk(record, "a1", ["m1", "m2"]))
    late = _chunk(record, "a1", ["m3"])  # computed before the first chunk was stored
    assert add_chunk(first, late) == (first, False)
    follows, changed = add_chunk(first, _chunk(first, "a1", ["m3"]))
    assert changed and [c["observed"] for c in follows["chunks"]] == [
        {"a1": ["m1", "m2"]},
        {"a1": ["m3"]},
    ]


def test_pruning_drops_overtaken_and_forgotten_parts_and_what_follows_them() -> None:
    record = new_resource_record("alice")
    record, _ = add_chunk(record, _chunk(record, "a1", ["m1", "m2"]))
    record, _ = add_chunk(record, _chunk(record, "a1", ["m3"]))
    record, _ = add_chunk(record, _chunk(record, "a2", ["n1"]))
    overtaken = {**record, "cursors": {"a1": ["m1"]}}  # a sync observation got m1 first
    kept = prune_chunks(overtaken)  # type: ignore[arg-type]
    assert [c["observed"] for c in kept] == [{"a2": ["n1"]}], "m3 follows the dropped part"
    forgotten = prune_chunks(record, {"a1": {"m1", "m2", "m3"}})  # a2's messages are gone
    assert [c["observed"] for c in forgotten] == [{"a1": ["m1", "m2"]}, {"a1": ["m3"]}]


# -- every front door ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(DOORS))
def test_buffered_observations_reach_the_other_thread_through_every_front_door(
    name: str,
) -> None:
    events: list[OMEvent] = []
    memory = resource_memory(
        observation={"message_tokens": 250, "buffer_tokens": 60}, on_debug_event=events.append
    )
    door, model = DOORS[name], actor()

    def say(thread: str, resource: str, text: str) -> None:
        door(memory, model, thread, resource, text)
        memory.wait_for_background()

    say("A", "u1", f"{FACT}. {FRONT_FILLER}")
    for i in range(6):
        say("A", "u1", f"turn {i}: {FRONT_FILLER}")
    assert [e for e in events if isinstance(e, ActivationEvent)], "nothing was activated"
    model.reset()
    say("B", "u1", "Where does Zelda live?")
    assert f"User said: {FACT}" in system_text(model.calls[0]), "observed, not only recent"
    model.reset()
    say("C", "u2", "Where does Zelda live?")
    assert "Zelda" not in system_text(model.calls[0])
    memory.close()
