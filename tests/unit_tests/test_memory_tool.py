"""The agent's ``memory`` tool: find, correct and delete observation lines; never observed."""

from __future__ import annotations

import json
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langchain_om import (
    ObservationalMemory,
    ObservationalMemoryMiddleware,
    add_observational_memory,
)
from langchain_om._core.line_edits import edit_line, find_lines
from langchain_om._core.record import make_group, new_record
from langchain_om._core.transforms import without_memory_tool
from langchain_om.graph import ObservationalMemoryGraphState
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import FIXED


def call(name: str, index: int, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c{index}"}])


def agent_reply(messages: list[BaseMessage], info: RecordedCall) -> AIMessage | str:
    """Fixes its memory when told the user moved; otherwise answers."""
    last = messages[-1]
    if isinstance(last, HumanMessage) and "I moved to Porto" in last.text:
        return call("memory", info.index, action="find", query="Lisbon")
    if isinstance(last, ToolMessage) and last.text.startswith("{"):
        lines = json.loads(last.text)["lines"]
        target = lines[0]["id"]
        return call(
            "memory", info.index, action="correct", line_id=target, text="User lives in Porto"
        )
    if isinstance(last, ToolMessage):
        return f"Done: {last.text}"
    return f"Answer {info.index}: " + "noted " * 10


def test_the_agent_corrects_a_line_and_the_correction_survives_reflection() -> None:
    observer = memory_model(words=12)
    memory = ObservationalMemory(
        model=observer,
        observation={"message_tokens": 300, "buffer_tokens": False},
        reflection={"observation_tokens": 400},
        memory_tool=True,
        clock=lambda: FIXED,
    )
    actor = FunctionChatModel(function=agent_reply)
    agent = create_agent(
        actor,
        memory.tools,
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("I live in Lisbon. " + "Detail. " * 40)]}, config)
    for i in range(3):
        agent.invoke({"messages": [HumanMessage(f"Turn {i}: " + "more " * 60)]}, config)
    record = memory.read_state(agent.get_state(config).values)
    assert any("Lisbon" in g["text"] for g in record["groups"])

    agent.invoke({"messages": [HumanMessage("I moved to Porto, please fix that.")]}, config)
    record = memory.read_state(agent.get_state(config).values)
    log = "\n".join(g["text"] for g in record["groups"])
    assert "User lives in Porto" in log and "live in Lisbon" not in log

    observer.reset()
    for i in range(12):
        agent.invoke({"messages": [HumanMessage(f"Later {i}: " + "talk " * 60)]}, config)
    record = memory.read_state(agent.get_state(config).values)
    assert record["generation"] >= 1
    prompts = "\n".join(m.text for c in observer.calls for m in c.messages)
    assert "live in Lisbon" not in prompts, (
        "neither the Observer nor the Reflector saw the old line"
    )
    assert "User lives in Porto" in prompts
    assert '"action": "correct"' not in prompts and "action=" not in prompts
    assert "live in Lisbon" not in "\n".join(g["text"] for g in record["groups"])


def test_find_edit_and_delete_lines() -> None:
    record = new_record(thread_id="t", resource_id=None, now="")
    text = "Date: Nov 30, 2026\n* 🔴 (09:00) User lives in Lisbon\n* 🟡 (09:01) Likes tea"
    group = make_group(text=text, tokens=10, message_ids=["m"], observed_at="", group_id="g1")
    record["groups"] = [group]
    found = find_lines(record, "lisbon")
    assert [f["text"] for f in found] == ["* 🔴 (09:00) User lives in Lisbon"]
    edited = edit_line(record, found[0]["id"], "* 🔴 (09:00) User lives in Porto", len)
    assert "Porto" in edited["groups"][0]["text"] and "Lisbon" not in edited["groups"][0]["text"]
    tea = find_lines(edited, "tea")[0]["id"]
    assert find_lines(edited, "tea")[0]["id"] == tea  # ids stay stable across edits
    deleted = edit_line(edited, tea, None, len)
    assert "tea" not in deleted["groups"][0]["text"]
    assert deleted["observation_tokens"] == len(deleted["groups"][0]["text"])


def test_the_observer_never_sees_the_memory_tool() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("fix it", id="h"),
        AIMessage("", tool_calls=[{"name": "memory", "args": {}, "id": "m1"}], id="a1"),
        ToolMessage("Line corrected.", tool_call_id="m1", id="t1"),
        AIMessage("Fixed.", id="a2"),
    ]
    assert [m.id for m in without_memory_tool(messages)] == ["h", "a2"]


def test_in_a_custom_graph_with_the_memory_state_the_tool_edits_the_record() -> None:
    memory = ObservationalMemory(
        model=memory_model(words=12),
        observation={"message_tokens": 300, "buffer_tokens": False},
        reflection={"observation_tokens": 400},
        memory_tool=True,
        clock=lambda: FIXED,
    )
    llm = FunctionChatModel(function=agent_reply).bind_tools(memory.tools)
    builder: Any = StateGraph(ObservationalMemoryGraphState)
    builder.add_node("model", lambda s: {"messages": [llm.invoke(s["messages"])]})
    builder.add_node("tools", ToolNode(memory.tools))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "model")
    add_observational_memory(builder, memory)
    graph = builder.compile(checkpointer=memory.checkpointer)
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [HumanMessage("I live in Lisbon. " + "Detail. " * 40)]}, config)
    for i in range(3):
        graph.invoke({"messages": [HumanMessage(f"Turn {i}: " + "more " * 60)]}, config)
    graph.invoke({"messages": [HumanMessage("I moved to Porto, please fix that.")]}, config)
    values = graph.get_state(config).values
    log = "\n".join(g["text"] for g in memory.read_state(values)["groups"])
    assert "User lives in Porto" in log and "live in Lisbon" not in log
    assert values["messages"][-1].text.startswith("Done: Line L")
