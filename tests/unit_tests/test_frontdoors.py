"""Agents and graphs with memory, end to end, on real LangGraph graphs (in-memory stores)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

from langchain_om import (
    ObservationalMemory,
    ObservationalMemoryMiddleware,
    add_observational_memory,
)
from langchain_om.testing import FunctionChatModel, ScriptedChatModel, memory_model
from tests.helpers import (
    APP_OPTIONS,
    Clock,
    actor_reply,
    build_agent,
    build_graph,
    check_invariants,
    expected_messages,
    user_turn,
)


def test_custom_stream_events() -> None:
    memory = ObservationalMemory(model=memory_model(), **APP_OPTIONS)
    actor = FunctionChatModel(function=actor_reply)
    agent = build_agent(memory, actor)
    cfg = {"configurable": {"thread_id": "s"}}
    kinds: list[str] = []
    for i in range(12):
        for chunk in agent.stream(
            {"messages": [HumanMessage(user_turn(i))]}, cfg, stream_mode="custom"
        ):
            kinds.append(chunk["type"])
    assert kinds.count("data-om-status") == actor.call_count
    assert kinds.count("data-om-observation-start") == kinds.count("data-om-observation-end") >= 1
    first_start = kinds.index("data-om-observation-start")
    assert kinds[first_start + 1] == "data-om-observation-end"


def test_graph_time_travel_rewinds_memory() -> None:
    memory = ObservationalMemory(model=memory_model(), **APP_OPTIONS)
    graph = build_graph(memory, FunctionChatModel(function=actor_reply))
    cfg = {"configurable": {"thread_id": "tt"}}
    for i in range(30):
        graph.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
    history = list(graph.get_state_history(cfg))
    final = memory.read_state(history[0].values)
    earlier = next(
        s
        for s in history
        if s.values.get("om_record")
        and 0
        < memory.read_state(s.values)["observed_message_count"]
        < final["observed_message_count"]
        and not s.next
    )
    old_record = memory.read_state(earlier.values)
    forked = graph.invoke({"messages": [HumanMessage("Turn X: a different path")]}, earlier.config)
    assert forked["messages"][-1].type == "ai"
    new_state = graph.get_state({"configurable": {"thread_id": "tt"}}).values
    # The fork continues from the earlier memory, not from the latest one.
    assert (
        memory.read_state(new_state)["observed_message_count"]
        >= old_record["observed_message_count"]
    )
    assert memory.read_state(new_state)["observed_message_count"] < final["observed_message_count"]
    assert (
        memory.read_state(new_state)["groups"][: len(old_record["groups"])] == old_record["groups"]
    )


def test_graph_requires_a_known_model_node() -> None:
    memory = ObservationalMemory(model=memory_model(), **APP_OPTIONS)
    builder = StateGraph(MessagesState)
    builder.add_node("llm", lambda s: {"messages": []})
    builder.add_edge(START, "llm")
    with pytest.raises(ValueError, match="before='<your model node>'"):
        add_observational_memory(builder, memory)


@pytest.mark.parametrize("door", ["agent", "graph"])
def test_buffering_front_doors_activate_without_sync_observation(door: str) -> None:
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 600, "buffer_tokens": 0.2},
        reflection={"observation_tokens": 2_000},
    )
    events: list[str] = []
    memory.on_debug_event = lambda e: events.append(f"{e.type}/{getattr(e, 'operation_type', '')}")
    actor = FunctionChatModel(function=actor_reply)
    app = build_agent(memory, actor) if door == "agent" else build_graph(memory, actor)
    cfg = {"configurable": {"thread_id": "b"}}
    for i in range(60):
        app.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
        memory.wait_for_background()
    state = app.get_state(cfg).values
    assert events.count("data-om-activation/observation") >= 3
    assert "data-om-observation-end/observation" not in events
    assert check_invariants(memory, "b", state["messages"]) == expected_messages(60)
    memory.close()


def test_buffering_start_reaches_the_custom_stream() -> None:
    memory = ObservationalMemory(
        model=memory_model(), observation={"message_tokens": 600, "buffer_tokens": 0.2}
    )
    agent = build_agent(memory, FunctionChatModel(function=actor_reply))
    cfg = {"configurable": {"thread_id": "s2"}}
    streamed: list[dict[str, Any]] = []
    debug: list[Any] = []
    memory.on_debug_event = debug.append
    for i in range(12):
        for chunk in agent.stream(
            {"messages": [HumanMessage(user_turn(i))]}, cfg, stream_mode="custom"
        ):
            streamed.append(chunk)
        memory.wait_for_background()
    starts = [c for c in streamed if c["type"] == "data-om-buffering-start"]
    assert starts, "the turn that schedules a buffer announces it on the stream"
    ends = {e.cycle_id for e in debug if e.type == "data-om-buffering-end"}
    assert {c["data"]["cycle_id"] for c in starts} <= ends
    assert sum(1 for e in debug if e.type == "data-om-buffering-start") == len(starts)
    memory.close()


def test_agent_early_activation_on_idle_and_provider_change() -> None:
    clock = Clock()
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 2_000, "buffer_tokens": 200},
        activate_after_idle="5m",
        activate_on_provider_change=True,
        clock=clock,
        background="manual",
    )
    activations: list[Any] = []
    memory.on_debug_event = lambda e: (
        activations.append(e) if e.type == "data-om-activation" else None
    )
    cfg = {"configurable": {"thread_id": "e"}}

    def agent_with(model_name: str) -> Any:
        actor = FunctionChatModel(function=actor_reply, model_name=model_name, provider="p")
        return build_agent(memory, actor)

    first = agent_with("alpha")
    for i in range(1, 7):
        first.invoke({"messages": [HumanMessage(f"Turn {i}: tell me more " * 3)]}, cfg)
        memory.run_background()
        clock.now += timedelta(seconds=20)
    assert not activations, "below the threshold nothing activates early by itself"
    clock.now += timedelta(minutes=6)
    first.invoke({"messages": [HumanMessage("Turn 7: back after a break")]}, cfg)
    assert [a.triggered_by for a in activations] == ["ttl"]
    memory.run_background()
    for i in range(8, 12):
        first.invoke({"messages": [HumanMessage(f"Turn {i}: tell me more " * 3)]}, cfg)
        memory.run_background()
    second = agent_with("beta")
    out = second.invoke({"messages": [HumanMessage("Turn 12: now with another model")]}, cfg)
    change = [a for a in activations if a.triggered_by == "provider_change"]
    assert change and change[0].previous_model == "p/alpha" and change[0].current_model == "p/beta"
    assert out["messages"][-1].type == "ai"
    state = second.get_state(cfg).values
    assert memory.read_state(state)["last_actor_model"] == "p/beta"
    assert check_invariants(memory, "e", state["messages"]) == 2 * 12  # 12 turns, no tools


def test_observer_tokens_stay_out_of_the_messages_stream() -> None:
    memory = ObservationalMemory(model=memory_model(), **APP_OPTIONS)
    agent = build_agent(memory, FunctionChatModel(function=actor_reply))
    cfg = {"configurable": {"thread_id": "m"}}
    streamed = ""
    for i in range(30):
        for chunk, _meta in agent.stream(
            {"messages": [HumanMessage(f"Turn {i}: tell me more " * 4)]},
            cfg,
            stream_mode="messages",
        ):
            streamed += chunk.text if chunk.type == "AIMessageChunk" else ""
    assert memory.read_state(agent.get_state(cfg).values)["observed_message_count"] > 0
    assert "Answer" in streamed and "<observations>" not in streamed


@pytest.mark.parametrize("on_idle", [False, True])
def test_after_agent_hook_only_with_buffer_on_idle(
    on_idle: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = ObservationalMemory(
        model=memory_model(), observation={"buffer_on_idle": on_idle, "buffer_tokens": 0.2}
    )
    middleware = ObservationalMemoryMiddleware(memory)
    assert isinstance(middleware, ObservationalMemoryMiddleware)
    ended: list[str] = []
    monkeypatch.setattr(memory, "end_turn", lambda **kw: ended.append(kw["thread_id"]))
    agent = create_agent(
        ScriptedChatModel(script=["ok"], repeat_last=True),
        [],
        middleware=[middleware],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )
    nodes = set(agent.get_graph().nodes)
    assert (f"{middleware.name}.after_agent" in nodes) is on_idle
    agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "t1"}})
    assert ended == (["t1"] if on_idle else [])
