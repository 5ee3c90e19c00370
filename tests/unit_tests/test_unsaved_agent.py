"""A graph run without a checkpointer could remember nothing: memory refuses it at once.

Memory keeps a thread's record and window in the graph's state; without a checkpointer that
state is gone after each ``invoke``. Rather than run and silently forget (observing the same
messages again every turn), the first memory call of such a run raises ``OMUsageError`` naming
the fix, on the ``create_agent`` middleware and on the ``StateGraph`` nodes, sync and async.
A request with memory turned off still runs.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.errors import OMUsageError
from langchain_om.graph import ObservationalMemoryGraphState, add_observational_memory
from langchain_om.testing import FunctionChatModel, memory_model

SAID = "My sister Ana lives in Porto."
CONFIG: Any = {"configurable": {"thread_id": "t"}}
OFF: Any = {"configurable": {"thread_id": "t", "langchain_om": {"enabled": False}}}


def _memory() -> ObservationalMemory:
    return ObservationalMemory(model=memory_model(), observation={"buffer_tokens": False})


def _actor() -> FunctionChatModel:
    return FunctionChatModel(function=lambda messages, info: f"Noted: {messages[-1].text}")


def _agent(checkpointer: InMemorySaver | None) -> Any:
    middleware = ObservationalMemoryMiddleware(_memory())
    return create_agent(_actor(), [], middleware=[middleware], checkpointer=checkpointer)


def _graph(checkpointer: InMemorySaver | None) -> Any:
    memory, actor = _memory(), _actor()
    builder = StateGraph(ObservationalMemoryGraphState)

    def model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [actor.invoke(state["messages"])]}

    builder.add_node("model", model)
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    add_observational_memory(builder, memory)
    return builder.compile(checkpointer=checkpointer)


async def _run(app: Any, config: Any, asynchronous: bool, said: str = SAID) -> Any:
    turn = {"messages": [HumanMessage(said)]}
    if asynchronous:
        return await app.ainvoke(turn, config)
    return app.invoke(turn, config)


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("build", [_agent, _graph], ids=["agent", "graph"])
async def test_a_run_without_a_checkpointer_is_refused_naming_the_fix(
    build: Any, asynchronous: bool
) -> None:
    with pytest.raises(OMUsageError, match="without a checkpointer") as caught:
        await _run(build(None), CONFIG, asynchronous)
    assert "checkpointer=memory.checkpointer" in str(caught.value)


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("build", [_agent, _graph], ids=["agent", "graph"])
async def test_with_a_checkpointer_memory_keeps_the_thread(build: Any, asynchronous: bool) -> None:
    app = build(InMemorySaver())
    await _run(app, CONFIG, asynchronous)
    out = await _run(app, CONFIG, asynchronous, "She moved there in 2019.")
    said = [m.text for m in out["messages"] if m.type == "human"]
    assert said == [SAID, "She moved there in 2019."]  # the first turn was kept


@pytest.mark.parametrize("build", [_agent, _graph], ids=["agent", "graph"])
def test_a_request_with_memory_off_runs_without_a_checkpointer(build: Any) -> None:
    out = build(None).invoke({"messages": [HumanMessage(SAID)]}, OFF)
    assert out["messages"][-1].text == "Noted: My sister Ana lives in Porto."
