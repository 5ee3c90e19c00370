"""The observation log of a graph thread: groups in the store, their keys in graph state.

A checkpoint holds the record without its log (a few hundred bytes however long the log is);
the groups are written once each, read back by key in a process that has not seen them, and
every checkpoint (forks included) still reads as the log it saw.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from typing import Any

import ormsgpack
import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import GetOp, Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

from langchain_om import ObservationalMemory
from langchain_om._core import group_keys
from langchain_om._plans.graph_state import OM_STATE_KEY
from langchain_om.errors import StorageError
from langchain_om.testing import FunctionChatModel, memory_model
from tests.helpers import APP_OPTIONS, actor_reply, build_agent, build_graph, user_turn

GROUPS_NS = ("langchain_om", "groups")


class CountingStore(InMemoryStore):
    """An in-memory store that counts the gets and puts on the groups namespace."""

    def __init__(self) -> None:
        super().__init__()
        self.gets = 0
        self.puts = 0

    def _count(self, ops: Iterable[Op]) -> list[Op]:
        listed = list(ops)
        for op in listed:
            if isinstance(op, GetOp) and op.namespace[:2] == GROUPS_NS:
                self.gets += 1
            if isinstance(op, PutOp) and op.namespace[:2] == GROUPS_NS:
                self.puts += 1
        return listed

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return super().batch(self._count(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await super().abatch(self._count(ops))


@pytest.fixture
def cold_cache() -> Iterator[None]:
    """A group cache that can be emptied, as in a fresh process; restored afterwards."""
    groups, keys = dict(group_keys._groups), dict(group_keys._keys)
    yield
    group_keys._groups.clear()
    group_keys._groups.update(groups)
    group_keys._keys.clear()
    group_keys._keys.update(keys)


def forget_cache() -> None:
    group_keys._groups.clear()
    group_keys._keys.clear()


def _memory(store: InMemoryStore) -> ObservationalMemory:
    return ObservationalMemory(
        model=memory_model(), store=store, checkpointer=InMemorySaver(), **APP_OPTIONS
    )


def test_the_checkpoint_holds_keys_and_the_store_holds_each_group_once(cold_cache: None) -> None:
    store = CountingStore()
    memory = _memory(store)
    agent = build_agent(memory, FunctionChatModel(function=actor_reply))
    cfg: Any = {"configurable": {"thread_id": "t"}}
    for i in range(30):
        agent.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
    values = agent.get_state(cfg).values
    record = memory.read_state(values)
    log = "\n".join(g["text"] for g in record["groups"])
    assert record["generation"] >= 1 and len(log) > 1_000
    in_state = values[OM_STATE_KEY]
    assert "groups" not in in_state and len(in_state["group_keys"]) == len(record["groups"])
    assert len(ormsgpack.packb(in_state)) < len(ormsgpack.packb(record)) // 2
    # every group that was ever in a checkpoint is in the store, written once
    stored = store.search(("langchain_om", "groups", "t"), limit=1_000)
    every_key = {
        k
        for snapshot in agent.get_state_history(cfg)
        if isinstance(snapshot.values.get(OM_STATE_KEY), dict)
        for k in snapshot.values[OM_STATE_KEY].get("group_keys", [])
    }
    assert every_key <= {item.key for item in stored}
    assert store.puts == len(stored)


def test_a_fresh_process_reads_the_log_from_the_store(cold_cache: None) -> None:
    store = CountingStore()
    memory = _memory(store)
    agent = build_agent(memory, FunctionChatModel(function=actor_reply))
    cfg: Any = {"configurable": {"thread_id": "t"}}
    for i in range(20):
        agent.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
    before = memory.read_state(agent.get_state(cfg).values)
    assert before["groups"]
    forget_cache()
    gets = store.gets
    values = agent.get_state(cfg).values
    assert memory.read_state(values) == before
    assert store.gets - gets == len(set(values[OM_STATE_KEY]["group_keys"]))
    forget_cache()
    assert asyncio.run(memory.aread_state(values)) == before
    # status() reads the checkpoint and the store the same way
    forget_cache()
    assert memory.status(thread_id="t").record["groups"] == before["groups"]
    # and the agent goes on from it: its next model call shows the log
    actor = FunctionChatModel(function=actor_reply)
    forget_cache()
    again = build_agent(memory, actor)
    again.invoke({"messages": [HumanMessage("Turn 99: and now?")]}, cfg)
    shown = actor.last_call.messages[0].text
    assert before["groups"][-1]["text"].splitlines()[-1] in shown


def test_a_state_naming_groups_the_store_lacks_is_an_error_that_names_the_fix(
    cold_cache: None,
) -> None:
    memory = _memory(CountingStore())
    agent = build_agent(memory, FunctionChatModel(function=actor_reply))
    cfg: Any = {"configurable": {"thread_id": "t"}}
    for i in range(12):
        agent.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
    values = agent.get_state(cfg).values
    assert values[OM_STATE_KEY]["group_keys"]
    other = ObservationalMemory(model=memory_model(), store=InMemoryStore(), **APP_OPTIONS)
    forget_cache()
    with pytest.raises(StorageError, match="store that wrote this thread"):
        other.read_state(values)
    with pytest.raises(StorageError, match="read_state"):
        other.render(values[OM_STATE_KEY])  # a record from state, used without reading it


def test_forks_read_the_log_each_checkpoint_saw(cold_cache: None) -> None:
    memory = _memory(CountingStore())
    graph = build_graph(memory, FunctionChatModel(function=actor_reply))
    cfg: Any = {"configurable": {"thread_id": "f"}}
    for i in range(24):
        graph.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
    history = list(graph.get_state_history(cfg))
    latest = memory.read_state(history[0].values)
    earlier = next(
        s
        for s in history
        if isinstance(s.values.get(OM_STATE_KEY), dict)
        and 0 < memory.read_state(s.values)["observed_message_count"]
        and memory.read_state(s.values)["groups"] != latest["groups"]
        and not s.next
    )
    seen = memory.read_state(earlier.values)
    graph.invoke({"messages": [HumanMessage("Fork: " + "other words " * 20)]}, earlier.config)
    for i in range(8):  # the fork grows a log of its own
        graph.invoke({"messages": [HumanMessage(f"Fork {i}: " + "other words " * 20)]}, cfg)
    fork = memory.read_state(graph.get_state(cfg).values)
    assert fork["groups"] != latest["groups"]
    forget_cache()
    # each branch's checkpoints still read as the log they saw, from the store
    assert memory.read_state(history[0].values) == latest
    assert memory.read_state(earlier.values) == seen
    assert memory.read_state(graph.get_state(cfg).values) == fork


def test_forget_deletes_the_threads_groups(cold_cache: None) -> None:
    store = CountingStore()
    memory = _memory(store)
    agent = build_agent(memory, FunctionChatModel(function=actor_reply))
    cfg: Any = {"configurable": {"thread_id": "gone"}}
    for i in range(12):
        agent.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
    assert store.search(("langchain_om", "groups", "gone"), limit=10)
    memory.forget(thread_id="gone")
    assert store.search(("langchain_om", "groups", "gone"), limit=10) == []
