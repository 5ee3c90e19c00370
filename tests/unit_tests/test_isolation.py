"""Users never meet: a thread id is bound to its resource; recall identity never comes from
the model; ids of any shape are stored under reversible labels, old labels migrate."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import ObservationalChatMessageHistory
from langchain_om._plans import storage
from langchain_om.tools import create_recall_tool
from tests.helpers import archived, make_memory
from tests.isolation_scenarios import run_resource_families, run_two_users


def test_two_users_one_thread_id_on_in_memory_store() -> None:
    memory = make_memory(observation={"message_tokens": 300, "buffer_tokens": False})
    result = run_two_users(memory)
    assert result["reads"] == 0 and result["deletes"] == 0
    assert result["refused"] == 11


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_resource_scope_families_keep_two_users_apart(tmp_path: Path, mode: str) -> None:
    result = run_resource_families(str(tmp_path / "om.db"), sync=mode == "sync")
    assert result["leaks"] == 0 and result["checked"] > 50


def _turns(n: int) -> list[BaseMessage]:
    return [
        m
        for i in range(n)
        for m in (HumanMessage(f"turn {i}: " + "words " * 30, id=f"h{i}"), AIMessage(f"ok {i}"))
    ]


@pytest.mark.parametrize("thread_id", ["ana@acme.eu", "a.b.c", "~tilde", "x" * 2000])
def test_any_id_is_stored_and_read_back(thread_id: str) -> None:
    memory = make_memory(observation={"message_tokens": 300, "buffer_tokens": False})
    history = ObservationalChatMessageHistory(memory, thread_id=thread_id, resource_id="r.1@x")
    for turn in _turns(10):
        history.add_messages([turn])
    stored = archived(memory, thread_id)
    assert stored and len(stored) + len(history.messages) - 1 == 20
    assert thread_id in memory.list_threads()
    recall = create_recall_tool(memory)
    cfg: RunnableConfig = {"configurable": {"thread_id": thread_id, "resource_id": "r.1@x"}}
    assert '"h0"' in recall.invoke({"anchor": "start"}, cfg)
    history.clear()
    assert archived(memory, thread_id) == [] and thread_id not in memory.list_threads()


def test_data_stored_under_the_old_labels_stays_readable(monkeypatch: pytest.MonkeyPatch) -> None:
    memory = make_memory(observation={"message_tokens": 300, "buffer_tokens": False})
    thread, resource = "~old-thread", "~old-user"
    with monkeypatch.context() as old_layout:  # before ids were encoded: the id is the label
        old_layout.setattr(storage, "thread_label", lambda t: t)
        old_layout.setattr(storage, "resource_label", lambda r: r or storage.NO_RESOURCE)
        history = ObservationalChatMessageHistory(memory, thread_id=thread, resource_id=resource)
        for turn in _turns(10):
            history.add_messages([turn])
        before = archived(memory, thread)
        window = history.messages
    assert before and memory.store.search((storage.ROOT, "archive", thread), limit=1)
    # Read in the new layout: the recall tool, the archive, the window, all still there.
    recall = create_recall_tool(memory)
    cfg: RunnableConfig = {"configurable": {"thread_id": thread, "resource_id": resource}}
    assert '"h0"' in recall.invoke({"anchor": "start", "mode": "messages"}, cfg)
    assert [m.id for m in archived(memory, thread)] == [m.id for m in before]
    assert [m.id for m in history.messages] == [m.id for m in window]
    assert memory.store.search((storage.ROOT, "archive", thread), limit=1) == []  # moved
    assert '"threads"' in recall.invoke({"mode": "threads"}, cfg)
    history.clear()
    assert archived(memory, thread) == []
