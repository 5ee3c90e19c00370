"""An agent built without a checkpointer has no lasting memory, and memory says so once."""

from __future__ import annotations

import warnings

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import FunctionChatModel, memory_model


def _agent(checkpointer: InMemorySaver | None) -> object:
    memory = ObservationalMemory(model=memory_model(), observation={"buffer_tokens": False})
    actor = FunctionChatModel(function=lambda messages, info: f"Noted: {messages[-1].text}")
    return create_agent(
        actor, [], middleware=[ObservationalMemoryMiddleware(memory)], checkpointer=checkpointer
    )


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_an_agent_without_a_checkpointer_warns_once(asynchronous: bool) -> None:
    agent = _agent(None)
    turn = {"messages": [HumanMessage("My sister Ana lives in Porto.")]}
    config = {"configurable": {"thread_id": "t"}}
    with pytest.warns(UserWarning, match="without a checkpointer") as caught:
        for _ in range(3):
            if asynchronous:
                await agent.ainvoke(turn, config)  # type: ignore[attr-defined]
            else:
                agent.invoke(turn, config)  # type: ignore[attr-defined]
    assert sum("without a checkpointer" in str(w.message) for w in caught) == 1
    assert "checkpointer=memory.checkpointer" in str(caught[0].message)


def test_an_agent_with_a_checkpointer_does_not_warn() -> None:
    agent = _agent(InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            agent.invoke({"messages": [HumanMessage("My sister Ana lives in Porto.")]}, config)  # type: ignore[attr-defined]
