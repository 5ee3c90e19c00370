"""The engine's public reads: a thread's archived messages and the list of threads."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om._plans import storage
from langchain_om.testing import memory_model


def make_memory() -> ObservationalMemory:
    return ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 200, "buffer_tokens": False},
        reflection={"observation_tokens": 100_000},
    )


def turns(n: int, prefix: str) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(n):
        out.append(HumanMessage(f"{prefix} question {i} about the garden", id=f"{prefix}-h{i}"))
        out.append(AIMessage(f"{prefix} answer {i} about tomatoes", id=f"{prefix}-a{i}"))
    return out


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_archived_messages_are_what_left_the_window_in_order(mode: str) -> None:
    memory = make_memory()
    messages = turns(6, "t")
    snap = memory.observe(thread_id="t", messages=messages)
    read = (
        memory.archived_messages("t")
        if mode == "sync"
        else asyncio.run(memory.aarchived_messages("t"))
    )
    assert read, "observing should have archived messages"
    assert [m.id for m in read] + [m.id for m in snap.window] == [m.id for m in messages]
    assert [m.text for m in read] == [m.text for m in messages[: len(read)]]
    assert len(read) == snap.record["observed_message_count"]
    assert memory.archived_messages("unknown") == []


def test_archived_messages_page_past_one_store_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage, "READ_PAGE", 3)
    memory = make_memory()
    messages = turns(5, "p")
    ops = storage.archive_ops(messages, thread_id="p", resource_id=None, first_seq=0)
    memory.store.batch(ops)
    assert [m.id for m in memory.archived_messages("p")] == [m.id for m in messages]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_list_threads_names_the_threads_with_state(mode: str) -> None:
    memory = make_memory()
    assert memory.list_threads() == []
    for thread in ("b", "a", "c"):
        memory.add_messages(thread, turns(1, thread))
    memory.forget(thread_id="c")
    listed = memory.list_threads() if mode == "sync" else asyncio.run(memory.alist_threads())
    assert listed == ["a", "b"]


def test_list_threads_pages_past_one_store_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage, "READ_PAGE", 2)
    memory = make_memory()
    names = [f"t{i}" for i in range(5)]
    for name in names:
        memory.add_messages(name, turns(1, name))
    assert memory.list_threads() == names
