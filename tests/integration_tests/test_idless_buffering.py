"""Messages without ids buffer and activate like messages with ids, on every front door.

The history adapter and the standalone ``add_messages`` give an id-less message a fresh id
(on a copy) when it is written to the thread, so the buffered chunk that covers it is found
again: the threshold activates it instead of observing the same messages a second time.
Real SQLite files, sync and async.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om import ObservationalChatMessageHistory, ObservationalMemory
from langchain_om._plans.storage import state_put_op
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import Clock, build_agent

T = TypeVar("T")

TURNS = 20
OPTIONS: dict[str, Any] = {
    "observation": {"message_tokens": 600, "buffer_tokens": 0.2},
    "reflection": {"observation_tokens": 20_000},
}
"""Small windows that buffer every few turns; no reflection gets in the way."""


def user_text(i: int) -> str:
    return f"Turn {i}: I planted {i} tulips by the river " + "today " * 12


def reply_text(i: int) -> str:
    return f"Noted {i} tulips."


def user_message(i: int, ids: bool) -> HumanMessage:
    return HumanMessage(user_text(i), id=f"h{i}" if ids else None)


def ai_message(i: int, ids: bool) -> AIMessage:
    return AIMessage(reply_text(i), id=f"a{i}" if ids else None)


class Runner:
    """Runs calls in sync mode as they are, in async mode on one event loop (closed at end)."""

    def __init__(self, mode: str) -> None:
        self.is_async = mode == "async"
        self.loop = asyncio.new_event_loop() if self.is_async else None

    def __call__(self, sync: Callable[[], T], coro: Callable[[], Coroutine[Any, Any, T]]) -> T:
        if self.loop is None:
            return sync()
        return self.loop.run_until_complete(coro())

    def close(self) -> None:
        if self.loop is not None:
            self.loop.close()


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Iterator[Runner]:
    runner = Runner(request.param)
    yield runner
    runner.close()


@dataclass
class Memory:
    """A memory on its own SQLite file, its Observer and the events it reported."""

    memory: ObservationalMemory
    observer: FunctionChatModel
    events: list[Any] = field(default_factory=list)

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]

    def triggers(self) -> list[str]:
        return [a.triggered_by for a in self.of("data-om-activation")]

    def observed_turns(self) -> Counter[str]:
        """How often each ``Turn N`` was among the new messages of an Observer call."""
        seen: Counter[str] = Counter()
        for call in self.observer.calls:
            text = call.messages[-1].text
            new = text.split("## New Messages to Observe", 1)[-1].split("\n---", 1)[0]
            seen.update(re.findall(r"Turn \d+:", new))
        return seen


def open_memory(path: Path, **options: Any) -> Memory:
    observer = memory_model()
    merged = {**OPTIONS, **options}
    memory = ObservationalMemory.from_sqlite(str(path), model=observer, **merged)
    held = Memory(memory, observer)
    memory.on_debug_event = held.events.append
    return held


def settle(run: Runner, memory: ObservationalMemory) -> None:
    """Let the background work a step started finish (as the next step would find it)."""
    run(memory.wait_for_background, memory.await_for_background)


def say(
    run: Runner,
    memory: ObservationalMemory,
    door: str,
    message: BaseMessage,
    *,
    thread: str = "t",
    actor: str | None = None,
) -> None:
    """Write one message through ``door`` and let its background work finish.

    An id-less message goes through the history's ``add_user_message`` / ``add_ai_message``
    (sync; async has only ``aadd_messages``).
    """
    if door == "history":
        history = ObservationalChatMessageHistory(memory, thread_id=thread, actor_model=actor)
        if message.id is None and not run.is_async:
            if isinstance(message, HumanMessage):
                history.add_user_message(message.text)
            else:
                history.add_ai_message(message.text)
        else:
            run(lambda: history.add_messages([message]), lambda: history.aadd_messages([message]))
    else:
        run(
            lambda: memory.add_messages(thread, [message], actor_model=actor),
            lambda: memory.aadd_messages(thread, [message], actor_model=actor),
        )
    settle(run, memory)


def agent_conversation(run: Runner, held: Memory) -> list[BaseMessage]:
    """The scripted conversation through ``create_agent`` with the middleware."""

    def answer(messages: list[BaseMessage], info: RecordedCall) -> str:
        return reply_text(info.index)

    agent = build_agent(held.memory, FunctionChatModel(function=answer), tools=())
    cfg: Any = {"configurable": {"thread_id": "t"}}
    for i in range(TURNS):
        inputs = {"messages": [HumanMessage(user_text(i))]}
        run(partial(agent.invoke, inputs, cfg), partial(agent.ainvoke, inputs, cfg))
        settle(run, held.memory)
    state = run(lambda: agent.get_state(cfg), lambda: agent.aget_state(cfg))
    return [m for m in state.values["messages"] if m.type != "system"]


def thread_conversation(run: Runner, held: Memory, door: str, *, ids: bool = False) -> None:
    """The same conversation through the history adapter or standalone ``add_messages``."""
    for i in range(TURNS):
        say(run, held.memory, door, user_message(i, ids))
        say(run, held.memory, door, ai_message(i, ids))


def held_messages(run: Runner, memory: ObservationalMemory, window: list[BaseMessage]) -> list[Any]:
    """Archive then window: every message of the thread, once."""
    archived = run(lambda: memory.archived_messages("t"), lambda: memory.aarchived_messages("t"))
    return [*archived, *window]


def thread_window(run: Runner, memory: ObservationalMemory) -> list[BaseMessage]:
    snap = run(lambda: memory.status(thread_id="t"), lambda: memory.astatus(thread_id="t"))
    return list(snap.window)


# -- one conversation, three doors ----------------------------------------------------------


def test_idless_messages_buffer_like_the_agent_door(run: Runner, tmp_path: Path) -> None:
    doors = {door: open_memory(tmp_path / f"{door}.db") for door in ("agent", "history", "sa")}
    windows = {"agent": agent_conversation(run, doors["agent"])}
    for door in ("history", "sa"):
        thread_conversation(run, doors[door], "history" if door == "history" else "standalone")
        windows[door] = thread_window(run, doors[door].memory)
    calls = {door: held.observer.call_count for door, held in doors.items()}
    assert calls["history"] == calls["sa"] == calls["agent"] > 1, calls
    texts = [m for i in range(TURNS) for m in (user_text(i), reply_text(i))]
    for door, held in doors.items():
        assert held.of("data-om-activation"), f"{door}: buffered chunks were activated"
        assert set(held.triggers()) == {"threshold"}
        assert not held.of("data-om-observation-end"), f"{door}: nothing observed twice, sync"
        observed = held.observed_turns()
        assert observed and max(observed.values()) == 1, f"{door}: a message observed twice"
        everything = held_messages(run, held.memory, windows[door])
        assert [m.text for m in everything] == texts
        ids = [m.id for m in everything]
        assert all(ids) and len(set(ids)) == len(ids)
    for held in doors.values():
        held.memory.close()


# -- the options that act on buffered work --------------------------------------------------


DOORS = ["history", "standalone"]


def _idle_run(
    run: Runner, path: Path, door: str, ids: bool, actor: str | None, **options: Any
) -> Memory:
    """Four turns below the threshold (buffered), six minutes of silence, one more message."""
    clock = Clock()
    held = open_memory(
        path,
        observation={"message_tokens": 1_000, "buffer_tokens": 100},
        clock=clock,
        **options,
    )
    for i in range(4):
        say(run, held.memory, door, user_message(i, ids), actor=actor)
        say(run, held.memory, door, ai_message(i, ids), actor=actor)
        clock.now += timedelta(seconds=20)
    assert not held.of("data-om-activation")
    assert held.of("data-om-buffering-end"), "the turns were buffered"
    clock.now += timedelta(minutes=6)
    say(run, held.memory, door, HumanMessage("Back after a break", id="late" if ids else None))
    held.memory.close()
    return held


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize(
    ("after_idle", "actor", "activates"),
    [
        ("5m", None, True),
        (300_000, None, True),
        ("auto", "anthropic/claude-sonnet-4-5", True),  # a 5-minute prompt cache
        ("auto", "google_genai/gemini-2.5-pro", False),  # a 24-hour one: still warm
        (None, None, False),
    ],
)
def test_activate_after_idle_on_idless_messages(
    run: Runner, tmp_path: Path, door: str, after_idle: Any, actor: str | None, activates: bool
) -> None:
    options = {} if after_idle is None else {"activate_after_idle": after_idle}
    idless = _idle_run(run, tmp_path / "idless.db", door, False, actor, **options)
    with_ids = _idle_run(run, tmp_path / "ids.db", door, True, actor, **options)
    assert idless.triggers() == with_ids.triggers() == (["ttl"] if activates else [])
    assert idless.observer.call_count == with_ids.observer.call_count


def _switch_run(run: Runner, path: Path, door: str, ids: bool, on_change: bool) -> Memory:
    """Four buffered turns with one agent model, then a message with another."""
    held = open_memory(
        path,
        observation={"message_tokens": 1_000, "buffer_tokens": 100},
        activate_on_provider_change=on_change,
    )
    for i in range(4):
        say(run, held.memory, door, user_message(i, ids), actor="openai/gpt-5")
        say(run, held.memory, door, ai_message(i, ids), actor="openai/gpt-5")
    assert not held.of("data-om-activation")
    switched = HumanMessage("Now with another model", id="s" if ids else None)
    say(run, held.memory, door, switched, actor="anthropic/claude-sonnet-4-5")
    held.memory.close()
    return held


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("on_change", [True, False])
def test_activate_on_provider_change_on_idless_messages(
    run: Runner, tmp_path: Path, door: str, on_change: bool
) -> None:
    idless = _switch_run(run, tmp_path / "idless.db", door, False, on_change)
    with_ids = _switch_run(run, tmp_path / "ids.db", door, True, on_change)
    assert idless.triggers() == with_ids.triggers() == (["provider_change"] if on_change else [])
    assert idless.observer.call_count == with_ids.observer.call_count
    if on_change:
        event = idless.of("data-om-activation")[0]
        assert (event.previous_model, event.current_model) == (
            "openai/gpt-5",
            "anthropic/claude-sonnet-4-5",
        )


def _activation_run(run: Runner, path: Path, door: str, ids: bool, share: float) -> Memory:
    held = open_memory(
        path, observation={"message_tokens": 600, "buffer_tokens": 0.2, "buffer_activation": share}
    )
    thread_conversation(run, held, door, ids=ids)
    held.memory.close()
    return held


@pytest.mark.parametrize("door", DOORS)
def test_buffer_activation_on_idless_messages(run: Runner, tmp_path: Path, door: str) -> None:
    activated: dict[float, list[int]] = {}
    for share in (0.3, 1.0):
        idless = _activation_run(run, tmp_path / f"idless-{share}.db", door, False, share)
        with_ids = _activation_run(run, tmp_path / f"ids-{share}.db", door, True, share)
        moved = [a.messages_activated for a in idless.of("data-om-activation")]
        assert moved, "buffered chunks were activated"
        assert moved == [a.messages_activated for a in with_ids.of("data-om-activation")]
        assert idless.observer.call_count == with_ids.observer.call_count
        assert not idless.of("data-om-observation-end")
        activated[share] = moved
    assert activated[0.3] != activated[1.0], "buffer_activation changes what activates"
    assert activated[0.3][0] < activated[1.0][0]


# -- the ids themselves -------------------------------------------------------------------


@pytest.mark.parametrize("door", DOORS)
def test_assigned_ids_are_stable_and_unique(run: Runner, tmp_path: Path, door: str) -> None:
    held = open_memory(tmp_path / "om.db", observation={"message_tokens": 10_000})
    given: list[BaseMessage] = []
    for thread in ("t1", "t2"):
        for i in range(3):
            for message in (user_message(i, False), ai_message(i, False)):
                given.append(message)
                say(run, held.memory, door, message, thread=thread)
    memory = held.memory
    assert all(m.id is None for m in given), "the caller's messages are not changed"
    assert all("langchain_om" not in m.response_metadata for m in given)

    def window(thread: str) -> list[str | None]:
        history = ObservationalChatMessageHistory(memory, thread_id=thread)
        return [m.id for m in run(lambda: history.messages, history.aget_messages)]

    first = {t: window(t) for t in ("t1", "t2")}
    assert first == {t: window(t) for t in ("t1", "t2")}, "re-reading gives the same ids"
    every = first["t1"] + first["t2"]
    assert len(every) == 12 and len(set(every)) == 12
    assert all(uuid.UUID(str(i)).version == 4 for i in every)
    memory.close()
    again = open_memory(tmp_path / "om.db")  # another process on the same file
    assert [m.id for m in again.memory.status(thread_id="t1").window] == first["t1"]
    again.memory.close()


def test_observe_with_idless_messages_archives_them_with_ids(tmp_path: Path) -> None:
    held = open_memory(tmp_path / "om.db")
    messages = [user_message(0, False), ai_message(0, False)]
    held.memory.observe(thread_id="t", messages=messages)
    archived = held.memory.archived_messages("t")
    assert [m.text for m in archived] == [m.text for m in messages]
    assert all(m.id for m in archived) and len({m.id for m in archived}) == 2
    assert all(m.id is None for m in messages)
    held.memory.close()


def test_step_gives_idless_window_messages_ids_that_buffering_finds() -> None:
    """``step`` callers that keep ``outcome.window`` buffer and activate id-less messages."""
    observer = memory_model()
    memory = ObservationalMemory(model=observer, background="manual", **OPTIONS)
    events: list[Any] = []
    memory.on_debug_event = events.append
    window: list[BaseMessage] = []
    record: Any = None
    for i in range(TURNS):
        window = [*window, user_message(i, False), ai_message(i, False)]
        out = memory.step(thread_id="t", window=window, record=record)
        record, window = out.record, list(out.window)
        memory.run_background()
    assert all(m.id for m in window)
    assert any(e.type == "data-om-activation" for e in events)
    assert not any(e.type == "data-om-observation-end" for e in events)


def test_a_stored_window_without_ids_reads_the_same_ids_until_saved(tmp_path: Path) -> None:
    """A thread stored before ids were given (id-less messages in its window)."""
    held = open_memory(tmp_path / "om.db")
    memory = held.memory
    memory.add_messages("t", [HumanMessage("hello", id="x")])
    record = memory.status(thread_id="t").record
    legacy = [HumanMessage("I planted tulips"), AIMessage("Noted the tulips")]
    memory.store.batch([state_put_op("t", record, legacy)])
    first = [m.id for m in memory.status(thread_id="t").window]
    assert all(first) and len(set(first)) == 2
    assert [m.id for m in memory.status(thread_id="t").window] == first
    memory.add_messages("t", [HumanMessage("and roses")])
    after = [m.id for m in memory.status(thread_id="t").window]
    assert after[:2] == first and after[2] not in first
    memory.close()
