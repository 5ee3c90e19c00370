"""No silent option on any front door: the door-specific options, run on each door.

:mod:`test_option_walk` runs every option on one door (the engine's ``step``). The options
below act where a front door meets its host (the model call, the turn's end, the messages the
model is sent, the tools it is offered), so each runs here on each door:

- ``agent``: ``create_agent`` with :class:`ObservationalMemoryMiddleware`;
- ``graph``: a ``StateGraph`` with :func:`add_observational_memory` (its model node binds
  ``memory.tools`` and a ``ToolNode`` runs them, as the README shows);
- ``history``: :class:`ObservationalChatMessageHistory` feeding a chain;
- ``standalone``: ``memory.add_messages``.

Each cell either changes what the door shows (:func:`trace`: what the agent's model is sent
and offered, the Observer and Reflector calls, the events, the record and the archive), or is
refused when the door is built (an ``OMConfigError`` naming the option), or is listed in
:data:`NOT_APPLICABLE` with the reason the door has no such moment (e.g. no model call of its
own to overflow). Every message carries an id.

TODO(ids-absent): a column with id-less messages on the history and standalone doors, once
the id-less fix in ``_plans/buffer.py`` / ``history.py`` is merged.
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
from langchain_om.errors import OMConfigError
from langchain_om.graph import ObservationalMemoryGraphState
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import Clock
from tests.unit_tests.test_option_walk import option_paths

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


def _human(i: int) -> HumanMessage:
    text = f"turn {i}: I like topic {i} " + "words " * 40
    return HumanMessage([{"type": "text", "text": text}, IMAGE] if i == 1 else text, id=f"h{i}")


def _reply(i: int, script: Script) -> AIMessage:
    usage: Any = USAGE if script.usage else None
    return AIMessage(f"noted {i}: topic {i} " + "more " * 30, id=f"a{i}", usage_metadata=usage)


def _turn_of(messages: list[BaseMessage]) -> int:
    human = next(m for m in reversed(messages) if m.type == "human")
    found = re.search(r"turn (\d+)", human.text)
    assert found
    return int(found.group(1))


class _Actor:
    """The agent's model: replies to each turn, overflows or calls the memory tool on cue."""

    def __init__(self, script: Script) -> None:
        self.script = script
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
            return AIMessage("", tool_calls=[call], id=f"t{i}")
        return _reply(i, self.script)

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
        model = self.actor.model(i)
        if self.door == "agent":
            self._agent(model).invoke({"messages": [_human(i)]}, self.config)
        elif self.door == "graph":
            config = {"configurable": {**self.config["configurable"], "actor_model": model}}
            self.app.invoke({"messages": [_human(i)]}, config)
        elif self.door == "history":
            history = self.histories[self.actor.models.index(model)]
            self.seen.append([_show(m) for m in [*history.messages, _human(i)]])
            history.add_messages([_human(i), _reply(i, self.actor.script)])
        else:
            snap = self.memory.add_messages(
                "t", [_human(i), _reply(i, self.actor.script)], resource_id="u", actor_model=model
            )
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


def trace(door: Door, script: Script, options: dict[str, Any]) -> str:
    """Run ``script`` on ``door`` with ``options`` and return what can be observed."""
    base = memory_model()
    observer = FunctionChatModel(function=base.function, model_name="observer")
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
    actor = _Actor(script)
    driver = _Driver(door, memory, actor)
    out: list[Any] = []
    for i in range(script.turns):
        if i == script.idle_gap_at:
            clock.now += timedelta(minutes=20)
        try:
            driver.turn(i)
        except ContextOverflowError:
            out.append(f"turn {i} raised ContextOverflowError")
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
    Row(
        "reflection.buffer_activation",
        {},
        _ref(buffer_activation=0.9),
        Script({"reflection": {"observation_tokens": 1_500}}, turns=20),
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


def _cells(kind: str) -> list[tuple[Row, Door]]:
    cells = [(row, door) for row in ROWS for door in DOORS]
    if kind == "refused":
        return [(r, d) for r, d in cells if (r.option, d) in REFUSED]
    if kind == "n/a":
        return [(r, d) for r, d in cells if (r.option, d) in NOT_APPLICABLE]
    return [(r, d) for r, d in cells if (r.option, d) not in REFUSED | NOT_APPLICABLE.keys()]


def _id(cell: tuple[Row, Door]) -> str:
    return f"{cell[0].option}@{cell[1]}"


@pytest.mark.parametrize("door", DOORS)
def test_the_script_is_deterministic_on_every_door(door: Door) -> None:
    assert trace(door, Script(), {}) == trace(door, Script(), {})


@pytest.mark.parametrize("cell", _cells("changes"), ids=_id)
def test_option_changes_behaviour_on_the_door(cell: tuple[Row, Door]) -> None:
    row, door = cell
    before, after = trace(door, row.script, row.before), trace(door, row.script, row.after)
    assert before != after, f"{row.option} changed nothing the {door} door shows"


@pytest.mark.parametrize("cell", _cells("refused"), ids=_id)
def test_option_is_refused_when_the_door_is_built(cell: tuple[Row, Door]) -> None:
    row, door = cell
    with pytest.raises(OMConfigError) as caught:
        trace(door, row.script, row.after)
    assert caught.value.option == row.option
    assert REFUSED[(row.option, door)] in caught.value.message
    trace(door, row.script, row.before)  # the default stays accepted


@pytest.mark.parametrize("cell", _cells("n/a"), ids=_id)
def test_option_without_a_moment_on_the_door_changes_nothing(cell: tuple[Row, Door]) -> None:
    row, door = cell
    assert trace(door, row.script, row.before) == trace(door, row.script, row.after)


def test_every_row_is_an_option_of_the_walk() -> None:
    assert {row.option for row in ROWS} <= option_paths()
    assert len({row.option for row in ROWS}) == len(ROWS)
