"""Agents and graphs with memory, end to end, on real SQLite files and real LangGraph graphs."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langchain_om import (
    ObservationalMemory,
    ObservationalMemoryMiddleware,
    add_observational_memory,
)
from langchain_om.storage import archive_ns, archived_message
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model

OPTIONS: dict[str, Any] = {
    "observation": {"message_tokens": 600, "buffer_tokens": False},
    "reflection": {"observation_tokens": 500},
}


@tool
def lookup(query: str) -> str:
    """Look a query up."""
    return f"Results for {query}: " + "lorem ipsum " * 15


def actor_reply(messages: list[BaseMessage], info: RecordedCall) -> AIMessage | str:
    """Call the tool on every third user turn, then answer."""
    last = messages[-1]
    if isinstance(last, HumanMessage) and "use the tool" in last.text:
        call = {"name": "lookup", "args": {"query": last.text[:20]}, "id": f"call-{info.index}"}
        return AIMessage("", tool_calls=[call])
    return f"Answer {info.index}: noted, " + "and more " * 8


def user_turn(i: int) -> str:
    return f"Turn {i}: please use the tool" if i % 3 == 0 else f"Turn {i}: tell me more " * 3


def archive(memory: ObservationalMemory, thread_id: str) -> list[BaseMessage]:
    items = sorted(memory.store.search(archive_ns(thread_id), limit=1_000_000), key=lambda i: i.key)
    return [archived_message(i) for i in items]


def check_invariants(memory: ObservationalMemory, thread_id: str, window: list[BaseMessage]) -> int:
    """Every message is archived or in the window, once; no tool pair is split."""
    window = [m for m in window if m.type != "system"]
    stored = archive(memory, thread_id)
    everything = stored + window
    ids = [m.id for m in everything]
    assert len(ids) == len(set(ids))
    for part in (stored, window):
        calls = {c["id"] for m in part if isinstance(m, AIMessage) for c in m.tool_calls}
        results = {m.tool_call_id for m in part if isinstance(m, ToolMessage)}
        assert results <= calls, "a tool result was separated from its call"
    assert not isinstance(window[0], ToolMessage)
    return len(everything)


def build_agent(memory: ObservationalMemory, actor: FunctionChatModel) -> Any:
    return create_agent(
        actor,
        [lookup],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )


def build_graph(memory: ObservationalMemory, actor: FunctionChatModel) -> Any:
    llm = actor.bind_tools([lookup])
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda s: {"messages": [llm.invoke(s["messages"])]})
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "model")
    add_observational_memory(builder, memory)
    return builder.compile(checkpointer=memory.checkpointer, store=memory.store)


def expected_messages(turns: int) -> int:
    return sum(4 if i % 3 == 0 else 2 for i in range(turns))


@pytest.mark.slow
@pytest.mark.parametrize("door", ["agent", "graph"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_two_hundred_turns_on_sqlite(tmp_path: Path, door: str, mode: str) -> None:
    db = tmp_path / "om.db"
    memory = ObservationalMemory.from_sqlite(str(db), model=memory_model(), **OPTIONS)
    actor = FunctionChatModel(function=actor_reply)
    app = build_agent(memory, actor) if door == "agent" else build_graph(memory, actor)
    cfg = {"configurable": {"thread_id": "t1"}}
    turns = 200

    async def run_async() -> None:
        for i in range(turns):
            await app.ainvoke({"messages": [HumanMessage(user_turn(i))]}, cfg)

    if mode == "sync":
        for i in range(turns):
            app.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
    else:
        asyncio.run(run_async())
    state = app.get_state(cfg).values
    record = state["om_record"]
    assert record["observed_message_count"] > 0
    assert record["generation"] >= 1
    assert check_invariants(memory, "t1", state["messages"]) == expected_messages(turns)
    # The model saw memory: a system block with observations on its latest call.
    assert "<observations>" in actor.last_call.text
    memory.close()

    # A second process opens the same file and continues the thread with its memory.
    script = textwrap.dedent(
        f"""
        import json
        from langchain_core.messages import HumanMessage
        from langchain_om import ObservationalMemory
        from langchain_om.testing import FunctionChatModel, memory_model
        import tests.unit_tests.test_frontdoors as t
        memory = ObservationalMemory.from_sqlite({str(db)!r}, model=memory_model(), **t.OPTIONS)
        actor = FunctionChatModel(function=t.actor_reply)
        app = t.build_agent(memory, actor) if {door!r} == "agent" else t.build_graph(memory, actor)
        cfg = {{"configurable": {{"thread_id": "t1"}}}}
        before = app.get_state(cfg).values["om_record"]
        app.invoke({{"messages": [HumanMessage("Turn 200: and now?")]}}, cfg)
        saw = "<observations>" in actor.last_call.text
        print(json.dumps({{"record": before, "saw_memory": saw}}))
        """
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=True
    )
    resumed = json.loads(out.stdout.strip().splitlines()[-1])
    assert resumed["record"] == json.loads(json.dumps(record))
    assert resumed["saw_memory"] is True


def _state_size(app: Any, cfg: dict[str, Any]) -> int:
    saver = app.checkpointer
    checkpoint = saver.get_tuple(cfg).checkpoint
    return sum(len(saver.serde.dumps_typed(v)[1]) for v in checkpoint["channel_values"].values())


@pytest.mark.slow
def test_checkpoint_size_is_bounded() -> None:
    memory = ObservationalMemory(model=memory_model(), checkpointer=InMemorySaver(), **OPTIONS)
    actor = FunctionChatModel(function=lambda m, i: f"Answer {i.index}: " + "words " * 10)
    with_memory = create_agent(
        actor,
        [],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )
    plain = create_agent(
        FunctionChatModel(function=lambda m, i: f"Answer {i.index}: " + "words " * 10),
        [],
        checkpointer=InMemorySaver(),
    )
    cfg = {"configurable": {"thread_id": "t"}}
    sizes: dict[str, dict[int, int]] = {"memory": {}, "plain": {}}
    for i in range(1, 2001):
        msg = {"messages": [HumanMessage(f"Turn {i}: " + "some words " * 6)]}
        with_memory.invoke(msg, cfg, durability="exit")
        if i <= 400:
            plain.invoke(msg, cfg, durability="exit")
        if i in (200, 400, 2000):
            sizes["memory"][i] = _state_size(with_memory, cfg)
            if i <= 400:
                sizes["plain"][i] = _state_size(plain, cfg)
    print(f"checkpoint bytes with memory: {sizes['memory']}, plain agent: {sizes['plain']}")
    assert sizes["memory"][2000] <= 1.5 * sizes["memory"][200]
    assert sizes["plain"][400] > 1.8 * sizes["plain"][200]


def test_custom_stream_events() -> None:
    memory = ObservationalMemory(model=memory_model(), **OPTIONS)
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
    memory = ObservationalMemory(model=memory_model(), **OPTIONS)
    graph = build_graph(memory, FunctionChatModel(function=actor_reply))
    cfg = {"configurable": {"thread_id": "tt"}}
    for i in range(30):
        graph.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
    history = list(graph.get_state_history(cfg))
    final = history[0].values["om_record"]
    earlier = next(
        s
        for s in history
        if s.values.get("om_record")
        and 0 < s.values["om_record"]["observed_message_count"] < final["observed_message_count"]
        and not s.next
    )
    old_record = earlier.values["om_record"]
    forked = graph.invoke({"messages": [HumanMessage("Turn X: a different path")]}, earlier.config)
    assert forked["messages"][-1].type == "ai"
    new_state = graph.get_state({"configurable": {"thread_id": "tt"}}).values
    # The fork continues from the earlier memory, not from the latest one.
    assert new_state["om_record"]["observed_message_count"] >= old_record["observed_message_count"]
    assert new_state["om_record"]["observed_message_count"] < final["observed_message_count"]
    assert new_state["om_record"]["groups"][: len(old_record["groups"])] == old_record["groups"]


def test_graph_requires_a_known_model_node() -> None:
    memory = ObservationalMemory(model=memory_model(), **OPTIONS)
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
    from datetime import UTC, datetime, timedelta

    class Clock:
        now = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

        def __call__(self) -> datetime:
            return self.now

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
    assert state["om_record"]["last_actor_model"] == "p/beta"
    assert check_invariants(memory, "e", state["messages"]) == 2 * 12  # 12 turns, no tools


def test_observer_tokens_stay_out_of_the_messages_stream() -> None:
    memory = ObservationalMemory(model=memory_model(), **OPTIONS)
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
    assert agent.get_state(cfg).values["om_record"]["observed_message_count"] > 0
    assert "Answer" in streamed and "<observations>" not in streamed
