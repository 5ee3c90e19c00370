"""No silent options: every field of ``ObservationalMemoryConfig`` changes behaviour or is refused.

The walk collects every option by its dotted path, recursing through the nested option models
(``observation``, ``reflection``, ``retrieval``, ``hooks``, ``model_settings``). Each option has
one row in :data:`TABLE`:

- :class:`Changes`: two engines that differ only in that option run the same deterministic
  script (scripted Observer/Reflector, fixed clock, manual background) and their traces differ.
  The trace is what a user can observe: every request the Observer and Reflector were sent
  (messages and call settings), the events, the record, the window, the memory context and
  the tools.
- :class:`Refused`: building the engine raises ``OMConfigError`` naming the option, the
  limitation and the alternative (the options listed in ``langchain_om._config.unbuilt``). Values
  that stay accepted are listed too: ``observation.max_tokens_per_batch`` and
  ``obscure_thread_ids`` are refused in thread scope only; what they change in resource scope
  is tested in ``test_resource_scope`` (batches, hashed labels).

Options whose resource-scope behaviour thread scope's rows do not show (``reflection.block_after``
bounds the shared log shown) have a second row in :data:`RESOURCE_CHANGES`, run in resource scope;
the options resource scope refuses are listed in :data:`RESOURCE_REFUSED`.

The walk runs on one door (the engine's ``step``, and ``add_messages`` where a row says
``standalone``), which proves the options whose effect does not depend on the door;
``test_option_doors`` runs the options that act where a front door meets its host (the model
call, the clock between turns, the turn's end, the context and tools the model gets) on each
door, with and without message ids. An option is in the walk always, and in the door test
too when it is door-specific.

A new option without a row fails :func:`test_every_option_has_a_row`. To make a refused option
work, drop its entry from ``langchain_om._config.unbuilt.UNBUILT`` and turn its ``Refused`` row
into a ``Changes`` row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel

from langchain_om import Extractor, ObservationalMemory
from langchain_om._config.rules import nested_model
from langchain_om._config.unbuilt import UNBUILT, UNBUILT_IN_RESOURCE_SCOPE
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import CycleFailedError, OMConfigError
from langchain_om.testing import FunctionChatModel, HashEmbeddings, RecordedCall, memory_model
from langchain_om.tools import create_recall_code_tool, create_recall_tool
from tests.helpers import Clock

# -- the walk -------------------------------------------------------------------------------


def option_paths(model: type[BaseModel] = ObservationalMemoryConfig, prefix: str = "") -> set[str]:
    """Dotted paths of every option; a nested option model is walked into.

    ``retrieval`` is both an option (on/off) and a nested model, so it is listed itself too.
    """
    paths: set[str] = set()
    for name in model.model_fields:
        path = f"{prefix}{name}"
        nested = nested_model(model, name)
        if nested is None:
            paths.add(path)
            continue
        paths |= option_paths(nested, f"{path}.")
        if model.model_fields[name].default is None:  # optional sub-config: on/off itself
            paths.add(path)
    return paths


# -- the script and its trace ---------------------------------------------------------------

_ID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{16,32}\b"
)
IMAGE = {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}


def _roles(base: FunctionChatModel) -> tuple[FunctionChatModel, FunctionChatModel]:
    """Two recording copies of ``base``'s function: the Observer's and the Reflector's."""
    fn = base.function
    return (
        FunctionChatModel(function=fn, model_name="observer"),
        FunctionChatModel(function=fn, model_name="reflector"),
    )


@dataclass
class Script:
    """Engine options shared by the two sides of a row, and what the script does."""

    options: dict[str, Any] = field(default_factory=dict)
    turns: int = 14
    idle_gap_at: int | None = None
    """Turn before which the clock jumps 20 minutes (idle activation, time-gap markers)."""
    switch_actor_at: int | None = None
    """Turn from which the agent's model is another provider's."""
    observer: Callable[[list[BaseMessage], RecordedCall], Any] | None = None
    """Replaces the scripted Observer's function (failures)."""
    reflector: Callable[[list[BaseMessage], RecordedCall], Any] | None = None
    """Replaces the scripted Reflector's function (failures)."""
    standalone: bool = False
    """Drive ``add_messages`` and ``end_turn`` instead of ``step``."""
    background: bool = True
    """Run the queued background work after each turn (False: buffering never completes)."""
    embeddings: bool = False
    """Index the store (``HashEmbeddings``): ``retrieval.vector`` needs one."""
    search: str | None = None
    """After the turns, run the recall tool's ``mode="search"`` with this query."""
    overflow_at: int | None = None
    """Turn whose step reports that the agent's model call overflowed its context."""
    program: str | None = None
    """After the turns, run this program with recall code mode's tool."""


def _turn(i: int) -> list[BaseMessage]:
    call = {"name": "lookup", "args": {"q": str(i)}, "id": f"c{i}"}
    usage = {"input_tokens": 90_000, "output_tokens": 10, "total_tokens": 90_010}
    return [
        HumanMessage(
            [{"type": "text", "text": f"turn {i}: I like topic {i} " + "words " * 40}, IMAGE]
            if i == 1
            else f"turn {i}: I like topic {i} " + "words " * 40,
            id=f"h{i}",
        ),
        AIMessage("", tool_calls=[call], id=f"t{i}"),
        ToolMessage("result " * (400 if i == 2 else 20), tool_call_id=f"c{i}", id=f"r{i}"),
        AIMessage(f"noted {i}", id=f"a{i}", usage_metadata=usage),
    ]


def trace(script: Script, options: dict[str, Any]) -> str:
    """Run ``script`` on an engine built with ``options`` and return what can be observed."""
    base = memory_model()
    observer, reflector = _roles(base)
    if script.observer is not None:
        observer = FunctionChatModel(function=script.observer, model_name="observer")
    if script.reflector is not None:
        reflector = FunctionChatModel(function=script.reflector, model_name="reflector")
    clock = Clock()
    events: list[Any] = []
    hooks: list[str] = []
    opts: dict[str, Any] = {
        "observation": {"model": observer, "message_tokens": 1_500, "buffer_tokens": 300},
        "reflection": {"model": reflector, "observation_tokens": 300},
    }
    for key, value in {**script.options, **options}.items():
        if isinstance(value, dict) and isinstance(opts.get(key), dict):
            opts[key] = {**opts[key], **value}
        else:
            opts[key] = value
    # Telemetry hooks are replaced by recorders; transform hooks and flags are kept.
    opts["hooks"] = {
        name: (lambda ctx, name=name: hooks.append(name)) if name.startswith("on_") else value
        for name, value in (opts.get("hooks") or {}).items()
    }
    memory = ObservationalMemory(
        opts,
        clock=clock,
        background="manual",
        sleep=lambda s: None,
        on_debug_event=events.append,
        embeddings=HashEmbeddings(dims=64) if script.embeddings else None,
    )
    out: list[Any] = []
    try:
        _drive(memory, script, clock, out)
    except CycleFailedError as exc:
        out.append(f"raised {type(exc).__name__}")
    models = [observer, reflector, *([opts["model"]] if "model" in opts else [])]
    calls = [
        [m.model_name, [_show(x) for x in c.messages], sorted(c.kwargs.items(), key=str)]
        for m in models
        if isinstance(m, FunctionChatModel)
        for c in m.calls
    ]
    shown = {
        "out": out,
        "calls": calls,
        "events": [_timeless(e.model_dump(mode="json")) for e in events],
        "hooks": hooks,
        "tools": [(t.name, t.description) for t in memory.tools],
    }
    return _ID.sub("<id>", json.dumps(shown, default=repr, sort_keys=True))


def _timeless(event: dict[str, Any]) -> dict[str, Any]:
    """An event without its measured wall time (the only thing that varies between runs)."""
    return {k: v for k, v in event.items() if k != "duration_ms"}


def _show(message: BaseMessage) -> Any:
    return [message.type, message.content]


def _drive(memory: ObservationalMemory, script: Script, clock: Clock, out: list[Any]) -> None:
    window: list[BaseMessage] = []
    record: Any = None
    for i in range(script.turns):
        if i == script.idle_gap_at:
            clock.now += timedelta(minutes=20)
        actor = (
            "anthropic/claude-x"
            if script.switch_actor_at is not None and (i >= script.switch_actor_at)
            else "openai/gpt-5"
        )
        if script.standalone:
            snap = memory.add_messages("t", _turn(i), resource_id="u", actor_model=actor)
            memory.end_turn(thread_id="t", window=snap.window, record=snap.record, resource_id="u")
            record, window = snap.record, snap.window
        else:
            window = window + _turn(i)
            step = memory.step(
                thread_id="t",
                window=window,
                record=record,
                resource_id="u",
                actor_model=actor,
                context_overflow=i == script.overflow_at,
            )
            record, window = step.record, step.window
        if script.background:
            memory.run_background()
        clock.now += timedelta(seconds=30)
        out.append([m.id for m in window])
    out.append(record)
    out.append(memory.render(record).blocks)
    out.append([_show(m) for m in memory.archived_messages("t", record=record)])
    cfg: RunnableConfig = {"configurable": {"thread_id": "t", "resource_id": "u"}}
    if script.search is not None:
        tool = create_recall_tool(memory)
        out.append(json.loads(tool.invoke({"mode": "search", "query": script.search}, cfg)))
    if script.program is not None:
        code_tool = create_recall_code_tool(memory)
        out.append(json.loads(code_tool.invoke({"code": script.program}, cfg)))


# -- the table ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Changes:
    """Setting ``option`` from ``before`` to ``after`` changes what ``script`` shows."""

    option: str
    before: dict[str, Any]
    after: dict[str, Any]
    script: Script = field(default_factory=Script)


@dataclass(frozen=True)
class Refused:
    """``options`` are refused with an error naming ``option`` and containing ``phrase``."""

    option: str
    options: dict[str, Any]
    phrase: str
    accepted: tuple[dict[str, Any], ...] = ()
    """Values of the option that give today's behaviour and stay accepted."""


def _failing(messages: list[BaseMessage], info: RecordedCall) -> Any:
    raise RuntimeError("observer down")


def _obs(**values: Any) -> dict[str, Any]:
    return {"observation": values}


def _ref(**values: Any) -> dict[str, Any]:
    return {"reflection": values}


def _noop(ctx: Any) -> None:
    return None


def _topics_to_subjects(messages: list[BaseMessage], ctx: Any) -> list[BaseMessage]:
    return [
        m.model_copy(update={"content": m.content.replace("topic", "subject")})
        if isinstance(m.content, str)
        else m
        for m in messages
    ]


def _with_line(text: str, ctx: Any) -> str:
    return text + "\n* 🟢 (09:00) added by a hook"


class _TopicsValue(BaseModel):
    topics: list[str]


NO_BUFFER = Script({"observation": {"buffer_tokens": False}})
IDLE = Script(idle_gap_at=6, turns=8)
SWITCH = Script(switch_actor_at=6, turns=8)
REFLECT_BUFFER = Script({"reflection": {"observation_tokens": 1_500}}, turns=20)
ARCHIVE = {"after_tokens": 500, "keep_tokens": 150, "max_catalog_tokens": 400}
"""Archive mode (it replaces reflection: its rows run without reflection options)."""
NO_REFLECTION: dict[str, Any] = {"reflection": None}
PROGRAM = Script(
    program="n = 0\nfor i in range(3):\n    n += recall(mode='threads')['count']\n"
    "for i in range(1500):\n    n += 1\nreturn n"
)
"""A program making three recall calls and about 3000 evaluation steps."""

TABLE: list[Changes | Refused] = [
    # top level
    Changes("enabled", {}, {"enabled": False}),
    Changes(
        "model",
        {},
        {
            "model": memory_model(words=3),
            "observation": {"model": None},
            "reflection": {"model": None},
        },
    ),
    Changes("scope", {}, {"scope": "resource"}, NO_BUFFER),
    Changes("activate_after_idle", {}, {"activate_after_idle": "5m"}, IDLE),
    Changes("activate_on_provider_change", {}, {"activate_on_provider_change": True}, SWITCH),
    Changes("share_token_budget", {}, {"share_token_budget": True}, NO_BUFFER),
    Changes("temporal_markers", {}, {"temporal_markers": True}, IDLE),
    Changes("retrieval", {}, {"retrieval": True}),
    Changes(
        "retrieval.vector",
        {"retrieval": True},
        {"retrieval": {"vector": True}},
        Script(embeddings=True),
    ),
    Changes(
        "retrieval.min_score",
        {"retrieval": {"vector": True}},
        {"retrieval": {"vector": True, "min_score": 0.0}},
        Script(embeddings=True, search="xyzzy plugh"),
    ),
    Changes("retrieval.scope", {"retrieval": True}, {"retrieval": {"scope": "thread"}}),
    Changes("retrieval.instructions", {"retrieval": True}, {"retrieval": {"instructions": "Hm."}}),
    Changes("retrieval.code_mode", {"retrieval": True}, {"retrieval": {"code_mode": True}}),
    Changes(
        "retrieval.code_mode.max_calls",
        {"retrieval": {"code_mode": True}},
        {"retrieval": {"code_mode": {"max_calls": 2}}},
        PROGRAM,
    ),
    Changes(
        "retrieval.code_mode.max_steps",
        {"retrieval": {"code_mode": True}},
        {"retrieval": {"code_mode": {"max_steps": 1_000}}},
        PROGRAM,
    ),
    Changes(
        "retrieval.code_mode.timeout",
        {"retrieval": {"code_mode": True}},
        {"retrieval": {"code_mode": {"timeout": 1e-9}}},
        PROGRAM,
    ),
    Refused(
        "obscure_thread_ids",
        {"obscure_thread_ids": True},
        "only in resource scope",
        ({"obscure_thread_ids": False}, {"scope": "resource", "obscure_thread_ids": True}),
    ),
    # hooks: the hook is called
    *[
        Changes(f"hooks.{name}", {}, {"hooks": {name: _noop}})
        for name in (
            "on_observation_start",
            "on_observation_end",
            "on_reflection_start",
            "on_reflection_end",
        )
    ],
    # transform hooks: what the Observer / Reflector see and what is kept changes
    Changes("hooks.before_observation", {}, {"hooks": {"before_observation": _topics_to_subjects}}),
    Changes("hooks.after_observation", {}, {"hooks": {"after_observation": _with_line}}),
    Changes("hooks.before_reflection", {}, {"hooks": {"before_reflection": _with_line}}),
    Changes("hooks.after_reflection", {}, {"hooks": {"after_reflection": _with_line}}),
    Changes(
        "hooks.archive_transformed",
        {"hooks": {"before_observation": _topics_to_subjects}},
        {"hooks": {"before_observation": _topics_to_subjects, "archive_transformed": True}},
    ),
    # presentation and modes
    Changes("read_only", {}, {"read_only": True}),
    Changes("keep_last_messages", {}, {"keep_last_messages": 16}),
    Changes("preamble", {}, {"preamble": "What you remember:\n{observations}"}),
    Changes("memory_tool", {}, {"memory_tool": True}),
    # observation
    Changes("observation.model", {}, _obs(model=memory_model(words=3))),
    Changes("observation.instruction", {}, _obs(instruction="Mind the topics.")),
    Changes(
        "observation.instruction_mode",
        _obs(instruction="Mind the topics."),
        _obs(instruction="Mind the topics.", instruction_mode="replace"),
    ),
    Changes(
        "observation.continuation_hints.current_task",
        {},
        _obs(continuation_hints={"current_task": False}),
    ),
    Changes(
        "observation.continuation_hints.suggested_response",
        {},
        _obs(continuation_hints={"suggested_response": False}),
    ),
    Changes(
        "observation.observe_on_context_overflow",
        {},
        _obs(observe_on_context_overflow=False),
        Script(overflow_at=1, turns=3),
    ),
    Changes("observation.thread_title", {}, _obs(thread_title=True)),
    Changes("observation.output", {}, _obs(output="structured")),
    Changes("observation.prompt", {}, _obs(prompt="compact")),
    Changes("observation.extract", {}, _obs(extract=[Extractor("Topics", "Topics liked.")])),
    Changes("observation.manage_working_memory", {}, _obs(manage_working_memory=True)),
    Changes("observation.observe_attachments", {}, _obs(observe_attachments=False)),
    Changes(
        "observation.message_tokens",
        _ref(observation_tokens=500),  # the smallest log a 3,000-token batch may fill
        {**_obs(message_tokens=3_000), **_ref(observation_tokens=500)},
    ),
    Changes("observation.part_tokens", {}, _obs(part_tokens=200)),
    Changes("observation.output_budget", {}, _obs(output_budget=2_000)),
    Refused(
        "observation.max_tokens_per_batch",
        _obs(max_tokens_per_batch=7_000),
        "resource scope",
        (
            _obs(max_tokens_per_batch=10_000),
            {"scope": "resource", **_obs(max_tokens_per_batch=7_000)},
        ),
    ),
    Changes("observation.model_settings.temperature", {}, _obs(model_settings={"temperature": 1})),
    Changes(
        "observation.model_settings.max_output_tokens",
        {},
        _obs(model_settings={"max_output_tokens": 300}),  # below the output budget
    ),
    Changes("observation.model_settings.top_p", {}, _obs(model_settings={"top_p": 0.5})),
    Changes(
        "observation.model_settings.frequency_penalty",
        {},
        _obs(model_settings={"frequency_penalty": 0.5}),
    ),
    Changes("observation.provider_options", {}, _obs(provider_options={"seed": 7})),
    Changes("observation.buffer_tokens", {}, _obs(buffer_tokens=False)),
    Changes("observation.buffer_on_idle", {}, _obs(buffer_on_idle=True), Script(standalone=True)),
    Changes("observation.use_usage_metadata", {}, _obs(use_usage_metadata=True), NO_BUFFER),
    Changes("observation.buffer_activation", {}, _obs(buffer_activation=0.3)),
    Changes(
        "observation.activate_after_idle",
        {"activate_after_idle": "5m"},
        {"activate_after_idle": "5m", "observation": {"activate_after_idle": False}},
        IDLE,
    ),
    Changes(
        "observation.activate_on_provider_change",
        {},
        _obs(activate_on_provider_change=True),
        SWITCH,
    ),
    Changes("observation.block_after", {}, _obs(block_after=3), Script(background=False)),
    Changes("observation.previous_observer_tokens", {}, _obs(previous_observer_tokens=0)),
    Changes(
        "observation.failure_policy",
        _obs(buffer_tokens=False),
        _obs(buffer_tokens=False, failure_policy="raise"),  # the default is "continue"
        Script(observer=_failing),
    ),
    Changes("observation.tool_result_max_tokens", {}, _obs(tool_result_max_tokens=100)),
    Changes(
        "observation.archive",
        NO_REFLECTION,
        {**NO_REFLECTION, **_obs(archive=ARCHIVE)},
        Script(turns=20),
    ),
    *[
        Changes(
            f"observation.archive.{name}",
            {**NO_REFLECTION, **_obs(archive=ARCHIVE)},
            {**NO_REFLECTION, **_obs(archive={**ARCHIVE, name: value})},
            Script(turns=20),
        )
        for name, value in (
            ("after_tokens", 900),
            ("keep_tokens", 300),
            ("max_catalog_tokens", 120),
        )
    ],
    # reflection
    Changes("reflection.model", {}, _ref(model=memory_model(words=3, keep=1.0))),
    Changes("reflection.instruction", {}, _ref(instruction="Keep the topics.")),
    Changes(
        "reflection.instruction_mode",
        _ref(instruction="Keep the topics."),
        _ref(instruction="Keep the topics.", instruction_mode="replace"),
    ),
    Changes("reflection.continuation_hints", {}, _ref(continuation_hints=False)),
    Changes(
        "reflection.continuation_hints.current_task",
        {},
        _ref(continuation_hints={"current_task": False}),
    ),
    Changes(
        "reflection.continuation_hints.suggested_response",
        {},
        _ref(continuation_hints={"suggested_response": False}),
    ),
    Changes(
        "reflection.extract",
        {},
        _ref(extract=[Extractor("Topics", "Topics liked.", schema=_TopicsValue)]),
    ),
    Changes("reflection.output", {}, _ref(output="structured")),
    Changes("reflection.observation_tokens", {}, _ref(observation_tokens=600)),
    Changes("reflection.output_budget", {}, _ref(output_budget=False)),
    Changes("reflection.model_settings.temperature", {}, _ref(model_settings={"temperature": 1})),
    Changes(
        "reflection.model_settings.max_output_tokens",
        {},
        _ref(model_settings={"max_output_tokens": 300}),  # below the output budget
    ),
    Changes("reflection.model_settings.top_p", {}, _ref(model_settings={"top_p": 0.5})),
    Changes(
        "reflection.model_settings.frequency_penalty",
        {},
        _ref(model_settings={"frequency_penalty": 0.5}),
    ),
    Changes("reflection.provider_options", {}, _ref(provider_options={"seed": 7})),
    Changes("reflection.buffer_activation", {}, _ref(buffer_activation=0.9), REFLECT_BUFFER),
    Changes(
        "reflection.activate_after_idle",
        {},
        _ref(activate_after_idle="5m"),
        Script({"reflection": {"observation_tokens": 1_500}}, idle_gap_at=14, turns=16),
    ),
    Changes(
        "reflection.activate_on_provider_change",
        {},
        _ref(activate_on_provider_change=True),
        Script({"reflection": {"observation_tokens": 1_500}}, switch_actor_at=14, turns=16),
    ),
    Changes("reflection.block_after", {}, _ref(block_after=1.01), REFLECT_BUFFER),
    # spend control: fewer model calls (and data-om-spend-limit events) once a limit is used up
    *[
        Changes(f"spend.{name}", {}, {"spend": {name: value}})
        for name, value in (
            ("tokens_per_hour", 2_000),
            ("tokens_per_day", 2_000),
            ("cycles_per_hour", 1),
            ("cycles_per_day", 1),
        )
    ],
    Changes(
        "spend.per",
        {"spend": {"cycles_per_hour": 1}},
        {"spend": {"cycles_per_hour": 1, "per": "resource"}},  # the events name the resource
    ),
    Changes("cadence.every_n_turns", {}, {"cadence": {"every_n_turns": 3}}),
    Changes("cadence.session_end", {}, {"cadence": {"session_end": True}}),
]


def _rows() -> dict[str, Changes | Refused]:
    return {row.option: row for row in TABLE}


def test_every_option_has_a_row() -> None:
    options = [row.option for row in TABLE]
    assert len(options) == len(set(options)), "an option has two rows"
    assert set(options) == option_paths()


def test_refused_rows_match_the_engine_list() -> None:
    refused = {row.option for row in TABLE if isinstance(row, Refused)}
    assert refused == {entry.option for entry in UNBUILT}


def test_the_script_is_deterministic() -> None:
    assert trace(Script(), {}) == trace(Script(), {})


@pytest.mark.parametrize(
    "row", [r for r in TABLE if isinstance(r, Changes)], ids=lambda r: r.option
)
def test_option_changes_behaviour(row: Changes) -> None:
    same = trace(row.script, row.before) == trace(row.script, row.after)
    assert not same, f"{row.option} changed nothing the script can observe"


@pytest.mark.parametrize(
    "row", [r for r in TABLE if isinstance(r, Refused)], ids=lambda r: r.option
)
def test_option_is_refused_naming_why(row: Refused) -> None:
    with pytest.raises(OMConfigError) as caught:
        ObservationalMemory(row.options, model=memory_model())
    assert caught.value.option == row.option
    assert row.option in caught.value.message and "not supported yet" in caught.value.message
    assert row.phrase in caught.value.message
    for accepted in row.accepted:
        ObservationalMemory(accepted, model=memory_model())  # today's behaviour: accepted


RESOURCE_REFUSED: dict[str, dict[str, Any]] = {
    "observation.use_usage_metadata": _obs(use_usage_metadata=True),
    "reflection.activate_after_idle": _ref(activate_after_idle="5m"),
    "reflection.activate_on_provider_change": _ref(activate_on_provider_change=True),
    # refused only with resource-scope buffering on (an explicit buffer_tokens)
    "keep_last_messages": {"keep_last_messages": 4, **_obs(buffer_tokens=0.2)},
    "memory_tool": {"memory_tool": True},
    "observation.archive": {**NO_REFLECTION, **_obs(archive=True)},
}
"""Options that change behaviour in thread scope (rows above) and are refused in resource
scope, where they would do nothing."""


RESOURCE = Script({"scope": "resource", "observation": {"buffer_tokens": False}})
BUFFERED_RESOURCE: dict[str, Any] = {"scope": "resource"}
"""Resource scope with the walk's explicit ``observation.buffer_tokens``: it buffers."""
RESOURCE_CHANGES: list[Changes] = [
    Changes(
        "reflection.block_after",
        {},
        _ref(block_after=50_000),
        Script(RESOURCE.options, reflector=_failing),
    ),
    Changes("observation.buffer_tokens", {}, _obs(buffer_tokens=False), Script(BUFFERED_RESOURCE)),
    Changes(
        "observation.buffer_on_idle",
        {},
        _obs(buffer_on_idle=True),
        Script(BUFFERED_RESOURCE, standalone=True),
    ),
    Changes(
        "observation.buffer_activation", {}, _obs(buffer_activation=0.3), Script(BUFFERED_RESOURCE)
    ),
    Changes(
        "observation.block_after",
        {},
        _obs(block_after=3),
        Script(BUFFERED_RESOURCE, background=False),
    ),
    Changes(
        "activate_after_idle",
        {},
        {"activate_after_idle": "5m"},
        Script(BUFFERED_RESOURCE, idle_gap_at=6, turns=8),
    ),
    Changes(
        "activate_on_provider_change",
        {},
        {"activate_on_provider_change": True},
        Script(BUFFERED_RESOURCE, switch_actor_at=6, turns=8),
    ),
    Changes(
        "observation.activate_after_idle",
        {"activate_after_idle": "5m"},
        {"activate_after_idle": "5m", "observation": {"activate_after_idle": False}},
        Script(BUFFERED_RESOURCE, idle_gap_at=6, turns=8),
    ),
    Changes(
        "observation.activate_on_provider_change",
        {},
        _obs(activate_on_provider_change=True),
        Script(BUFFERED_RESOURCE, switch_actor_at=6, turns=8),
    ),
    Changes(
        "hooks.before_observation",
        {},
        {"hooks": {"before_observation": _topics_to_subjects}},
        RESOURCE,
    ),
    Changes("hooks.after_observation", {}, {"hooks": {"after_observation": _with_line}}, RESOURCE),
    Changes("hooks.before_reflection", {}, {"hooks": {"before_reflection": _with_line}}, RESOURCE),
    Changes("hooks.after_reflection", {}, {"hooks": {"after_reflection": _with_line}}, RESOURCE),
    Changes(
        "temporal_markers",
        {},
        {"temporal_markers": True},
        Script(RESOURCE.options, idle_gap_at=6, turns=8),
    ),
    Changes("read_only", {}, {"read_only": True}, RESOURCE),
    Changes("keep_last_messages", {}, {"keep_last_messages": 16}, RESOURCE),
    Changes("observation.thread_title", {}, _obs(thread_title=True, buffer_tokens=False), RESOURCE),
    Changes(
        "observation.extract",
        {},
        _obs(extract=[Extractor("Topics", "Topics liked.")], buffer_tokens=False),
        RESOURCE,
    ),
    Changes(
        "observation.manage_working_memory",
        {},
        _obs(manage_working_memory=True, buffer_tokens=False),
        RESOURCE,
    ),
    Changes(
        "reflection.extract",
        {},
        _ref(extract=[Extractor("Topics", "Topics liked.", schema=_TopicsValue)]),
        RESOURCE,
    ),
]
"""Options whose resource-scope behaviour is its own (thread scope's rows above do not show
it): the walk proves they change what resource scope shows too."""


@pytest.mark.parametrize("row", RESOURCE_CHANGES, ids=lambda r: r.option)
def test_option_changes_behaviour_in_resource_scope(row: Changes) -> None:
    assert row.script.options["scope"] == "resource"
    same = trace(row.script, row.before) == trace(row.script, row.after)
    assert not same, f"{row.option} changed nothing resource scope shows"


def test_resource_scope_refusals_are_listed() -> None:
    assert set(RESOURCE_REFUSED) == {entry.option for entry in UNBUILT_IN_RESOURCE_SCOPE}


@pytest.mark.parametrize("option", list(RESOURCE_REFUSED))
def test_options_ignored_in_resource_scope_are_refused(option: str) -> None:
    options = {**RESOURCE_REFUSED[option], "scope": "resource"}
    options["observation"] = {"buffer_tokens": False, **options.get("observation", {})}
    with pytest.raises(OMConfigError) as caught:
        ObservationalMemory(options, model=memory_model())
    assert caught.value.option == option and "resource scope" in caught.value.message
    ObservationalMemory(RESOURCE_REFUSED[option], model=memory_model())  # thread scope: fine
