"""What memory writes into graph state per step: only the keys whose content changed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om._core.group_keys import group_key, stored_record
from langchain_om._core.types import OM_META_KEY
from langchain_om._plans.graph_state import (
    OM_ACTIVITY_KEY,
    OM_STATE_KEY,
    record_update,
    state_record,
)
from langchain_om.testing import ScriptedChatModel, memory_model

RECORD: dict[str, Any] = {
    "thread_id": "t",
    "groups": [{"text": "* 🔴 (09:00) user likes tea"}],
    "observation_tokens": 10,
    "last_activity_at": "2026-01-01T09:00:00+00:00",
}


def test_a_stamp_only_change_writes_the_small_key_alone() -> None:
    state = {OM_STATE_KEY: stored_record(RECORD), OM_ACTIVITY_KEY: {"last_activity_at": "x"}}
    later = {**RECORD, "last_activity_at": "2026-01-01T09:05:00+00:00"}
    update = record_update(later, state)
    assert update == {OM_ACTIVITY_KEY: {"last_activity_at": later["last_activity_at"]}}
    assert state_record({**state, **update}) == later
    assert record_update(later, {**state, **update}) == {}  # nothing changed: nothing written


def test_a_changed_record_is_written_by_group_keys_and_unknown_state_writes_both() -> None:
    state = {OM_STATE_KEY: stored_record(RECORD), OM_ACTIVITY_KEY: {"last_activity_at": "x"}}
    grown = {**RECORD, "observation_tokens": 20, "last_activity_at": "x"}
    update = record_update(grown, state)
    assert set(update) == {OM_STATE_KEY}
    written = update[OM_STATE_KEY]
    assert "groups" not in written and written["group_keys"] == [group_key(RECORD["groups"][0])]
    assert state_record(update) == grown
    assert set(record_update(grown, None)) == {OM_STATE_KEY, OM_ACTIVITY_KEY}
    # read_only memories write nothing to the store: their state holds the log inline
    assert record_update(grown, state, inline=True) == {OM_STATE_KEY: grown}


def test_a_group_key_names_its_content() -> None:
    group: Any = RECORD["groups"][0]
    edited: Any = {**group, "text": group["text"] + "!"}
    same: Any = dict(group)
    assert group_key(group) == group_key(same)  # the content, not the object
    assert group_key(edited) != group_key(group)


def test_a_state_from_before_the_activity_key_reads_as_its_record() -> None:
    assert state_record({OM_STATE_KEY: RECORD}) == RECORD
    assert state_record({}) is None


def _turns(memory: ObservationalMemory, replies: list[str]) -> tuple[Any, InMemorySaver, list[Any]]:
    """An agent with ``memory`` run one turn per reply on thread ``t``; the saver's writes."""
    saver = InMemorySaver()
    agent = create_agent(
        ScriptedChatModel(script=replies),
        [],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=saver,
        store=memory.store,
    )
    for i in range(len(replies)):
        agent.invoke(
            {"messages": [HumanMessage(f"hello {i}")]}, {"configurable": {"thread_id": "t"}}
        )
    writes = [
        w for (thread, _, _), ws in saver.writes.items() if thread == "t" for w in ws.values()
    ]
    return agent, saver, writes


def test_agent_turns_below_the_threshold_do_not_rewrite_the_record() -> None:
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 100_000, "buffer_tokens": False},
    )
    agent, saver, writes = _turns(memory, ["ok"] * 5)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    record_writes = [w for w in writes if w[1] == OM_STATE_KEY]
    activity_writes = [w for w in writes if w[1] == OM_ACTIVITY_KEY]
    # turn 1 creates it (its step runs in the model call, so it knows the actor model);
    # later steps only stamp
    assert len(record_writes) == 1
    assert len(activity_writes) == 5
    values = agent.get_state(cfg).values
    assert values[OM_STATE_KEY]["thread_id"] == "t"
    record = state_record(values)
    assert record["last_activity_at"] == values[OM_ACTIVITY_KEY]["last_activity_at"]


def test_new_messages_are_stamped_without_a_third_copy_of_the_window() -> None:
    """Each turn writes ``messages`` twice (the input, the reply); the stamps still persist."""
    times = iter(datetime(2026, 3, 1, 9, minute, tzinfo=UTC) for minute in range(60))
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 100_000, "buffer_tokens": False},
        clock=lambda: next(times),
    )
    _, saver, writes = _turns(memory, [f"reply {i}" for i in range(4)])
    cfg: Any = {"configurable": {"thread_id": "t"}}
    assert len([w for w in writes if w[1] == "messages"]) == 2 * 4
    # Read back from the checkpointer alone: every message but the newest reply has its time,
    # and a user message's time is the step at which it arrived (not a later one).
    stored = saver.get_tuple(cfg)
    assert stored is not None
    messages = stored.checkpoint["channel_values"]["messages"]
    stamps = [m.response_metadata.get(OM_META_KEY, {}).get("ts") for m in messages]
    assert [m.type for m in messages] == ["human", "ai"] * 4
    assert all(stamps[:-1]) and stamps[-1] is None
    user_stamps = stamps[0::2]
    assert user_stamps == sorted(user_stamps) and len(set(user_stamps)) == 4
    assert stamps[1] == user_stamps[0]  # a reply is dated by the step that first saw it
