"""The original's newest features, on every front door, on a real SQLite file (issue #28).

Each test drives the public API (the standalone engine, the chat-history adapter, a
``create_agent`` agent with the middleware, a ``StateGraph`` with ``add_observational_memory``)
on ``ObservationalMemory.from_sqlite``:

- ``instruction_mode="replace"`` for the Observer and the Reflector;
- the continuation-hints switch, in the prompts and in the context the agent is shown;
- ``observe_on_context_overflow`` (agent and graph) and ``observe(force=...)`` (standalone);
- ``ModelByInputTokens`` above its largest tier: the turn goes on, with an event;
- per-request off: ``configurable={"langchain_om": {"enabled": False}}``;
- pinned thread titles (``rename_thread`` / ``unpin_thread_title``), in status and ``inspect``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from langchain.agents import create_agent
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_om import (
    ModelByInputTokens,
    ObservationalChatMessageHistory,
    ObservationalMemory,
    ObservationalMemoryMiddleware,
    add_observational_memory,
)
from langchain_om._core.tokens import get_default_counter
from langchain_om.cli import main as cli_main
from langchain_om.errors import CycleFailedError, OMUsageError
from langchain_om.events import (
    ContextOverflowEvent,
    ObservationFailedEvent,
    OMEvent,
    ThreadUpdateEvent,
)
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from langchain_om.tools import create_recall_tool
from tests.helpers import FIXED, Overflowing

Door = Literal["standalone", "history", "agent", "graph"]
DOORS: tuple[Door, ...] = ("standalone", "history", "agent", "graph")
GRAPH_DOORS: tuple[Door, ...] = ("agent", "graph")

SMALL: dict[str, Any] = {"message_tokens": 150, "buffer_tokens": False}
CONTENT_MARK = "Tell statements from questions."
"""A line of the built-in guidance on what to record."""
CONSOLIDATION_MARK = "Merge related lines."
"""A line of the built-in consolidation rules."""


LOG_TURNS = 18
"""Turns that fill the 400-token log (only the user's facts are observed: the agent's bare
"Noted." says nothing the Observer may record)."""


TIER_TURNS = 20
"""Turns whose log outgrows the room a tier of the bare prompt + 450 tokens leaves it."""


def _fact(i: int) -> str:
    return f"Fact {i}: code {7000 + i} opens my locker number {i}, where I keep skis. " * 3


def _observer_model(titles: bool = False) -> FunctionChatModel:
    """:func:`memory_model`, which also proposes a thread title when the task asks for one."""
    base = memory_model()
    assert base.function is not None
    answer = base.function

    def reply(messages: list[BaseMessage], info: RecordedCall) -> Any:
        out = answer(messages, info)
        if titles and "- <thread-title>:" in messages[-1].text:
            out = f"{out}\n<thread-title>Observer title {info.index}</thread-title>"
        return out

    return FunctionChatModel(function=reply, model_name="memory")


def _store_rows(path: Path) -> list[tuple[Any, ...]]:
    """Every item of memory's store in the SQLite file (not the graph's checkpoints)."""
    with contextlib.closing(sqlite3.connect(path)) as con:
        return list(con.execute("SELECT prefix, key, value FROM store ORDER BY prefix, key"))


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] if isinstance(p, dict) else str(p) for p in content)


@dataclass
class Run:
    """One thread driven through one front door of a memory on a SQLite file."""

    memory: ObservationalMemory
    door: Door
    thread: str = "t1"
    actor: FunctionChatModel = field(
        default_factory=lambda: FunctionChatModel(function=lambda m, i: "Noted.")
    )
    app: Any = None
    history: ObservationalChatMessageHistory | None = None

    def __post_init__(self) -> None:
        if self.door == "history":
            self.history = ObservationalChatMessageHistory(self.memory, thread_id=self.thread)
        elif self.door == "agent":
            self.app = create_agent(
                self.actor,
                list(self.memory.tools),
                middleware=[ObservationalMemoryMiddleware(self.memory)],
                checkpointer=self.memory.checkpointer,
                store=self.memory.store,
            )
        elif self.door == "graph":
            actor = self.actor
            builder = StateGraph(MessagesState)
            builder.add_node("model", lambda s: {"messages": [actor.invoke(s["messages"])]})
            builder.add_edge(START, "model")
            builder.add_edge("model", END)
            add_observational_memory(builder, self.memory)
            self.app = builder.compile(
                checkpointer=self.memory.checkpointer, store=self.memory.store
            )

    def config(self, **request: Any) -> RunnableConfig:
        configurable: dict[str, Any] = {"thread_id": self.thread}
        if request:
            configurable["langchain_om"] = request
        return {"configurable": configurable}

    def turn(self, i: int, **request: Any) -> list[BaseMessage]:
        """User turn ``i`` (and the reply); returns what the agent's model was shown."""
        human = HumanMessage(_fact(i), id=f"h{i}")
        if self.door == "standalone":
            self.memory.add_messages(self.thread, [human, AIMessage("Noted.", id=f"a{i}")])
            return self.memory.get_context(thread_id=self.thread)
        if self.door == "history":
            assert self.history is not None
            self.history.add_messages([human, AIMessage("Noted.", id=f"a{i}")])
            return list(self.history.messages)
        self.app.invoke({"messages": [human]}, self.config(**request))
        return list(self.actor.calls[-1].messages)

    async def aturn(self, i: int, **request: Any) -> list[BaseMessage]:
        """Async twin of :meth:`turn` (agent and graph)."""
        human = HumanMessage(_fact(i), id=f"h{i}")
        await self.app.ainvoke({"messages": [human]}, self.config(**request))
        return list(self.actor.calls[-1].messages)

    def state(self) -> dict[str, Any]:
        """The graph state of an agent or graph thread."""
        return dict(self.app.get_state(self.config()).values)

    def ids(self) -> tuple[list[str], list[str]]:
        """The ids in the archive and in the window, as memory reports them.

        The agent's replies (ids the model gave them in the agent and graph doors) are shown
        as ``a<n>`` after the user turn ``h<n>`` they answer.
        """
        snap = self.memory.status(thread_id=self.thread)
        archived = list(self.memory.archived_messages(self.thread))
        window = [m for m in snap.window if m.type != "system"]
        names: dict[str, str] = {}
        last = ""
        for m in [*archived, *window]:
            if m.type == "human":
                last = m.id or ""
            else:
                names.setdefault(m.id or "", "a" + last[1:])

        def name(m: BaseMessage) -> str:
            return names.get(m.id or "", m.id or "")

        return [name(m) for m in archived], [name(m) for m in window]


@pytest.fixture
def open_memory(tmp_path: Path) -> Iterator[Callable[..., ObservationalMemory]]:
    """Opens memories on ``tmp_path/om.db`` (closed at the end)."""
    opened: list[ObservationalMemory] = []

    def opener(**options: Any) -> ObservationalMemory:
        options.setdefault("model", _observer_model())
        options.setdefault("observation", dict(SMALL))
        options.setdefault("reflection", {"observation_tokens": 400})
        memory = ObservationalMemory.from_sqlite(
            str(tmp_path / "om.db"), clock=lambda: FIXED, sleep=lambda s: None, **options
        )
        opened.append(memory)
        return memory

    yield opener
    for memory in opened:
        memory.close()


# -- instruction_mode ---------------------------------------------------------------------------

OBSERVER_RULES = "Record only what the user says about their lockers, one line per locker."
REFLECTOR_RULES = "Keep one line per locker with its latest code; drop everything else."


@pytest.mark.parametrize("door", DOORS)
def test_replace_puts_the_instructions_in_place_of_the_built_in_guidance(
    door: Door, open_memory: Callable[..., ObservationalMemory]
) -> None:
    model = _observer_model()
    memory = open_memory(
        model=model,
        observation={**SMALL, "instruction": OBSERVER_RULES, "instructionMode": "replace"},
        reflection={
            "observation_tokens": 400,
            "instruction": REFLECTOR_RULES,
            "instruction_mode": "replace",
        },
    )
    run = Run(memory, door)
    for i in range(LOG_TURNS):
        run.turn(i)
    systems = [_text(c.messages[0]) for c in model.calls]
    observer = [s for s in systems if s.startswith("You are the Observer")]
    reflector = [s for s in systems if s.startswith("You are the Reflector")]
    assert observer and reflector, "the run observed and reflected"
    for system in observer:
        assert OBSERVER_RULES in system and CONTENT_MARK not in system
        assert "## Custom Instructions" not in system
        assert "Date: Nov 30, 2026" in system and "## Output format" in system  # the contract
    for system in reflector:
        assert REFLECTOR_RULES in system and CONSOLIDATION_MARK not in system
        assert OBSERVER_RULES in system and CONTENT_MARK not in system  # the guidance in effect
        assert "<observations>" in system
    assert memory.status(thread_id="t1").record["generation"] >= 1


@pytest.mark.parametrize("door", DOORS)
def test_append_keeps_the_built_in_guidance(
    door: Door, open_memory: Callable[..., ObservationalMemory]
) -> None:
    model = _observer_model()
    memory = open_memory(model=model, observation={**SMALL, "instruction": OBSERVER_RULES})
    run = Run(memory, door)
    for i in range(3):
        run.turn(i)
    (system, *_) = [_text(c.messages[0]) for c in model.calls]
    assert CONTENT_MARK in system
    assert system.endswith(f"## Custom Instructions\n\n{OBSERVER_RULES}")


# -- continuation hints ---------------------------------------------------------------------------


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize(
    ("hints", "task", "response"),
    [(False, False, False), ({"suggestedResponse": False}, True, False)],
    ids=["off", "no-suggested-response"],
)
def test_hints_that_are_off_are_asked_for_kept_and_shown_nowhere(
    door: Door,
    hints: Any,
    task: bool,
    response: bool,
    open_memory: Callable[..., ObservationalMemory],
) -> None:
    model = _observer_model()  # it writes both hints whatever it is asked
    memory = open_memory(model=model, observation={**SMALL, "continuation_hints": hints})
    run = Run(memory, door)
    seen: list[BaseMessage] = []
    for i in range(5):
        seen = run.turn(i)
    prompts = "\n".join(_text(m) for c in model.calls for m in c.messages)
    assert model.calls and ("<current-task>" in prompts) is task
    assert ("<suggested-response>" in prompts) is response
    record = memory.status(thread_id="t1").record
    assert ("current_task" in record["hints"]) is task
    assert ("suggested_response" in record["hints"]) is response
    shown = "\n".join(_text(m) for m in seen if m.type == "system")
    assert "<observations>" in shown  # memory is shown, without the hints that are off
    assert ("<current-task>" in shown) is task
    assert ("<suggested-response>" in shown) is response


# -- observe_on_context_overflow and observe(force) -----------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("door", GRAPH_DOORS)
@pytest.mark.parametrize("recover", [True, False], ids=["on", "off"])
def test_a_context_overflow_is_observed_away_unless_turned_off(
    door: Door, mode: str, recover: bool, open_memory: Callable[..., ObservationalMemory]
) -> None:
    events: list[OMEvent] = []
    model = _observer_model()
    memory = open_memory(
        model=model,
        observation={"message_tokens": 30_000, "buffer_tokens": False}
        | ({} if recover else {"observeOnContextOverflow": False}),
        reflection={"observation_tokens": 40_000},
        on_debug_event=events.append,
    )
    overflowing = Overflowing(limit=6)
    run = Run(memory, door, actor=FunctionChatModel(function=overflowing))
    turn = run.turn if mode == "sync" else (lambda i: asyncio.run(run.aturn(i)))
    for i in range(6):  # two messages a turn: the fourth turn's call holds seven
        if recover or i < 3:
            turn(i)
            continue
        with pytest.raises(ContextOverflowError):
            turn(i)
        break
    archived, window = run.ids()
    if recover:
        assert model.calls, "the Observer freed context below the 30 000-token threshold"
        assert [e for e in events if isinstance(e, ContextOverflowEvent)]
        assert overflowing.sizes[3:5] == [7, 1]  # the overflowing call, then its one retry
        sent = [f"{p}{i}" for i in range(6) for p in "ha"]
        assert archived + window == sent  # every message once, in order
    else:
        assert not model.calls and archived == []
        assert not [e for e in events if isinstance(e, ContextOverflowEvent)]
        assert overflowing.sizes[-1] == 7  # not retried


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_observe_force_observes_below_the_threshold(
    mode: str, open_memory: Callable[..., ObservationalMemory]
) -> None:
    memory = open_memory(
        observation={"message_tokens": 30_000, "buffer_tokens": False},
        reflection={"observation_tokens": 40_000},
    )
    messages = [HumanMessage(_fact(0), id="h0"), AIMessage("Noted.", id="a0")]

    def observe(**kwargs: Any) -> Any:
        if mode == "sync":
            return memory.observe(thread_id="t1", **kwargs)
        return asyncio.run(memory.aobserve(thread_id="t1", **kwargs))

    below = observe(messages=messages, force=False)
    assert below.record["observed_message_count"] == 0 and len(below.window) == 2
    forced = observe(force=True)
    assert forced.record["observed_message_count"] == 2 and forced.window == []
    assert "code 7000 opens my locker" in forced.observations
    assert memory.status(thread_id="t1").status.messages.threshold == 30_000  # unchanged


# -- ModelByInputTokens above its largest tier ---------------------------------------------------


@pytest.mark.parametrize("door", DOORS)
def test_an_input_above_every_tier_fails_its_cycle_and_the_turn_goes_on(
    door: Door, open_memory: Callable[..., ObservationalMemory]
) -> None:
    events: list[OMEvent] = []
    observer = _observer_model()
    tiers = ModelByInputTokens(up_to={300: observer})  # below the Observer's bare prompt
    memory = open_memory(model=tiers, on_debug_event=events.append)  # failure_policy 'raise'
    run = Run(memory, door)
    for i in range(4):
        run.turn(i)  # never raises
    failed = [e for e in events if isinstance(e, ObservationFailedEvent)]
    assert failed and {e.reason for e in failed} == {"tier-exceeded"}
    assert observer.calls == []
    archived, window = run.ids()
    assert archived == [] and window == [f"{p}{i}" for i in range(4) for p in "ha"]
    if door in ("standalone", "history"):  # their window is in the store
        with pytest.raises(CycleFailedError, match="tier"):
            memory.observe(thread_id="t1")  # an explicit observe() reports it


@pytest.mark.parametrize("door", DOORS)
def test_a_reflector_input_above_every_tier_keeps_the_log_and_the_turn_goes_on(
    door: Door, open_memory: Callable[..., ObservationalMemory]
) -> None:
    events: list[OMEvent] = []
    reflector = _observer_model()
    memory = open_memory(
        model=None,
        observation={**SMALL, "model": _observer_model()},
        reflection={"observation_tokens": 400, "model": ModelByInputTokens(up_to={300: reflector})},
        on_debug_event=events.append,
    )
    run = Run(memory, door)
    for i in range(LOG_TURNS):
        run.turn(i)  # never raises
    failed = [e for e in events if isinstance(e, ObservationFailedEvent)]
    assert failed and all(e.operation_type == "reflection" for e in failed)
    assert {e.reason for e in failed} == {"tier-exceeded"}
    assert reflector.calls == []
    snap = memory.status(thread_id="t1")
    assert snap.record["generation"] == 0 and snap.record["observation_tokens"] > 400
    archived, window = run.ids()
    assert archived + window == [f"{p}{i}" for i in range(LOG_TURNS) for p in "ha"]


@pytest.mark.parametrize("door", GRAPH_DOORS)
def test_an_input_above_every_tier_goes_on_in_resource_scope(
    door: Door, open_memory: Callable[..., ObservationalMemory]
) -> None:
    events: list[OMEvent] = []
    memory = open_memory(
        model=ModelByInputTokens(up_to={300: _observer_model()}),
        scope="resource",
        on_debug_event=events.append,
    )
    run = Run(memory, door)
    for i in range(4):
        run.app.invoke(
            {"messages": [HumanMessage(_fact(i), id=f"h{i}")]},
            {"configurable": {"thread_id": "t1", "resource_id": "u1"}},
        )
    failed = [e for e in events if isinstance(e, ObservationFailedEvent)]
    assert failed and {e.reason for e in failed} == {"tier-exceeded"}


@pytest.mark.parametrize("door", DOORS)
def test_a_tier_the_previous_observations_fill_is_observed_without_them(
    door: Door, open_memory: Callable[..., ObservationalMemory]
) -> None:
    counter = get_default_counter()
    probe = _observer_model()
    probing = ObservationalMemory(model=probe, observation=SMALL)
    probing.observe(thread_id="p", messages=[HumanMessage("My skis are in the locker.", id="x")])
    bare = counter.count_messages(probe.calls[0].messages)
    observer = _observer_model()
    events: list[OMEvent] = []
    tiers = ModelByInputTokens(up_to={bare + 450: observer})
    memory = open_memory(
        model=tiers,
        reflection={"observation_tokens": 30_000},
        on_debug_event=events.append,
    )
    run = Run(memory, door)
    for i in range(TIER_TURNS):
        run.turn(i)
    assert not [e for e in events if isinstance(e, ObservationFailedEvent)]
    assert all(counter.count_messages(c.messages) <= bare + 450 for c in observer.calls)
    hidden = [c for c in observer.calls if "they are not shown here" in _text(c.messages[1])]
    assert hidden, "the log outgrew the tier's room and was left out of later prompts"
    archived, window = run.ids()
    assert archived + window == [f"{p}{i}" for i in range(TIER_TURNS) for p in "ha"]
    log = memory.status(thread_id="t1").observations
    assert all(str(7000 + int(mid[1:])) in log for mid in archived if mid.startswith("h"))


# -- per-request off -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("door", GRAPH_DOORS)
def test_a_request_with_memory_off_calls_writes_and_shows_nothing(
    door: Door, mode: str, open_memory: Callable[..., ObservationalMemory], tmp_path: Path
) -> None:
    model = _observer_model()
    memory = open_memory(model=model)
    run = Run(memory, door)
    for i in range(4):
        run.turn(i)
    calls, rows, record = len(model.calls), _store_rows(tmp_path / "om.db"), run.state()
    assert calls and rows  # memory observed before
    if mode == "sync":
        seen = run.turn(4, enabled=False)
    else:
        seen = asyncio.run(run.aturn(4, enabled=False))
    assert len(model.calls) == calls  # no Observer or Reflector call
    assert _store_rows(tmp_path / "om.db") == rows  # no store write
    after = run.state()
    assert after.get("om_record") == record.get("om_record")  # no record change
    assert not [m for m in seen if m.type == "system"]  # the context is not shown at all
    assert [m.id for m in seen][-1] == "h4"
    if door == "graph":  # memory's message left the state for that turn
        assert not [m for m in after["messages"] if isinstance(m, SystemMessage)]
    shown = run.turn(5)  # memory on again: the turn without memory is observed in order
    assert any("<observations>" in _text(m) for m in shown if m.type == "system")
    for i in range(6, 9):
        run.turn(i)
    archived, window = run.ids()
    assert archived + window == [f"{p}{i}" for i in range(9) for p in "ha"]


@pytest.mark.parametrize("door", GRAPH_DOORS)
def test_bad_per_request_options_are_refused_with_the_fix(
    door: Door, open_memory: Callable[..., ObservationalMemory]
) -> None:
    run = Run(open_memory(), door)
    with pytest.raises(OMUsageError, match="'enabled'"):
        run.turn(0, enable=False)
    with pytest.raises(OMUsageError, match="True or False"):
        run.turn(0, enabled="no")


def test_the_tools_do_nothing_in_a_request_with_memory_off(
    open_memory: Callable[..., ObservationalMemory], tmp_path: Path
) -> None:
    memory = open_memory(retrieval=True, memory_tool=True)
    calls: list[str] = []

    def actor(messages: list[BaseMessage], info: RecordedCall) -> AIMessage | str:
        last = messages[-1]
        if last.type == "human" and "forget" in _text(last):
            calls.append("memory")
            return AIMessage(
                "",
                tool_calls=[
                    {"name": "memory", "args": {"action": "find", "query": "ski"}, "id": "c1"}
                ],
            )
        return "Noted."

    run = Run(memory, "agent", actor=FunctionChatModel(function=actor))
    for i in range(4):
        run.turn(i)
    rows, record = _store_rows(tmp_path / "om.db"), run.state().get("om_record")
    off = run.config(enabled=False)
    run.app.invoke({"messages": [HumanMessage("Please forget the skis.", id="f1")]}, off)
    reply = [m for m in run.state()["messages"] if m.type == "tool"][-1]
    assert calls == ["memory"] and "Memory is off for this request" in _text(reply)
    recall = create_recall_tool(memory)
    answer = json.loads(recall.invoke({"mode": "messages", "anchor": "end"}, off))
    assert "Memory is off" in answer["error"]
    assert _store_rows(tmp_path / "om.db") == rows
    assert run.state().get("om_record") == record


# -- pinned thread titles --------------------------------------------------------------------------


def _titles(events: list[OMEvent]) -> list[str]:
    return [e.new_title for e in events if isinstance(e, ThreadUpdateEvent)]


def _inspect(path: Path, thread: str) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["inspect", "--db", str(path), "--thread", thread, "--json"]) == 0
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


@pytest.mark.parametrize("door", DOORS)
def test_a_renamed_thread_keeps_its_title_until_unpinned(
    door: Door, open_memory: Callable[..., ObservationalMemory], tmp_path: Path
) -> None:
    events: list[OMEvent] = []
    memory = open_memory(
        model=_observer_model(titles=True),
        observation={**SMALL, "threadTitle": True},
        on_debug_event=events.append,
    )
    run = Run(memory, door)
    for i in range(3):
        run.turn(i)
    proposed = memory.status(thread_id="t1").title
    assert proposed and proposed.startswith("Observer title") and _titles(events)
    memory.rename_thread("t1", "  Ski   lockers ")
    snap = memory.status(thread_id="t1")
    assert (snap.title, snap.title_pinned) == ("Ski lockers", True)
    before = len(_titles(events))
    for i in range(3, 8):
        run.turn(i)
    snap = memory.status(thread_id="t1")
    assert (snap.title, snap.title_pinned) == ("Ski lockers", True)
    assert snap.record["title"] == "Ski lockers"  # observations wrote the pin into the record
    assert snap.record["hints"]["thread_title"].startswith("Observer title")
    assert snap.record["hints"]["thread_title"] != proposed  # the Observer kept proposing
    assert len(_titles(events)) == before  # no title update while pinned
    inspected = _inspect(tmp_path / "om.db", "t1")
    assert (inspected["title"], inspected["title_pinned"]) == ("Ski lockers", True)
    assert memory.unpin_thread_title("t1") is True
    assert memory.unpin_thread_title("t1") is False
    for i in range(8, 11):
        run.turn(i)
    snap = memory.status(thread_id="t1")
    assert snap.title_pinned is False
    assert snap.title is not None and re.fullmatch(r"Observer title \d+", snap.title)
    assert _inspect(tmp_path / "om.db", "t1")["title_pinned"] is False


def test_rename_and_unpin_async_and_their_errors(
    open_memory: Callable[..., ObservationalMemory],
) -> None:
    memory = open_memory()

    async def run() -> bool:
        await memory.arename_thread("t1", "Async title")
        assert memory.status(thread_id="t1").title == "Async title"
        return await memory.aunpin_thread_title("t1")

    assert asyncio.run(run()) is True
    assert memory.status(thread_id="t1").title_pinned is False
    with pytest.raises(OMUsageError, match="blank"):
        memory.rename_thread("t1", "   ")
    with pytest.raises(OMUsageError, match="at most 200"):
        memory.rename_thread("t1", "x" * 201)
    memory.rename_thread("t1", "Kept")
    memory.forget(thread_id="t1")
    assert memory.status(thread_id="t1").title_pinned is False  # forget drops the pin
