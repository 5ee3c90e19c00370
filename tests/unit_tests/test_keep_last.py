"""``keep_last_messages=N``: the N most recent messages stay in the window, always."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_om import OMConfigError
from langchain_om._core.floor import floor_chunks, floor_cut
from langchain_om.events import OMEvent
from tests.helpers import make_memory

COLORS = "red blue green amber violet silver".split()
ANIMALS = "fox owl heron otter badger".split()


def turn(i: int) -> list[BaseMessage]:
    """Turn ``i``: what the user saw (a different animal each turn, so that each turn tells
    the Observer something new), padded with detail."""
    words = "and more detail " * 40
    seen = f"{COLORS[i % len(COLORS)]} {ANIMALS[i // len(COLORS) % len(ANIMALS)]}"
    return [
        HumanMessage(f"Turn {i}: I saw a {seen} today, {words}", id=f"h{i}"),
        AIMessage(f"Ok {i}, a {seen} {words}", id=f"a{i}"),
    ]


@pytest.mark.parametrize(
    ("observation", "keep", "remover"),
    [
        ({"message_tokens": 600, "buffer_tokens": False}, 5, "data-om-observation-end"),
        (
            {"message_tokens": 1500, "buffer_tokens": 0.2, "buffer_activation": 0.95},
            3,
            "data-om-activation",
        ),
    ],
    ids=["sync", "activation"],
)
def test_the_last_messages_stay_whatever_memory_removes(
    observation: dict[str, Any], keep: int, remover: str
) -> None:
    memory = make_memory(observation=observation, keep_last_messages=keep, background="manual")
    events: list[OMEvent] = []
    memory.on_debug_event = events.append
    sent: list[BaseMessage] = []
    for i in range(30):
        sent += turn(i)
        snap = memory.add_messages("t", turn(i))
        memory.run_background()
        assert [m.id for m in snap.window[-keep:]] == [m.id for m in sent[-keep:]]
        assert len(snap.window) >= min(keep, len(sent))
    assert snap.record["observed_message_count"] > 0
    assert sum(e.type == remover for e in events) >= 3
    snap = memory.observe(thread_id="t")
    assert [m.id for m in snap.window] == [m.id for m in sent[-keep:]]


def test_without_the_floor_a_manual_observation_takes_everything() -> None:
    memory = make_memory()
    memory.add_messages("t", turn(0) + turn(1))
    assert memory.observe(thread_id="t").window == []


def test_the_floor_keeps_tool_pairs_together() -> None:
    call = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}], id="a")
    window: list[BaseMessage] = [
        HumanMessage("q", id="h"),
        call,
        ToolMessage("r", tool_call_id="c1", id="t"),
        AIMessage("done", id="d"),
    ]
    assert floor_cut(window, 4, 2) == 1  # not between the call and its result
    assert floor_cut(window, 4, 0) == 4
    chunks = [{"message_ids": ["h"]}, {"message_ids": ["a", "t"]}, {"message_ids": ["d"]}]
    assert floor_chunks(chunks, 4, 1) == 2
    assert floor_chunks(chunks, 4, 2) == 1


def test_a_negative_floor_is_refused() -> None:
    with pytest.raises(OMConfigError) as info:
        make_memory(keep_last_messages=-1)
    assert info.value.option == "keep_last_messages"
