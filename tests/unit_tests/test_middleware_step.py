"""The middleware's step runs inside the model call: no extra node, retries observe once."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ModelRetryMiddleware
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import archived

OPTIONS: dict[str, Any] = {"observation": {"message_tokens": 150, "buffer_tokens": False}}


def _agent(memory: ObservationalMemory, actor: Any, *outer: Any) -> Any:
    return create_agent(
        actor,
        [],
        middleware=[*outer, ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )


def _text(i: int) -> str:
    return f"Turn {i}: I moved the budget review to Thursday and booked room {i} for it. " * 2


def _texts(messages: list[BaseMessage]) -> list[str]:
    return [m.text for m in messages]


def _run(agent: Any, turns: int) -> list[BaseMessage]:
    cfg: RunnableConfig = {"configurable": {"thread_id": "t"}}
    for i in range(turns):
        out = agent.invoke({"messages": [HumanMessage(_text(i), id=f"u{i}")]}, cfg)
    return list(out["messages"])


def test_the_agent_gains_no_node_for_the_step() -> None:
    memory = ObservationalMemory(model=memory_model(), **OPTIONS)
    agent = _agent(memory, FunctionChatModel(function=lambda m, i: "ok"))
    assert not [n for n in agent.nodes if "ObservationalMemory" in n]


def test_a_retried_model_call_observes_once() -> None:
    """A wrapper that calls the model again for the same state reuses the call's step."""

    def flaky(messages: list[BaseMessage], info: RecordedCall) -> str:
        if info.index % 2 == 0:  # every model call fails once, then succeeds
            raise TimeoutError("provider timed out")
        return f"answer {info.index}"

    def steady(messages: list[BaseMessage], info: RecordedCall) -> str:
        return f"answer {2 * info.index + 1}"

    runs: dict[str, tuple[int, list[str], list[str]]] = {}
    for name, function, outer in (
        ("steady", steady, ()),
        ("flaky", flaky, (ModelRetryMiddleware(max_retries=1, initial_delay=0, jitter=False),)),
    ):
        observer = memory_model()
        memory = ObservationalMemory(model=observer, **OPTIONS)
        actor = FunctionChatModel(function=function)
        window = _run(_agent(memory, actor, *outer), 8)
        runs[name] = (observer.call_count, _texts(archived(memory, "t")), _texts(window))
        if name == "flaky":
            assert actor.call_count == 16
            # the retry sent what the failed attempt sent: the same window, the same memory
            calls = actor.calls
            assert all(
                [m.text for m in calls[i].messages] == [m.text for m in calls[i + 1].messages]
                for i in range(0, 16, 2)
            )
    observer_calls, archive_texts, window_texts = runs["flaky"]
    assert observer_calls > 0 and archive_texts
    assert runs["flaky"] == runs["steady"]
    # every message exactly once, in order, in the archive or the window
    assert archive_texts + window_texts == [
        t for i in range(8) for t in (_text(i), f"answer {2 * i + 1}")
    ]


def _answer(messages: list[BaseMessage], info: RecordedCall) -> str:
    return f"answer {info.index}"


async def test_the_async_call_runs_the_same_step() -> None:
    sync_memory = ObservationalMemory(model=memory_model(), **OPTIONS)
    async_memory = ObservationalMemory(model=memory_model(), **OPTIONS)
    sync_window = _run(_agent(sync_memory, FunctionChatModel(function=_answer)), 6)
    agent = _agent(async_memory, FunctionChatModel(function=_answer))
    cfg: RunnableConfig = {"configurable": {"thread_id": "t"}}
    for i in range(6):
        out = await agent.ainvoke({"messages": [HumanMessage(_text(i), id=f"u{i}")]}, cfg)
    assert _texts(archived(async_memory, "t")) == _texts(archived(sync_memory, "t"))
    assert archived(sync_memory, "t")
    assert [m.text for m in out["messages"]] == [m.text for m in sync_window]


def test_a_failed_model_call_loses_no_message() -> None:
    """The step observed before the call failed: the next turn still holds every message once."""
    failing = {3, 4}  # the model calls of two turns whose step observes

    def sometimes(messages: list[BaseMessage], info: RecordedCall) -> str:
        if info.index in failing:
            raise TimeoutError("provider timed out")
        return f"answer {info.index}"

    memory = ObservationalMemory(model=memory_model(), **OPTIONS)
    agent = _agent(memory, FunctionChatModel(function=sometimes))
    cfg: RunnableConfig = {"configurable": {"thread_id": "t"}}
    sent: list[str] = []
    for i in range(8):
        message = HumanMessage(_text(i), id=f"u{i}")
        try:
            out = agent.invoke({"messages": [message]}, cfg)
        except TimeoutError:
            sent.append(_text(i))  # the user's message is in the checkpoint, the reply is not
            continue
        sent += [_text(i), out["messages"][-1].text]
    window = _texts(list(out["messages"]))
    record = memory.read_state(agent.get_state(cfg).values)
    archive = _texts(memory.archived_messages("t", record=record))
    assert archive and archive + window == sent
