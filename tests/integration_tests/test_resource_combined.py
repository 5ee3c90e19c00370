"""Resource scope with buffering and the option families on at once, two users apart.

Alice talks in threads A and B, Bob in thread C (the scripted run of
``tests.isolation_scenarios``), on a real SQLite file, through the sync and the async front
doors. Memory buffers the resources' threads in the background (an explicit
``observation.buffer_tokens``), titles every thread (``observation.thread_title``; B's title
is pinned midway), fills an inline and a schema extractor and the working memory, runs the
observation transform hooks and inserts a time-gap reminder. After every step:

- each message is in its thread's window or archive exactly once, in order, and only a
  message whose observation is in the user's log has left the window;
- a buffered observation had the effects of a synchronous one: an observed thread has its
  title, an observed locker code is in the user's extracted values and working memory;
- nothing computed, stored or shown for one user holds the other's words.

At the end every buffered chunk was activated exactly once, into its own user's log, and the
recall tool, fuzzed with the arguments of the recall fuzz, reads nothing of the other user.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import Extractor, ObservationalMemory, ThreadSnapshot
from langchain_om._core.resource import ResourceDelta, Section, new_resource_record
from langchain_om._core.resource_chunks import activate_chunks, add_chunk, new_chunk, with_chunks
from langchain_om.events import (
    ActivationEvent,
    BufferingEndEvent,
    BufferingFailedEvent,
    BufferingStartEvent,
    ObservationEndEvent,
    ObservationFailedEvent,
    ObservationStartEvent,
    OMEvent,
    ThreadUpdateEvent,
)
from langchain_om.testing import FunctionChatModel
from langchain_om.tools import create_recall_tool
from tests.helpers import Clock
from tests.isolation_scenarios import (
    RESOURCE_THREADS,
    Codes,
    family_reply,
    resource_turn,
)
from tests.recall_fuzz import ECHO_KEYS, random_args

OWNER = dict(RESOURCE_THREADS)
CODES = {"alice": "4921", "bob": "7788"}
WORDS = {"alice": ("Alice", "4921", "blue notebook"), "bob": ("Bob", "7788", "red drawer")}
"""What each user's messages say: the other user's must never reach them."""
PIN = "Alice's own title"
ROUNDS = 8
GAP_ROUND = 4
REMINDER = "__temporal_gap_"


def other(resource: str) -> str:
    return "bob" if resource == "alice" else "alice"


def text_of(value: Any) -> str:
    if isinstance(value, BaseMessage):
        return value.text
    if isinstance(value, (list, tuple)):
        return "\n".join(text_of(v) for v in value)
    return value if isinstance(value, str) else json.dumps(value, default=str)


def leaks(resource: str, value: Any) -> int:
    """How many of the other user's words ``value`` holds."""
    text = text_of(value)
    return sum(word in text for word in WORDS[other(resource)])


class Door:
    """The sync front door; background work runs on worker threads and is waited for."""

    def __init__(self, memory: ObservationalMemory) -> None:
        self.memory = memory

    def add(self, thread: str, messages: list[BaseMessage]) -> None:
        self.memory.add_messages(thread, messages, resource_id=OWNER[thread])
        self.memory.wait_for_background()

    def observe(self, thread: str) -> None:
        self.memory.observe(thread_id=thread, resource_id=OWNER[thread])
        self.memory.wait_for_background()

    def rename(self, thread: str, title: str) -> None:
        self.memory.rename_thread(thread, title)

    def state(self, thread: str) -> tuple[ThreadSnapshot, list[BaseMessage], list[BaseMessage]]:
        """The thread's snapshot, its memory context and its archive."""
        resource = OWNER[thread]
        snap = self.memory.status(thread_id=thread, resource_id=resource)
        context = self.memory.get_context(thread_id=thread, resource_id=resource)
        return snap, context, self.memory.archived_messages(thread)


class AsyncDoor(Door):
    """The async front door; background work runs as tasks, awaited in the same loop."""

    def add(self, thread: str, messages: list[BaseMessage]) -> None:
        async def go() -> None:
            await self.memory.aadd_messages(thread, messages, resource_id=OWNER[thread])
            await self.memory.await_for_background()

        asyncio.run(go())

    def observe(self, thread: str) -> None:
        async def go() -> None:
            await self.memory.aobserve(thread_id=thread, resource_id=OWNER[thread])
            await self.memory.await_for_background()

        asyncio.run(go())

    def rename(self, thread: str, title: str) -> None:
        asyncio.run(self.memory.arename_thread(thread, title))

    def state(self, thread: str) -> tuple[ThreadSnapshot, list[BaseMessage], list[BaseMessage]]:
        async def go() -> tuple[ThreadSnapshot, list[BaseMessage], list[BaseMessage]]:
            resource = OWNER[thread]
            snap = await self.memory.astatus(thread_id=thread, resource_id=resource)
            context = await self.memory.aget_context(thread_id=thread, resource_id=resource)
            return snap, context, await self.memory.aarchived_messages(thread)

        return asyncio.run(go())


class Checker:
    """The invariants every step keeps (see the module docstring)."""

    def __init__(self, door: Door) -> None:
        self.door = door
        self.sent: dict[str, list[str]] = {t: [] for t in OWNER}
        self.pinned: set[str] = set()
        self.cross_reads = 0
        self.checked = 0

    def look(self, resource: str, value: Any) -> None:
        self.checked += 1
        self.cross_reads += leaks(resource, value)

    def check(self, thread: str) -> None:
        resource = OWNER[thread]
        snap, context, archive = self.door.state(thread)
        window = snap.window
        ids = [str(m.id) for m in [*archive, *window]]
        reminders = [i for i in ids if i.startswith(REMINDER)]
        assert len(set(reminders)) == len(reminders), f"{thread}: a reminder twice: {ids}"
        assert [i for i in ids if not i.startswith(REMINDER)] == self.sent[thread], (
            f"{thread}: lost, doubled or reordered: {ids}"
        )
        log = snap.observations
        for m in archive:
            if isinstance(m, HumanMessage) and not str(m.id).startswith(REMINDER):
                quoted = "User said: " + " ".join(m.text.split()[:3])
                assert quoted in log, f"{thread}: {m.id} left the window unobserved"
        # A buffered observation has the effects of a synchronous one.
        if archive:
            if thread in self.pinned:
                assert snap.title == PIN
            else:
                assert snap.title, f"{thread}: observed, but not titled"
                assert snap.title.startswith((resource.title(), f"{thread} turn"))
        code = CODES[resource]
        if f"User said: {resource.title()} keeps" in log:  # the code is observed
            assert code in str(snap.extracted.get("codes")), f"{thread}: {snap.extracted}"
            assert snap.extracted["typed-codes"]["codes"] == [code]
            assert code in (self.door.memory.get_working_memory(thread_id=thread) or "")
        for value in (log, text_of(context), snap.title or "", snap.extracted, archive, window):
            self.look(resource, value)
        self.look(resource, self.door.memory.get_working_memory(thread_id=thread) or "")

    def step(self, thread: str, messages: list[BaseMessage]) -> None:
        self.sent[thread] += [str(m.id) for m in messages]
        self.door.add(thread, messages)
        self.check(thread)


def fuzz_recall(memory: ObservationalMemory, sent: Mapping[str, Sequence[str]], calls: int) -> int:
    """``calls`` recall calls with the recall fuzz's arguments; the other user's data read."""
    rng = random.Random(28)
    threads = {r: [t for t, o in RESOURCE_THREADS if o == r] for r in CODES}
    ids = [i for t in sent.values() for i in t]
    recall = create_recall_tool(memory, scope="resource")
    found = 0
    for _ in range(calls):
        caller = rng.choice(list(CODES))
        config: RunnableConfig = {
            "configurable": {"thread_id": rng.choice(threads[caller]), "resource_id": caller}
        }
        result = recall.invoke(random_args(rng, threads, ids), config)
        data = json.loads(result) if isinstance(result, str) and result.startswith("{") else result
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k not in ECHO_KEYS}
        text = text_of(data)
        theirs = threads[other(caller)]
        found += leaks(caller, text)
        found += sum(f'"{t}-h' in text or f'"{t}-a' in text for t in theirs)
    return found


def open_memory(path: Path, clock: Clock, events: list[OMEvent], **overrides: Any) -> Any:
    """Resource scope on the SQLite file ``path`` with buffering and the families on."""
    options: dict[str, Any] = {
        "model": FunctionChatModel(function=family_reply),
        "scope": "resource",
        "observation": {
            "message_tokens": 250,
            "buffer_tokens": 60,
            "thread_title": True,
            "manage_working_memory": True,
            "extract": [
                Extractor("Codes", "The locker codes the user named."),
                Extractor("Typed codes", "The locker codes, as a list.", schema=Codes),
            ],
        },
        "reflection": {"observation_tokens": 100_000},
        "temporal_markers": True,
        "retrieval": True,
        "clock": clock,
        "sleep": lambda s: None,
        "on_debug_event": events.append,
        **overrides,
    }
    return ObservationalMemory.from_sqlite(str(path), **options)


def of_user(kind: type[Any], events: Sequence[OMEvent], user: str) -> list[Any]:
    return [e for e in events if isinstance(e, kind) and OWNER[e.thread_id] == user]


def check_chunks(events: Sequence[OMEvent], logs: Mapping[str, str]) -> None:
    """Every chunk a user's buffers stored was activated once, into that user's own log."""
    for user in CODES:
        stored = of_user(BufferingEndEvent, events, user)
        activated = of_user(ActivationEvent, events, user)
        assert stored and activated, f"{user}: nothing was buffered and activated"
        assert sum(e.covered_messages for e in stored) == sum(
            e.messages_activated for e in activated
        )
        assert any(e.extracted_values for e in stored), "the buffers ran the extractors"
        for event in [*stored, *activated]:
            assert leaks(user, event.observations) == 0
            for line in event.observations.splitlines():
                if line.startswith("* ") and "User said: " in line:
                    assert logs[user].count(line) == 1, f"{user}: {line!r} twice or lost"
        # Each user message of the user's threads is observed exactly once, in their log.
        quoted = Counter(re.findall(r"User said: ([A-C] turn \d+|Alice|Bob)", logs[user]))
        mine = [t for t, r in RESOURCE_THREADS if r == user]
        expected = {f"{t} turn {i}": 1 for t in mine for i in range(1, ROUNDS)}
        assert quoted == Counter({**expected, user.title(): len(mine)})


def check_hooks(
    hooked: Sequence[tuple[Mapping[str, Any], Any]],
    events: Sequence[OMEvent],
    memory: ObservationalMemory,
) -> None:
    """The hooks ran for the buffered calls too, with their cycle's context; one user each."""
    assert {ctx["trigger"] for ctx, _ in hooked} >= {"async-buffer", "manual"}
    kinds = (BufferingStartEvent, ObservationStartEvent)
    cycles = {e.cycle_id: OWNER[e.thread_id] for e in events if isinstance(e, kinds)}
    for ctx, value in hooked:
        assert ctx["resource_id"] == OWNER[ctx["thread_id"]] == cycles[ctx["cycle_id"]]
        assert {OWNER[t] for t in ctx["thread_ids"]} == {ctx["resource_id"]}
        assert ctx["operation"] == "observation" and ctx["memory"] is memory
        assert leaks(ctx["resource_id"], value) == 0


def check_titles(events: Sequence[OMEvent], pinned_at: int) -> None:
    """Each title is drawn from its own thread; none is sent for B once it is pinned."""
    updates = [e for e in events if isinstance(e, ThreadUpdateEvent)]
    assert {e.thread_id for e in updates} == set(OWNER)
    for event in updates:
        assert event.new_title.startswith((OWNER[event.thread_id].title(), event.thread_id))
    later = events[pinned_at:]
    assert [e for e in later if isinstance(e, ThreadUpdateEvent) and e.thread_id == "B"] == []
    assert [e for e in later if isinstance(e, ActivationEvent) and OWNER[e.thread_id] == "alice"]


def run(door_type: type[Door], path: Path) -> None:
    clock = Clock()
    events: list[OMEvent] = []
    hooked: list[tuple[dict[str, Any], Any]] = []

    def recorder(value: Any, ctx: Mapping[str, Any]) -> Any:
        hooked.append((dict(ctx), value))
        return value  # unchanged

    hooks = {"before_observation": recorder, "after_observation": recorder}
    memory = open_memory(path, clock, events, hooks=hooks)
    model = memory.config.model
    checker = Checker(door_type(memory))
    pinned_at = 0
    try:
        for i in range(ROUNDS):
            clock.now += timedelta(hours=3 if i == GAP_ROUND else 0, minutes=1)
            if i == 3:
                checker.door.rename("B", PIN)
                checker.pinned.add("B")
                pinned_at = len(events)
            for thread, resource in RESOURCE_THREADS:
                human, ai = resource_turn(thread, resource, i)
                checker.step(thread, [human])
                checker.step(thread, [ai])
        for thread in OWNER:  # activates what is left, observes the rest
            checker.door.observe(thread)
            checker.check(thread)
        last = {r: checker.door.state(t)[0] for t, r in RESOURCE_THREADS}
        fuzzed = fuzz_recall(memory, checker.sent, 150)
    finally:
        memory.close()

    assert checker.cross_reads == 0 and checker.checked > 100
    assert fuzzed == 0
    failed = (BufferingFailedEvent, ObservationFailedEvent)
    assert not [e for e in events if isinstance(e, failed)]
    assert all(s.status.buffered_observations.chunks == 0 for s in last.values())
    check_chunks(events, {r: s.observations for r, s in last.items()})
    check_hooks(hooked, events, memory)
    check_titles(events, pinned_at)
    for call in model.calls:  # Observer and extractor prompts: one user each
        prompt = text_of(list(call.messages))
        assert leaks("alice", prompt) == 0 or leaks("bob", prompt) == 0
    ends = [e for e in events if isinstance(e, ObservationEndEvent)]
    assert ends, "the final observe() observed synchronously too"
    gaps = [e for e in events if e.type == "data-om-temporal-gap"]
    assert sorted(e.thread_id for e in gaps) == ["A", "B", "C"]


@pytest.mark.parametrize("door", [Door, AsyncDoor], ids=["sync", "async"])
def test_buffering_with_titles_extractors_and_hooks_keeps_users_apart(
    door: type[Door], tmp_path: Path
) -> None:
    run(door, tmp_path / "om.sqlite")


@pytest.mark.parametrize("door", [Door, AsyncDoor], ids=["sync", "async"])
def test_an_update_of_the_working_memory_wins_over_an_older_chunk(
    door: type[Door], tmp_path: Path
) -> None:
    """The application updates the working memory while a chunk computed before waits: the
    activation applies the chunk's observations, title and values, and keeps the update."""
    events: list[OMEvent] = []
    memory = open_memory(tmp_path / "om.sqlite", Clock(), events)
    turns = [("A", 0)] + [(t, i) for i in range(1, ROUNDS) for t in "BA"]  # one code, in A
    steps = (m for t, i in turns for m in resource_turn(t, "alice", i))
    update = "# Alice\n- prefers tea"

    def until(kind: type[OMEvent]) -> Any:
        for message in steps:
            door(memory).add(str(message.id).split("-")[0], [message])
            if found := [e for e in events if isinstance(e, kind)]:
                return found[0]
        raise AssertionError(f"no {kind.__name__}")

    try:
        chunk = until(BufferingEndEvent)
        assert "4921" in chunk.extracted_values["working-memory"]
        memory.update_working_memory(update, thread_id="B", resource_id="alice")
        until(ActivationEvent)
        snap = memory.status(thread_id="A", resource_id="alice")
        assert "User said: Alice keeps" in snap.observations  # the chunk was applied
        assert snap.extracted["codes"] == "4921" and snap.title
        assert memory.get_working_memory(thread_id="A") == update
    finally:
        memory.close()


# -- the pure part: what a chunk keeps and its activation applies ------------------------------


def test_a_chunk_keeps_its_titles_and_values_and_its_activation_applies_them() -> None:
    record = new_resource_record("alice")
    record["extracted"] = {"codes": "1111", "notes": "old"}
    delta = ResourceDelta(
        delta_id="d1",
        observed={"A": ["A-h0"], "B": ["B-h0"]},
        sections=[Section("A", "", ("* a",)), Section("B", "", ("* b",))],
        labels={"A": "A", "B": "B"},
        extracted={"codes": "1111, 4921", "notes": "new"},
        titles={"A": "Locker codes", "B": "Blue notebook", "C": "not in the chunk"},
    )
    chunk = new_chunk(
        delta,
        after={},
        thread_tokens={"A": 10, "B": 10},
        section_tokens=[1, 1],
        created_at="",
        extracted_before=record["extracted"],
    )
    assert chunk.get("titles") == {"A": "Locker codes", "B": "Blue notebook"}
    stored, _ = add_chunk(record, chunk)
    basis = with_chunks(stored)  # what the next buffer reads
    assert basis["titles"] == chunk.get("titles") and basis["extracted"]["codes"] == "1111, 4921"
    stored["extracted"] = {**stored["extracted"], "notes": "the application's"}
    # B's messages left its thread: B's part and title go; the values stay with A's part.
    active, done = activate_chunks(stored, {"d1"}, {"A": {"A-h0"}, "B": set()})
    assert [c["id"] for c in done] == ["d1"] and active["cursors"] == {"A": ["A-h0"]}
    assert active["titles"] == {"A": "Locker codes"}
    assert active["extracted"] == {"codes": "1111, 4921", "notes": "the application's"}
