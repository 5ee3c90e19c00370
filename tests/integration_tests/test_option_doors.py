"""No silent option on any front door: the door-specific options, run on each door.

The table of issue #27 is every option × every front door × messages with and without ids;
two tests split it. :mod:`test_option_walk` has a row for every option of the config (it fails
when one has none) and runs it on one door, the engine's ``step``: that proves the options
whose effect is door-independent, the ones the engine applies to what it is given whatever
the door (the Observer's and Reflector's prompts, models and settings, extraction, archive
mode, thresholds, the spend budget, the recall tool's own behaviour, the refused values).
This file runs, on each door, the options that act where a front door meets its host: the
model call and its actor model (provider changes, reported usage, context overflow), the
clock between turns (idle activation, time markers), the turn's end and what counts as a turn
(buffering, blocking, cadence, failures surfacing), the messages and memory the model is sent
(preamble, floor, attachments, read-only, recall guidance) and the tools it is offered
(``memory_tool``, ``retrieval.code_mode``), and where the thread is kept (``scope``). The
per-kind ``observation.activate_*`` overrides act on the same door inputs as the top-level
options run here, so they stay in the walk.

The doors:

- ``agent``: ``create_agent`` with :class:`ObservationalMemoryMiddleware`;
- ``graph``: a ``StateGraph`` with :func:`add_observational_memory` (its model node binds
  ``memory.tools`` and a ``ToolNode`` runs them, as the README shows);
- ``history``: :class:`ObservationalChatMessageHistory` feeding a chain;
- ``standalone``: ``memory.add_messages``.

Each cell either changes what the door shows (:func:`trace`: what the agent's model is sent
and offered, the Observer and Reflector calls, the events, the record and the archive), or is
refused when the door is built (an ``OMConfigError`` naming the option), or is listed in
:data:`NOT_APPLICABLE` with the reason the door has no such moment (e.g. no model call of its
own to overflow). Every cell runs in two columns (:data:`IDS`): every message written with an
id, and every message written without one: the agent and graph doors get id-less input (and
an id-less reply from the model) and LangGraph's reducer gives them ids; the history gets
``add_user_message`` / ``add_ai_message``; ``add_messages`` gets role tuples and id-less
messages. The verdict (changes, refused, not applicable) is the same in both columns.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

import pytest
from langchain.agents import create_agent
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langchain_om import (
    ObservationalChatMessageHistory,
    ObservationalMemory,
    ObservationalMemoryMiddleware,
    add_observational_memory,
)
from langchain_om.errors import CycleFailedError, OMConfigError
from langchain_om.graph import ObservationalMemoryGraphState
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import Clock
from tests.integration_tests.test_option_walk import option_paths

Door = Literal["agent", "graph", "history", "standalone"]
DOORS: tuple[Door, ...] = ("agent", "graph", "history", "standalone")

_ID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{16,32}\b"
)
IMAGE = {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}
USAGE = {"input_tokens": 90_000, "output_tokens": 10, "total_tokens": 90_010}
ACTORS = (("openai", "gpt-5"), ("anthropic", "claude-x"))


@dataclass(frozen=True)
class Script:
    """What a row's two runs share: engine options and what happens along the turns."""

    options: dict[str, Any] = field(default_factory=dict)
    turns: int = 8
    idle_gap_at: int | None = None
    """Turn before which the clock jumps 20 minutes."""
    switch_actor_at: int | None = None
    """Turn from which the agent's model is another provider's."""
    overflow_at: int | None = None
    """Turn whose first model call overflows its context window (agent and graph)."""
    usage: bool = False
    """The replies report a 90 000-token prompt (``usage_metadata``)."""
    background: bool = True
    """Run the queued background work after each turn."""
    tool_at: int | None = None
    """Turn at which the agent's model calls the ``memory`` tool when it is offered."""
    observer_fails: bool = False
    """Every Observer call raises (``observation.failure_policy``)."""


def _human(i: int, ids: bool) -> HumanMessage:
    text = f"turn {i}: I like topic {i} " + "words " * 40
    content: Any = [{"type": "text", "text": text}, IMAGE] if i == 1 else text
    return HumanMessage(content, id=f"h{i}" if ids else None)


def _reply(i: int, script: Script, ids: bool) -> AIMessage:
    usage: Any = USAGE if script.usage else None
    text = f"noted {i}: topic {i} " + "more " * 30
    return AIMessage(text, id=f"a{i}" if ids else None, usage_metadata=usage)


def _idless_turn(i: int, script: Script) -> list[Any]:
    """Turn ``i`` as an application without ids writes it: role tuples where they fit."""
    human, reply = _human(i, False), _reply(i, script, False)
    return [
        ("user", human.content) if isinstance(human.content, str) else human,
        reply if reply.usage_metadata else ("assistant", reply.content),
    ]


def _turn_of(messages: list[BaseMessage]) -> int:
    human = next(m for m in reversed(messages) if m.type == "human")
    found = re.search(r"turn (\d+)", human.text)
    assert found
    return int(found.group(1))


class _Actor:
    """The agent's model: replies to each turn, overflows or calls the memory tool on cue."""

    def __init__(self, script: Script, ids: bool) -> None:
        self.script, self.ids = script, ids
        self.overflowed = False
        self.models = [
            FunctionChatModel(function=self, provider=p, model=m, model_name=m) for p, m in ACTORS
        ]

    def __call__(self, messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
        i = _turn_of(messages)
        if i == self.script.overflow_at and not self.overflowed:
            self.overflowed = True
            raise ContextOverflowError("prompt is too long: maximum context length exceeded")
        offered = {t["function"]["name"] for t in info.tools}
        if i == self.script.tool_at and "memory" in offered and messages[-1].type == "human":
            call = {"name": "memory", "args": {"action": "find", "query": "topic"}, "id": f"c{i}"}
            return AIMessage("", tool_calls=[call], id=f"t{i}" if self.ids else None)
        return _reply(i, self.script, self.ids)

    def model(self, i: int) -> FunctionChatModel:
        switched = self.script.switch_actor_at is not None and i >= self.script.switch_actor_at
        return self.models[1 if switched else 0]

    def calls(self) -> list[Any]:
        return [
            [[_show(m) for m in c.messages], sorted(t["function"]["name"] for t in c.tools)]
            for model in self.models
            for c in model.calls
        ]


def _show(message: BaseMessage) -> Any:
    return [message.type, message.content]


# -- the doors ----------------------------------------------------------------------------


def _graph(memory: ObservationalMemory) -> Any:
    """The README's graph: the model node binds ``memory.tools``, a ``ToolNode`` runs them."""
    tools = memory.tools

    def model(state: ObservationalMemoryGraphState, config: RunnableConfig) -> dict[str, Any]:
        llm: Any = (config.get("configurable") or {})["actor_model"]
        llm = llm.bind_tools(tools) if tools else llm
        return {"messages": [llm.invoke(state["messages"])]}

    builder = StateGraph(ObservationalMemoryGraphState)
    builder.add_node("model", model)
    builder.add_edge(START, "model")
    if tools:
        builder.add_node("tools", ToolNode(tools))
        builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
        builder.add_edge("tools", "model")
    else:
        builder.add_edge("model", END)
    add_observational_memory(builder, memory)
    return builder.compile(checkpointer=memory.checkpointer, store=memory.store)


class _Driver:
    """Runs turn ``i`` on one door and reports what the door keeps."""

    def __init__(self, door: Door, memory: ObservationalMemory, actor: _Actor) -> None:
        self.door, self.memory, self.actor = door, memory, actor
        self.seen: list[Any] = []  # what history/standalone hand the model
        self.config: Any = {"configurable": {"thread_id": "t", "resource_id": "u"}}
        self.agents: dict[int, Any] = {}
        self.app: Any = None
        if door == "graph":
            self.app = _graph(memory)
        if door == "history":  # built up front: construction is where a door refuses options
            self.histories = [
                ObservationalChatMessageHistory(
                    memory, thread_id="t", resource_id="u", actor_model=model
                )
                for model in actor.models
            ]
        if door == "agent":
            self.middleware = ObservationalMemoryMiddleware(memory)

    def _agent(self, model: FunctionChatModel) -> Any:
        key = id(model)
        if key not in self.agents:
            self.agents[key] = create_agent(
                model,
                [],
                middleware=[self.middleware],
                checkpointer=self.memory.checkpointer,
                store=self.memory.store,
            )
        return self.agents[key]

    def turn(self, i: int) -> None:
        model, ids, script = self.actor.model(i), self.actor.ids, self.actor.script
        human = _human(i, ids)
        if self.door == "agent":  # id-less input: LangGraph's reducer gives it an id
            self._agent(model).invoke({"messages": [human]}, self.config)
        elif self.door == "graph":
            config = {"configurable": {**self.config["configurable"], "actor_model": model}}
            self.app.invoke({"messages": [human]}, config)
        elif self.door == "history":
            history = self.histories[self.actor.models.index(model)]
            self.seen.append([_show(m) for m in [*history.messages, human]])
            if ids:
                history.add_messages([human, _reply(i, script, ids)])
            else:  # the BaseChatMessageHistory helpers build id-less messages
                history.add_user_message(human.content if isinstance(human.content, str) else human)
                reply = _reply(i, script, ids)
                history.add_ai_message(reply if reply.usage_metadata else reply.text)
        else:
            turn = [human, _reply(i, script, ids)] if ids else _idless_turn(i, script)
            snap = self.memory.add_messages("t", turn, resource_id="u", actor_model=model)
            self.seen.append([_show(m) for m in self.memory.get_context(thread_id="t")])
            assert snap.record is not None

    def kept(self) -> Any:
        if self.door in ("agent", "graph"):
            app = self.app or next(iter(self.agents.values()))
            state = app.get_state(self.config).values
            record = self.memory.read_state(state)
            window = [_show(m) for m in state.get("messages", [])]
        else:
            snap = self.memory.status(thread_id="t")
            record, window = snap.record, [_show(m) for m in snap.window]
        archive = [_show(m) for m in self.memory.archived_messages("t", record=record)]
        return [record, window, archive]


def trace(door: Door, script: Script, options: dict[str, Any], *, ids: bool = True) -> str:
    """Run ``script`` on ``door`` with ``options`` and return what can be observed.

    ``ids=False`` writes every message without an id (the door, or LangGraph's reducer on the
    agent and graph doors, gives it one); ids in the trace read ``<id>`` either way.
    """
    base = memory_model()
    observer = FunctionChatModel(
        function=_failing if script.observer_fails else base.function, model_name="observer"
    )
    reflector = FunctionChatModel(function=base.function, model_name="reflector")
    opts: dict[str, Any] = {
        "observation": {"model": observer, "message_tokens": 700, "buffer_tokens": 200},
        "reflection": {"model": reflector, "observation_tokens": 300},
    }
    for layer in (script.options, options):  # the row's options over the script's
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(opts.get(key), dict):
                opts[key] = {**opts[key], **value}
            else:
                opts[key] = value
    hooks: list[str] = []
    opts["hooks"] = {
        name: (lambda ctx, name=name: hooks.append(name)) if name.startswith("on_") else value
        for name, value in (opts.get("hooks") or {}).items()
    }
    clock = Clock()
    events: list[Any] = []
    memory = ObservationalMemory(
        opts, clock=clock, background="manual", sleep=lambda s: None, on_debug_event=events.append
    )
    actor = _Actor(script, ids)
    driver = _Driver(door, memory, actor)
    out: list[Any] = []
    for i in range(script.turns):
        if i == script.idle_gap_at:
            clock.now += timedelta(minutes=20)
        try:
            driver.turn(i)
        except (ContextOverflowError, CycleFailedError) as exc:
            out.append(f"turn {i} raised {type(exc).__name__}")
            break
        if script.background:
            memory.run_background()
        clock.now += timedelta(seconds=30)
    shown = {
        "out": out,
        "kept": driver.kept(),
        "seen": driver.seen or actor.calls(),
        "calls": [
            [[_show(m) for m in c.messages], sorted(c.kwargs.items(), key=str)]
            for model in (observer, reflector)
            for c in model.calls
        ],
        "events": [
            {k: v for k, v in e.model_dump(mode="json").items() if k != "duration_ms"}
            for e in events
        ],
        "hooks": hooks,
    }
    memory.close()
    return _ID.sub("<id>", json.dumps(shown, default=repr, sort_keys=True))


# -- the rows -------------------------------------------------------------------------------


def _obs(**values: Any) -> dict[str, Any]:
    return {"observation": values}


def _ref(**values: Any) -> dict[str, Any]:
    return {"reflection": values}


def _topics_to_subjects(messages: list[BaseMessage], ctx: Any) -> list[BaseMessage]:
    return [
        m.model_copy(update={"content": m.content.replace("topic", "subject")})
        if isinstance(m.content, str)
        else m
        for m in messages
    ]


def _with_line(text: str, ctx: Any) -> str:
    return text + "\n* 🟢 (09:00) added by a hook"


def _noop(ctx: Any) -> None:
    return None


def _failing(messages: list[BaseMessage], info: RecordedCall) -> Any:
    raise RuntimeError("observer down")


@dataclass(frozen=True)
class Row:
    """Setting ``option`` from ``before`` to ``after`` on each door, along ``script``."""

    option: str
    before: dict[str, Any]
    after: dict[str, Any]
    script: Script = field(default_factory=Script)


NO_BUFFER = Script({"observation": {"buffer_tokens": False}})
WIDE = {"observation": {"message_tokens": 3_000}, "reflection": {"observation_tokens": 2_000}}
"""A threshold these turns never reach: buffered chunks wait for an early activation."""
IDLE = Script(WIDE, idle_gap_at=6, turns=8)
SWITCH = Script(WIDE, switch_actor_at=6, turns=8)
FAILING = Script(NO_BUFFER.options, observer_fails=True)
REFLECT_IDLE = Script(idle_gap_at=7, turns=8)
"""A reflection is buffered from turn 6 (its log below the threshold), then the clock jumps."""
REFLECT_SWITCH = Script(switch_actor_at=7, turns=8)
SMALL_LOG = Script(_ref(observation_tokens=200))
"""The first activation takes the log (about 260 tokens) past the reflection threshold and
its default ``block_after`` (240) at once: it reflects synchronously."""

ROWS: list[Row] = [
    Row("enabled", {}, {"enabled": False}),
    Row("read_only", {}, {"read_only": True}),
    Row("keep_last_messages", {}, {"keep_last_messages": 12}),
    Row("memory_tool", {}, {"memory_tool": True}, Script(turns=10, tool_at=8)),
    Row("retrieval", {}, {"retrieval": True}),
    Row("temporal_markers", {}, {"temporal_markers": True}, IDLE),
    Row("activate_after_idle", {}, {"activate_after_idle": "5m"}, IDLE),
    Row("activate_on_provider_change", {}, {"activate_on_provider_change": True}, SWITCH),
    Row("observation.buffer_tokens", {}, _obs(buffer_tokens=False)),
    Row("observation.buffer_activation", {}, _obs(buffer_activation=0.3)),
    Row("observation.block_after", {}, _obs(block_after=3), Script(background=False, turns=10)),
    Row("observation.buffer_on_idle", {}, _obs(buffer_on_idle=True)),
    Row(
        "observation.use_usage_metadata",
        {},
        _obs(use_usage_metadata=True),
        Script(NO_BUFFER.options, usage=True),
    ),
    Row(
        "observation.observe_on_context_overflow",
        {},
        _obs(observe_on_context_overflow=False),
        Script(WIDE, overflow_at=3, turns=5),
    ),
    Row("observation.observe_attachments", {}, _obs(observe_attachments=False)),
    Row("hooks.on_observation_start", {}, {"hooks": {"on_observation_start": _noop}}),
    Row("hooks.on_reflection_end", {}, {"hooks": {"on_reflection_end": _noop}}),
    Row("hooks.before_observation", {}, {"hooks": {"before_observation": _topics_to_subjects}}),
    Row("hooks.after_observation", {}, {"hooks": {"after_observation": _with_line}}),
    Row("hooks.before_reflection", {}, {"hooks": {"before_reflection": _with_line}}),
    Row("hooks.after_reflection", {}, {"hooks": {"after_reflection": _with_line}}),
    Row("observation.failure_policy", {}, _obs(failure_policy="raise"), FAILING),
    Row("scope", {}, {"scope": "resource"}),
    Row("preamble", {}, {"preamble": "What you remember:\n{observations}"}),
    Row("retrieval.instructions", {"retrieval": True}, {"retrieval": {"instructions": "Hm."}}),
    Row("retrieval.code_mode", {"retrieval": True}, {"retrieval": {"code_mode": True}}),
    Row("cadence.every_n_turns", {}, {"cadence": {"every_n_turns": 3}}),
    Row("cadence.session_end", {}, {"cadence": {"session_end": True}}),
    # the first activation's log (about 260 of 300 tokens) starts a buffered reflection at 0.5
    Row("reflection.buffer_activation", {}, _ref(buffer_activation=0.9)),
    Row("reflection.block_after", {}, _ref(block_after=1_000), SMALL_LOG),
    Row("reflection.activate_after_idle", {}, _ref(activate_after_idle="5m"), REFLECT_IDLE),
    Row(
        "reflection.activate_on_provider_change",
        {},
        _ref(activate_on_provider_change=True),
        REFLECT_SWITCH,
    ),
]

REFUSED: dict[tuple[str, Door], str] = {
    ("memory_tool", "history"): "the history keeps its thread in the store",
}
"""Cells refused when the door is built: the phrase the error carries."""

NOT_APPLICABLE: dict[tuple[str, Door], str] = {
    ("memory_tool", "standalone"): (
        "add_messages has no agent to offer a tool to: memory.tools serve the agent and graph "
        "threads of the same memory, where the tool edits the record in the run's state"
    ),
    ("observation.observe_on_context_overflow", "history"): (
        "the history adapter never makes the model call: the chain that reads it does, so "
        "no overflow reaches memory (memory.observe(force=True) frees context by hand)"
    ),
    ("observation.observe_on_context_overflow", "standalone"): (
        "add_messages makes no model call, so nothing can overflow (memory.observe(force=True) "
        "frees context by hand)"
    ),
}
"""Cells where the door has no moment the option acts at, and why (nothing is lost)."""


Ids = Literal["ids", "no-ids"]
IDS: tuple[Ids, ...] = ("ids", "no-ids")
"""The two columns: every message written with an id, or every message without one."""

Cell = tuple[Row, Door, Ids]


def _cells(kind: str) -> list[Cell]:
    cells = [(row, door, ids) for row in ROWS for door in DOORS for ids in IDS]
    if kind == "refused":
        return [c for c in cells if (c[0].option, c[1]) in REFUSED]
    if kind == "n/a":
        return [c for c in cells if (c[0].option, c[1]) in NOT_APPLICABLE]
    return [c for c in cells if (c[0].option, c[1]) not in REFUSED | NOT_APPLICABLE.keys()]


def _id(cell: Cell) -> str:
    return f"{cell[0].option}@{cell[1]}-{cell[2]}"


_BASELINES: dict[str, str] = {}


def baseline(door: Door, script: Script, options: dict[str, Any], ids: Ids) -> str:
    """:func:`trace` of a row's ``before`` side, computed once per process and script.

    Many rows share a script and the defaults; the trace is deterministic (see
    :func:`test_every_baseline_is_deterministic`), so it is reused.
    """
    key = repr((door, script, options, ids))  # hooks repr by identity: stable in a process
    if key not in _BASELINES:
        _BASELINES[key] = trace(door, script, options, ids=ids == "ids")
    return _BASELINES[key]


def _baselines() -> list[tuple[Door, Row, Ids]]:
    """The default script on every door with ids; every row's baseline without them."""
    seen: dict[str, Row] = {}
    for row in ROWS:
        seen.setdefault(repr((row.script, row.before)), row)
    defaults = Row("defaults", {}, {})
    cases: list[tuple[Door, Row, Ids]] = [(door, defaults, "ids") for door in DOORS]
    return cases + [(door, row, "no-ids") for row in seen.values() for door in DOORS]


@pytest.mark.parametrize(
    "case", _baselines(), ids=lambda c: f"{c[1].option}-baseline@{c[0]}-{c[2]}"
)
def test_every_baseline_is_deterministic(case: tuple[Door, Row, Ids]) -> None:
    """Reruns are identical: without ids, the fresh uuid4s given never leak into a trace, so a
    cell's difference is the option's."""
    door, row, ids = case
    again = trace(door, row.script, row.before, ids=ids == "ids")
    assert baseline(door, row.script, row.before, ids) == again


@pytest.mark.parametrize("cell", _cells("changes"), ids=_id)
def test_option_changes_behaviour_on_the_door(cell: Cell) -> None:
    row, door, ids = cell
    before = baseline(door, row.script, row.before, ids)
    after = trace(door, row.script, row.after, ids=ids == "ids")
    assert before != after, f"{row.option} changed nothing the {door} door shows ({ids})"


@pytest.mark.parametrize("cell", _cells("refused"), ids=_id)
def test_option_is_refused_when_the_door_is_built(cell: Cell) -> None:
    row, door, ids = cell
    with pytest.raises(OMConfigError) as caught:
        trace(door, row.script, row.after, ids=ids == "ids")
    assert caught.value.option == row.option
    assert REFUSED[(row.option, door)] in caught.value.message
    baseline(door, row.script, row.before, ids)  # the default stays accepted


@pytest.mark.parametrize("cell", _cells("n/a"), ids=_id)
def test_option_without_a_moment_on_the_door_changes_nothing(cell: Cell) -> None:
    row, door, ids = cell
    before = baseline(door, row.script, row.before, ids)
    assert before == trace(door, row.script, row.after, ids=ids == "ids")


def test_every_row_is_an_option_of_the_walk() -> None:
    assert {row.option for row in ROWS} <= option_paths()
    assert len({row.option for row in ROWS}) == len(ROWS)
