"""The StateGraph door honours the door-specific observation options as the agent door does.

``observation.buffer_on_idle`` buffers what is left when the run ends, whichever way it ends
(an edge, a path map or a ``Command`` into ``END``, or a node with no way out);
``observation.use_usage_metadata`` routes the gate to ``om_observe`` on the provider-reported
usage of the last AI message, step for step as the agent middleware observes; a
``ContextOverflowError`` from the model node (a function or a compiled subgraph) is observed
away and the node retried once, unless ``observation.observe_on_context_overflow`` is off.
Every test runs sync and async on a SQLite file.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

from langchain_om import ObservationalMemory, add_observational_memory
from langchain_om.events import ContextOverflowEvent, OMEvent, StatusEvent
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import FIXED, Overflowing, archived_ids, build_agent, lookup

Mode = Literal["sync", "async"]
MODES: tuple[Mode, ...] = ("sync", "async")
CONFIG: Any = {"configurable": {"thread_id": "t1"}}


def _open(tmp_path: Path, events: list[OMEvent], **observation: Any) -> ObservationalMemory:
    return ObservationalMemory.from_sqlite(
        str(tmp_path / "memory.db"),
        model=memory_model(),
        observation={"message_tokens": 2_000, **observation},
        reflection={"observation_tokens": 30_000},
        clock=lambda: FIXED,
        sleep=lambda s: None,
        on_debug_event=events.append,
    )


def _drive(app: Any, memory: ObservationalMemory, turns: list[str], mode: Mode) -> None:
    """Run one turn per text, each after the background work the turn before it started.

    Waiting after every turn keeps the doors comparable on a busy machine: a buffer started
    by one turn has landed before the next turn reads it, on both doors alike.
    """
    if mode == "sync":
        for text in turns:
            app.invoke({"messages": [HumanMessage(text)]}, CONFIG)
            memory.wait_for_background()
        return

    async def run() -> None:
        for text in turns:
            await app.ainvoke({"messages": [HumanMessage(text)]}, CONFIG)
            await memory.await_for_background()

    asyncio.run(run())


def _noted(messages: list[BaseMessage], info: RecordedCall) -> Any:
    return "Noted: the blue bicycle is in the garage."


# -- buffer_on_idle -------------------------------------------------------------------------

Shape = Literal["edge", "dead-end", "path-map", "command", "model-command"]
SHAPES: tuple[Shape, ...] = ("edge", "dead-end", "path-map", "command", "model-command")


def _idle_graph(memory: ObservationalMemory, shape: Shape) -> Any:
    """A graph whose run ends the way ``shape`` says."""
    llm = FunctionChatModel(function=_noted)
    builder = StateGraph(MessagesState)
    if shape == "model-command":

        def model(state: MessagesState) -> Command[Any]:
            return Command(update={"messages": [llm.invoke(state["messages"])]}, goto=END)

        builder.add_node("model", model, destinations=(END,))
    else:
        builder.add_node("model", lambda s: {"messages": [llm.invoke(s["messages"])]})
    builder.add_edge(START, "model")
    if shape == "edge":
        builder.add_edge("model", END)
    elif shape == "path-map":
        builder.add_node("tools", ToolNode([lookup]))
        builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
        builder.add_edge("tools", "model")
    elif shape == "command":

        def finish(state: MessagesState) -> Command[Any]:
            return Command(goto=END)

        builder.add_node("finish", finish, destinations=(END,))
        builder.add_edge("model", "finish")
    add_observational_memory(builder, memory)
    return builder.compile(checkpointer=memory.checkpointer, store=memory.store)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("idle", [True, False], ids=["on", "off"])
def test_buffer_on_idle_buffers_the_rest_when_the_run_ends(
    idle: bool, shape: Shape, mode: Mode, tmp_path: Path
) -> None:
    events: list[OMEvent] = []
    memory = _open(tmp_path, events, buffer_tokens=0.2, buffer_on_idle=idle)
    graph = _idle_graph(memory, shape)
    assert ("om_idle" in graph.get_graph().nodes) is idle
    # One short turn: far below the 400-token buffering interval.
    _drive(graph, memory, ["My blue bicycle is in the garage at home."], mode)
    started = [e for e in events if e.type == "data-om-buffering-start"]
    assert len(started) == (1 if idle else 0)
    assert graph.get_state(CONFIG).values["messages"][-1].text.startswith("Noted")
    # The next turn's gate finds the chunk the end of the first run buffered.
    _drive(graph, memory, ["It is the red one."], mode)
    status = [e for e in events if isinstance(e, StatusEvent)][-1]
    assert status.buffered_observations.chunks == (1 if idle else 0)
    memory.close()


@pytest.mark.parametrize("mode", MODES)
def test_an_idle_buffer_is_activated_by_the_next_turns(mode: Mode, tmp_path: Path) -> None:
    events: list[OMEvent] = []
    memory = _open(tmp_path, events, message_tokens=120, buffer_tokens=0.9, buffer_on_idle=True)
    graph = _idle_graph(memory, "edge")
    turns = [f"Note {i}: my blue bicycle number {i} is in garage {i} today." for i in range(6)]
    _drive(graph, memory, turns, mode)
    record = memory.read_state(graph.get_state(CONFIG).values)
    assert [e for e in events if e.type == "data-om-activation"]
    assert record["observed_message_count"] > 0
    assert "bicycle" in memory.render(record).text
    memory.close()


def test_memory_off_for_a_request_buffers_nothing_at_the_end(tmp_path: Path) -> None:
    events: list[OMEvent] = []
    memory = _open(tmp_path, events, buffer_tokens=0.2, buffer_on_idle=True)
    graph = _idle_graph(memory, "edge")
    off: Any = {"configurable": {"thread_id": "t1", "langchain_om": {"enabled": False}}}
    graph.invoke({"messages": [HumanMessage("My blue bicycle is in the garage.")]}, off)
    memory.wait_for_background()
    assert not [e for e in events if e.type == "data-om-buffering-start"]
    memory.close()


# -- use_usage_metadata ----------------------------------------------------------------------


def _reported(messages: list[BaseMessage], info: RecordedCall, *, after: int = 0) -> Any:
    """A reply whose provider reports a 9 000-token prompt (the estimate is far smaller).

    Replies before the call numbered ``after`` report no usage.
    """
    if info.index < after:
        return AIMessage("Noted: Lisbon with Ana on Friday.")
    usage = {"input_tokens": 8_990, "output_tokens": 10, "total_tokens": 9_000}
    return AIMessage("Noted: Lisbon with Ana on Friday.", usage_metadata=usage)


USAGE_TURNS = [
    "I am planning a trip to Lisbon with my sister Ana.",
    "We land in Lisbon on Friday and stay four nights.",
    "Ana wants to see the tram 28 and the castle.",
    "Ana's birthday is on Saturday, we book the dinner at Ramiro.",
    "I pack the blue raincoat because rain is likely in Lisbon.",
]


def _usage_graph(memory: ObservationalMemory, actor: FunctionChatModel | None = None) -> Any:
    llm = actor or FunctionChatModel(function=_reported)
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda s: {"messages": [llm.invoke(s["messages"])]})
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    add_observational_memory(builder, memory)
    return builder.compile(checkpointer=memory.checkpointer, store=memory.store)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("use", [True, False], ids=["on", "off"])
def test_use_usage_metadata_routes_the_gate_to_observe(
    use: bool, mode: Mode, tmp_path: Path
) -> None:
    events: list[OMEvent] = []
    memory = _open(tmp_path, events, buffer_tokens=False, use_usage_metadata=use)
    graph = _usage_graph(memory)
    _drive(graph, memory, USAGE_TURNS[:2], mode)
    record = memory.read_state(graph.get_state(CONFIG).values)
    # The second turn's gate saw the first reply's 9 000 reported tokens (threshold 2 000).
    assert (record["observed_message_count"] > 0) is use
    statuses = [e for e in events if e.type == "data-om-status"]
    assert all(s.messages.tokens < 2_000 for s in statuses)  # the status keeps the estimate
    memory.close()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("buffering", [False, 30], ids=["sync", "buffered"])
def test_usage_metadata_observes_as_the_agent_door_does(
    buffering: int | bool, mode: Mode, tmp_path: Path
) -> None:
    """Same options, same turns: the graph observes and activates what the agent does.

    Buffered: the first replies report no usage while chunks are buffered; the reported usage
    of the fourth then activates them at the threshold, the window changed, so the usage no
    longer counts and neither door observes on it.
    """
    after = 3 if buffering else 0
    shown: dict[str, list[Any]] = {}
    for door in ("agent", "graph"):
        events: list[OMEvent] = []
        (tmp_path / door).mkdir()
        memory = _open(
            tmp_path / door,
            events,
            message_tokens=2_000,
            buffer_tokens=buffering,
            use_usage_metadata=True,
        )
        actor = FunctionChatModel(function=lambda m, i: _reported(m, i, after=after))
        app = (
            build_agent(memory, actor, tools=[]) if door == "agent" else _usage_graph(memory, actor)
        )
        _drive(app, memory, USAGE_TURNS if buffering else USAGE_TURNS[:3], mode)
        record = memory.read_state(app.get_state(CONFIG).values)
        kinds = ("data-om-observation-end", "data-om-activation", "data-om-buffering-end")
        shown[door] = [
            record["observed_message_count"],
            [e.type for e in events if e.type in kinds],
        ]
        memory.close()
    assert shown["graph"] == shown["agent"]
    assert shown["graph"][0] > 0
    if buffering:  # the usage activated the chunks (the estimate alone is below 2 000)
        assert shown["graph"][1].count("data-om-activation") == 1
        assert "data-om-observation-end" not in shown["graph"][1]


# -- context overflow -------------------------------------------------------------------------


def _overflow_graph(memory: ObservationalMemory, overflowing: Overflowing, subgraph: bool) -> Any:
    llm = FunctionChatModel(function=overflowing)

    def call(state: MessagesState) -> dict[str, Any]:
        return {"messages": [llm.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    if subgraph:
        inner = StateGraph(MessagesState)
        inner.add_node("call", call)
        inner.add_edge(START, "call")
        builder.add_node("model", inner.compile())
    else:
        builder.add_node("model", call)
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    add_observational_memory(builder, memory)
    return builder.compile(checkpointer=memory.checkpointer, store=memory.store)


STOPS = [f"Stop {i}: the hotel in town {i} is the Grand Hotel {i}." for i in range(4)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("subgraph", [False, True], ids=["function", "subgraph"])
@pytest.mark.parametrize("recover", [True, False], ids=["on", "off"])
def test_a_context_overflow_of_the_model_node_is_observed_away(
    recover: bool, subgraph: bool, mode: Mode, tmp_path: Path
) -> None:
    events: list[OMEvent] = []
    memory = _open(
        tmp_path,
        events,
        message_tokens=30_000,  # far above these turns: only the overflow observes
        buffer_tokens=False,
        observe_on_context_overflow=recover,
    )
    overflowing = Overflowing(limit=4)
    graph = _overflow_graph(memory, overflowing, subgraph)
    if not recover:
        with pytest.raises(ContextOverflowError):
            _drive(graph, memory, STOPS[:3], mode)
        assert overflowing.sizes == [1, 3, 5]  # not retried
        assert not [e for e in events if isinstance(e, ContextOverflowEvent)]
        assert archived_ids(memory, "t1") == []
        memory.close()
        return
    _drive(graph, memory, STOPS, mode)
    # The third turn's call held five messages and overflowed; the retry held the current one.
    assert overflowing.sizes == [1, 3, 5, 1, 3]
    (report,) = [e for e in events if isinstance(e, ContextOverflowEvent)]
    assert report.removed_messages == 4
    assert len(archived_ids(memory, "t1")) == 4
    state = graph.get_state(CONFIG).values
    texts = [m.text for m in state["messages"] if m.type != "system"]
    assert texts == [STOPS[2], "Noted.", STOPS[3], "Noted."]
    memory.close()


def test_a_subgraph_model_node_stays_a_subgraph(tmp_path: Path) -> None:
    # Wrapped for the overflow retry, the node still shows LangGraph its subgraph.
    memory = _open(tmp_path, [], buffer_tokens=False)
    graph = _overflow_graph(memory, Overflowing(limit=99), subgraph=True)
    assert "model:call" in graph.get_graph(xray=True).nodes
    out = graph.invoke({"messages": [HumanMessage(STOPS[0])]}, CONFIG)
    assert out["messages"][-1].text == "Noted."
    memory.close()


def test_an_overflow_with_nothing_to_free_propagates(tmp_path: Path) -> None:
    events: list[OMEvent] = []
    memory = _open(tmp_path, events, message_tokens=30_000, buffer_tokens=False)
    overflowing = Overflowing(limit=0)
    graph = _overflow_graph(memory, overflowing, subgraph=False)
    with pytest.raises(ContextOverflowError):
        graph.invoke({"messages": [HumanMessage(STOPS[0])]}, CONFIG)
    assert overflowing.sizes == [1]  # the window could not shrink: no retry
    memory.close()
