"""temporal_markers: a persisted time-gap reminder before a user message after a long pause."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om._core.temporal import gap_text
from langchain_om.testing import FunctionChatModel, memory_model


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.mark.parametrize(
    ("gap", "label"),
    [
        (timedelta(minutes=9), None),
        (timedelta(minutes=10), "10 minutes later"),
        (timedelta(hours=3), "3 hours later"),
        (timedelta(hours=7), "over 6 hours later"),
        (timedelta(days=3), "3 days later"),
        (timedelta(weeks=5), "5 weeks later"),
    ],
)
def test_gap_labels(gap: timedelta, label: str | None) -> None:
    assert gap_text(gap) == label


def test_engine_inserts_and_keeps_the_reminder() -> None:
    clock = Clock()
    observer = memory_model()
    memory = ObservationalMemory(
        model=observer,
        temporal_markers=True,
        observation={"message_tokens": 10_000, "buffer_tokens": False},
        clock=clock,
    )
    events: list[Any] = []
    memory.on_debug_event = events.append
    memory.add_messages("t", [HumanMessage("hi", id="u1"), AIMessage("hello", id="a1")])
    clock.now += timedelta(minutes=3)
    memory.add_messages("t", [HumanMessage("still here", id="u2")])
    assert not [e for e in events if e.type == "data-om-temporal-gap"]
    clock.now += timedelta(hours=3)
    snap = memory.add_messages("t", [HumanMessage("back", id="u3")])
    ids = [m.id for m in snap.window]
    assert ids[-2:] == ["__temporal_gap_u3", "u3"]
    reminder = snap.window[-2]
    assert "3 hours later" in reminder.text and "temporal-gap" in reminder.text
    gap = [e for e in events if e.type == "data-om-temporal-gap"]
    assert len(gap) == 1 and gap[0].precedes_message_id == "u3"
    # persisted: another step does not insert it twice
    snap = memory.add_messages("t", [AIMessage("welcome back", id="a3")])
    assert [m.id for m in snap.window].count("__temporal_gap_u3") == 1
    # and the Observer sees it as a plain line
    memory.observe(thread_id="t")
    prompt = observer.last_call.messages[-1].text
    assert "3 hours later" in prompt
    assert prompt.index("still here") < prompt.index("3 hours later") < prompt.index("back")


def test_agent_state_keeps_the_reminder_in_order() -> None:
    clock = Clock()
    memory = ObservationalMemory(
        model=memory_model(),
        temporal_markers=True,
        observation={"message_tokens": 10_000, "buffer_tokens": False},
        clock=clock,
    )
    actor = FunctionChatModel(function=lambda m, i: f"answer {i.index}")
    agent = create_agent(
        actor,
        [],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
    )
    cfg: RunnableConfig = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("hi", id="u1")]}, cfg)
    clock.now += timedelta(days=2)
    out = agent.invoke({"messages": [HumanMessage("back", id="u2")]}, cfg)
    kinds = [(m.type, m.id) for m in out["messages"]]
    assert kinds[2:4] == [("human", "__temporal_gap_u2"), ("human", "u2")]
    # the rewrite that puts the reminder in place keeps the reply of the same model call
    assert [m.text for m in out["messages"]][-1] == "answer 1" and len(kinds) == 5
    sent = [m.text for m in actor.last_call.messages]
    assert "2 days later" in sent[-2] and sent[-1] == "back"
    stored = agent.get_state(cfg).values["messages"]
    assert [(m.type, m.id) for m in stored] == kinds
