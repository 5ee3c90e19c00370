"""Re-sent ids replace (and archived ones are observed again, as edits); inputs above every
Observer model tier are observed in parts instead of failing the turn."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import ModelByInputTokens, ObservationalMemoryMiddleware
from langchain_om._core.record import log_text
from langchain_om._core.tokens import get_default_counter
from langchain_om.testing import FunctionChatModel, memory_model
from tests.helpers import archived_ids, make_memory
from tests.lifecycle import door_step

SMALL = {"message_tokens": 120, "buffer_tokens": False}


@pytest.mark.parametrize("door", ["standalone", "history"])
def test_a_re_sent_id_in_the_window_replaces_the_message(door: str) -> None:
    memory = make_memory()
    if door == "standalone":
        memory.add_messages("t", [HumanMessage("I live in Lisbon", id="m1")])
        snap = memory.add_messages("t", [HumanMessage("I live in Porto", id="m1")])
        window = list(snap.window)
    else:
        step = door_step(memory, "history", "t", "u")
        step([HumanMessage("I live in Lisbon", id="m1")])
        window, _ = step([HumanMessage("I live in Porto", id="m1")])
    assert [(m.id, m.text) for m in window] == [("m1", "I live in Porto")]


@pytest.mark.parametrize("door", ["standalone", "history", "graph"])
def test_a_re_sent_archived_id_is_observed_again_as_an_edit(door: str) -> None:
    memory = make_memory(observation=SMALL)
    step = (
        door_step(memory, door, "t", "u")  # type: ignore[arg-type]
        if door != "standalone"
        else (lambda b: (list((s := memory.add_messages("t", b)).window), s.record))
    )
    first = "My flat costs 900 EUR a month and I move on May 3. " * 4
    _, record = step([HumanMessage(first, id="m1"), AIMessage("Noted.", id="a1")])
    step([HumanMessage("Next topic: the car. " * 12, id="m2"), AIMessage("Ok.", id="a2")])
    assert "m1" in archived_ids(memory, "t")
    edit = "Correction: my flat costs 1250 EUR a month. " * 5
    step([HumanMessage(edit, id="m1")])
    _, record = step([HumanMessage("And the bike. " * 15, id="m3"), AIMessage("Ok.", id="a3")])
    archive = [(m.id or "", str(m.text)) for m in memory.archived_messages("t", record=record)]
    assert ("m1", first) in archive and ("m1", edit) in archive  # both versions, in order
    assert archive.index(("m1", first)) < archive.index(("m1", edit))
    assert "1250" in log_text(record["groups"])  # the edit was observed


def test_input_above_every_tier_is_observed_in_parts_through_agent_invoke() -> None:
    counter = get_default_counter()
    probe = memory_model()
    probing = make_memory(model=probe, observation=SMALL)
    # A short message the Observer can ground (a bare "hello" is rejected as ungrounded).
    probing.observe(thread_id="p", messages=[HumanMessage("My locker code is 7000.", id="x")])
    overhead = counter.count_messages(probe.calls[0].messages)
    observer = memory_model()
    tiers = ModelByInputTokens(up_to={overhead + 400: observer})
    memory = make_memory(model=tiers, observation=SMALL, reflection={"observation_tokens": 30_000})
    agent: Any = create_agent(
        FunctionChatModel(function=lambda m, i: "ok"),
        [],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t", "resource_id": "u"}}
    history: list[BaseMessage] = [
        m
        for i in range(14)
        for m in (
            HumanMessage(f"Fact {i}: the locker code is {7000 + i}. " * 6, id=f"h{i}"),
            AIMessage(f"Noted fact {i}.", id=f"a{i}"),
        )
    ]
    agent.invoke({"messages": history}, config)  # far above the only tier: must not raise
    agent.invoke({"messages": [HumanMessage("next", id="n1")]}, config)
    assert len(observer.calls) >= 2  # several Observer calls, each within the tier
    assert all(counter.count_messages(c.messages) <= overhead + 400 for c in observer.calls)
    record: Any = memory.read_state(agent.get_state(config).values)
    words = set(log_text(record["groups"]).replace(".", " ").split())
    archived = [m.id or "" for m in memory.archived_messages("t", record=record)]
    facts = [int(i[1:]) for i in archived if i.startswith("h")]
    assert len(facts) >= 10  # most of the history was observed, over several calls
    assert {str(7000 + i) for i in facts} <= words  # every archived fact is in the log
