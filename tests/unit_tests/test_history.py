"""The chat-history adapter: messages, bulk adds through memory, clear; sync and async."""

from __future__ import annotations

import asyncio
import warnings

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_om import ObservationalChatMessageHistory, ObservationalMemory
from langchain_om._plans.storage import msgindex_ns
from tests.helpers import archived, archived_ids, make_memory


def small_memory() -> ObservationalMemory:
    return make_memory(observation={"message_tokens": 300, "buffer_tokens": False})


def turns(n: int) -> list[list[BaseMessage]]:
    return [
        [HumanMessage(f"turn {i}: " + "words " * 30, id=f"h{i}"), AIMessage(f"ok {i}", id=f"a{i}")]
        for i in range(n)
    ]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_history_observes_and_shows_memory_first(mode: str) -> None:
    memory = small_memory()
    history = ObservationalChatMessageHistory(memory, thread_id="t", resource_id="u")

    async def run_async() -> list[BaseMessage]:
        for turn in turns(20):
            await history.aadd_messages(turn)
        return await history.aget_messages()

    if mode == "sync":
        for turn in turns(20):
            history.add_messages(turn)
        messages = history.messages
    else:
        messages = asyncio.run(run_async())
    assert messages[0].type == "system" and "User said: turn 0" in messages[0].text
    window_ids = [m.id for m in messages[1:]]
    assert archived_ids(memory, "t") + window_ids == [m.id for t in turns(20) for m in t]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_clear_forgets_the_thread(mode: str) -> None:
    memory = small_memory()
    history = ObservationalChatMessageHistory(memory, thread_id="t", resource_id="u")
    other = ObservationalChatMessageHistory(memory, thread_id="other", resource_id="u")
    for turn in turns(10):
        history.add_messages(turn)
        other.add_messages(turn)
    if mode == "sync":
        history.clear()
    else:
        asyncio.run(history.aclear())
    assert history.messages == []
    assert archived(memory, "t") == []
    assert memory.store.search(msgindex_ns("t"), limit=10) == []
    assert len(other.messages) > 1  # another thread is untouched
    assert archived(memory, "other")


def test_with_runnable_with_message_history() -> None:
    memory = small_memory()
    histories: dict[str, ObservationalChatMessageHistory] = {}

    def get(session_id: str) -> ObservationalChatMessageHistory:
        return histories.setdefault(
            session_id, ObservationalChatMessageHistory(memory, thread_id=session_id)
        )

    seen: list[list[BaseMessage]] = []

    def chat(messages: list[BaseMessage]) -> AIMessage:
        seen.append(messages)
        return AIMessage(f"reply to {messages[-1].text[:10]}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        chain = RunnableWithMessageHistory(RunnableLambda(chat), get)
    cfg: RunnableConfig = {"configurable": {"session_id": "s1"}}
    for i in range(15):
        chain.invoke([HumanMessage(f"message {i} " + "words " * 30)], cfg)
    assert seen[-1][0].type == "system" and "User said: message 0" in seen[-1][0].text
    assert len(seen[-1]) < 31  # old turns left the prompt as observations
