"""A node that routes to the model node with ``Command(goto=...)`` goes through memory too."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command

from langchain_om import ObservationalMemory, add_observational_memory
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import APP_OPTIONS


def remembered(messages: list[Any], info: RecordedCall) -> str:
    lines = [ln for m in messages if m.type == "system" for ln in m.text.splitlines()]
    return f"reply {info.index} ({sum(ln.startswith('* ') for ln in lines)} remembered) " * 4


def router_graph(memory: ObservationalMemory, goto: Any, declared: bool) -> tuple[Any, Any]:
    llm = FunctionChatModel(function=remembered)
    builder = StateGraph(MessagesState)

    def router(state: MessagesState) -> Command[Literal["model"]]:
        return Command(goto=goto)

    builder.add_node("router", router, destinations=("model",) if declared else ())
    builder.add_node("model", lambda s: {"messages": [llm.invoke(s["messages"])]})
    builder.add_edge(START, "router")
    builder.add_edge("model", END)
    add_observational_memory(builder, memory)
    return builder.compile(checkpointer=InMemorySaver()), llm


@pytest.mark.parametrize(("goto", "declared"), [("model", True), (["model"], False)])
def test_command_goto_the_model_node_passes_the_gate(goto: Any, declared: bool) -> None:
    memory = ObservationalMemory(model=memory_model(), **APP_OPTIONS)
    graph, llm = router_graph(memory, goto, declared)
    cfg = {"configurable": {"thread_id": "c"}}
    for i in range(20):
        graph.invoke({"messages": [HumanMessage(f"Turn {i}: " + "words " * 30)]}, cfg)
    record = graph.get_state(cfg).values["om_record"]
    assert record["observed_message_count"] > 0
    assert "<observations>" in llm.last_call.text
    assert "om_gate" in graph.get_graph().nodes


def test_declared_destinations_follow_the_gate() -> None:
    memory = ObservationalMemory(model=memory_model(), **APP_OPTIONS)
    graph, _ = router_graph(memory, "model", declared=True)
    edges = {(e.source, e.target) for e in graph.get_graph().edges}
    assert ("router", "om_gate") in edges and ("router", "model") not in edges
