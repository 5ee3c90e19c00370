"""Resource scope through every front door: what one thread learns, the others' agents see.

A fact told in thread A of a resource reaches the memory context thread B's model receives
(the captured request), through the middleware, the graph nodes, the history adapter and the
standalone engine; a thread of another resource never sees it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import ObservationalChatMessageHistory, ObservationalMemory
from langchain_om.errors import OMUsageError
from langchain_om.testing import FunctionChatModel, RecordedCall
from tests.helpers import (
    FIXED,
    build_agent,
    build_graph,
    thread_memory_reply,
    thread_observer_reply,
)

FACT = "Zelda lives in Oslo"
FILLER = "and here is some more about my week " * 6


def resource_memory(**overrides: Any) -> ObservationalMemory:
    options: dict[str, Any] = {
        "model": FunctionChatModel(function=thread_observer_reply),
        "scope": "resource",
        "observation": {"message_tokens": 250, "buffer_tokens": False},
        "reflection": {"observation_tokens": 100_000},
        "clock": lambda: FIXED,
        "sleep": lambda s: None,
    }
    options.update(overrides)
    return ObservationalMemory(**options)


def actor() -> FunctionChatModel:
    return FunctionChatModel(function=lambda m, i: f"Noted ({i.index}).")


def system_text(call: RecordedCall) -> str:
    return "\n".join(m.text for m in call.messages if m.type == "system")


def cfg(thread: str, resource: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread, "resource_id": resource}}


Door = Callable[[ObservationalMemory, FunctionChatModel, str, str, str], None]


def via_agent(
    memory: ObservationalMemory, model: FunctionChatModel, thread: str, resource: str, text: str
) -> None:
    build_agent(memory, model).invoke({"messages": [HumanMessage(text)]}, cfg(thread, resource))


def via_graph(
    memory: ObservationalMemory, model: FunctionChatModel, thread: str, resource: str, text: str
) -> None:
    build_graph(memory, model).invoke({"messages": [HumanMessage(text)]}, cfg(thread, resource))


def via_history(
    memory: ObservationalMemory, model: FunctionChatModel, thread: str, resource: str, text: str
) -> None:
    history = ObservationalChatMessageHistory(memory, thread_id=thread, resource_id=resource)
    history.add_messages([HumanMessage(text)])
    model.invoke(history.messages)
    history.add_messages([AIMessage("Noted.")])


def via_standalone(
    memory: ObservationalMemory, model: FunctionChatModel, thread: str, resource: str, text: str
) -> None:
    memory.add_messages(thread, [HumanMessage(text)], resource_id=resource)
    model.invoke(memory.get_context(thread_id=thread, resource_id=resource))
    memory.add_messages(thread, [AIMessage("Noted.")], resource_id=resource)


DOORS = {
    "agent": via_agent,
    "graph": via_graph,
    "history": via_history,
    "standalone": via_standalone,
}


def tell_and_ask(door: Door, memory: ObservationalMemory) -> tuple[str, str]:
    """Tell the fact in thread A (then talk until it is observed); ask in B and in another
    resource's thread. Returns the system text B's and the outsider's model received."""
    model = actor()
    door(memory, model, "A", "u1", f"{FACT}. {FILLER}")
    for i in range(4):
        door(memory, model, "A", "u1", f"turn {i}: {FILLER}")
    model.reset()
    door(memory, model, "B", "u1", "Where does Zelda live?")
    seen_by_b = system_text(model.calls[0])
    model.reset()
    door(memory, model, "C", "u2", "Where does Zelda live?")
    return seen_by_b, system_text(model.calls[0])


@pytest.mark.parametrize("name", list(DOORS))
def test_a_fact_from_thread_a_reaches_thread_b_only_within_the_resource(name: str) -> None:
    memory = resource_memory()
    seen_by_b, seen_by_other = tell_and_ask(DOORS[name], memory)
    assert FACT in seen_by_b
    assert "Zelda" not in seen_by_other


def test_the_agent_is_told_which_thread_is_current_and_ids_are_hashed() -> None:
    memory = resource_memory()
    seen_by_b, _ = tell_and_ask(via_agent, memory)
    assert "the current thread is" in seen_by_b
    assert 'thread id="A"' not in seen_by_b and '"B"' not in seen_by_b  # hashed labels


def test_other_threads_unobserved_messages_are_shown_newest_first() -> None:
    memory = resource_memory(observation={"message_tokens": 50_000, "buffer_tokens": False})
    model = actor()
    via_agent(memory, model, "A", "u1", "first thing in A")
    via_agent(memory, model, "A", "u1", "second thing in A")
    model.reset()
    via_agent(memory, model, "B", "u1", "hello from B")
    text = system_text(model.calls[0])
    assert "other conversations, not observed yet" in text
    assert text.index("second thing in A") < text.index("first thing in A")
    model.reset()
    via_agent(memory, model, "C", "u2", "hello from C")
    assert "thing in A" not in system_text(model.calls[0])


def test_resource_scope_needs_a_resource_id() -> None:
    memory = resource_memory()
    with pytest.raises(OMUsageError, match="resource id"):
        memory.add_messages("A", [HumanMessage("hi")])


def test_every_message_is_observed_once_and_the_window_shrinks() -> None:
    memory = resource_memory()
    model = actor()
    for i in range(8):
        via_standalone(memory, model, "A" if i % 2 else "B", "u1", f"fact {i}: {FILLER}")
    a, b = memory.status(thread_id="A"), memory.status(thread_id="B")
    archived = {m.id for t in ("A", "B") for m in memory.archived_messages(t)}
    window = {m.id for snap in (a, b) for m in snap.window}
    assert archived and not archived & window
    log = a.observations
    for i in range(7):  # the last turn may still be in a window
        assert log.count(f"fact {i}:") <= 1
    assert log.count("fact 0:") == 1


def messages_text(messages: list[BaseMessage]) -> str:
    return "\n".join(m.text for m in messages)


def test_the_shared_log_is_reflected_and_keeps_what_came_after() -> None:
    memory = resource_memory(
        model=FunctionChatModel(function=thread_memory_reply),
        # block_after above what the scripted Reflector leaves: the whole log is shown
        reflection={"observation_tokens": 150, "block_after": 1_000},
    )
    model = actor()
    via_standalone(memory, model, "A", "u1", f"{FACT}. {FILLER}")
    for i in range(14):
        via_standalone(memory, model, "B" if i % 2 else "A", "u1", f"turn {i}: {FILLER}")
    snap = memory.status(thread_id="B")
    assert snap.record["generation"] >= 1
    assert FACT in snap.observations  # the first line of its thread and date is kept
    assert snap.record["observation_tokens"] < 300


def test_forget_removes_the_threads_unobserved_messages_from_the_others_view() -> None:
    memory = resource_memory(observation={"message_tokens": 50_000, "buffer_tokens": False})
    model = actor()
    via_standalone(memory, model, "A", "u1", "a secret in A")
    memory.forget(thread_id="A", resource_id="u1")
    model.reset()
    via_standalone(memory, model, "B", "u1", "hello from B")
    assert "secret" not in system_text(model.calls[0])


def test_get_context_shows_what_another_thread_observed_since_this_threads_last_step() -> None:
    memory = resource_memory()
    model = actor()
    via_standalone(memory, model, "B", "u1", "hello from B")  # B's last step: nothing observed
    via_standalone(memory, model, "A", "u1", f"{FACT}. {FILLER}")
    for i in range(4):
        via_standalone(memory, model, "A", "u1", f"turn {i}: {FILLER}")
    context = memory.get_context(thread_id="B", resource_id="u1")
    assert FACT in context[0].text and context[0].type == "system"


@pytest.mark.parametrize("name", ["agent", "graph"])
def test_other_threads_messages_count_toward_the_threshold(name: str) -> None:
    memory = resource_memory()
    model = actor()
    DOORS[name](memory, model, "A", "u1", f"{FACT}. " + "some words " * 90)  # ~200: below
    build = build_agent if name == "agent" else build_graph
    app = build(memory, model)
    hello = HumanMessage("hi " + "more words " * 30)  # ~70 tokens: together above 250
    app.invoke({"messages": [hello]}, cfg("B", "u1"))
    record = memory.read_state(app.get_state(cfg("B", "u1")).values)
    assert record["groups"] and "Shared across" in record["groups"][0]["text"]
    assert FACT in record["groups"][0]["text"]


def test_resource_cycles_emit_events_and_call_hooks() -> None:
    events: list[Any] = []
    hooks: list[str] = []
    memory = resource_memory(
        on_debug_event=events.append,
        hooks={
            "on_observation_start": lambda ctx: hooks.append("start"),
            "on_observation_end": lambda ctx: hooks.append("end"),
        },
    )
    model = actor()
    via_standalone(memory, model, "B", "u1", "hello from B")
    for i in range(4):
        via_standalone(memory, model, "A", "u1", f"turn {i}: {FILLER}")
    types = [e.type for e in events]
    assert "data-om-observation-start" in types and "data-om-observation-end" in types
    start = next(e for e in events if e.type == "data-om-observation-start")
    assert set(start.thread_ids) == {"A", "B"}
    assert hooks[:2] == ["start", "end"]


def failing_reflector(messages: list[BaseMessage], info: RecordedCall) -> str:
    raise RuntimeError("reflector down")


@pytest.mark.parametrize("name", ["agent", "standalone"])
def test_while_reflections_fail_the_context_shows_at_most_block_after_tokens(name: str) -> None:
    memory = resource_memory(
        model=None,
        observation={
            "model": FunctionChatModel(function=thread_observer_reply),
            "message_tokens": 250,
            "buffer_tokens": False,
        },
        reflection={
            "observation_tokens": 150,
            "block_after": 250,
            "model": FunctionChatModel(function=failing_reflector),
        },
    )
    model, door = actor(), DOORS[name]
    door(memory, model, "A", "u1", f"{FACT}. {FILLER}")
    for i in range(24):
        door(memory, model, "B" if i % 2 else "A", "u1", f"turn {i}: {FILLER}")
    model.reset()
    door(memory, model, "B", "u1", "What did I say last?")
    snap = memory.status(thread_id="B", resource_id="u1")
    assert snap.record["generation"] == 0, "every reflection failed"
    assert snap.record["observation_tokens"] > 2 * 250, "the stored log keeps everything"
    shown = sum(memory.counter.count_text(g["text"]) for g in snap.record["groups"])
    assert shown <= 250
    seen = system_text(model.calls[0])
    assert "older observation lines are not shown" in seen
    log = seen.split("<thread id=", 1)[1].split("Recent messages", 1)[0]
    assert re.search(r"turn 2\d:", log) and "turn 1:" not in log and FACT not in log  # newest
    # block_after above the log: everything is shown again
    wide = resource_memory(store=memory.store, reflection={"observation_tokens": 150_000})
    assert FACT in wide.status(thread_id="B", resource_id="u1").observations


def test_recall_is_on_by_default_in_resource_scope() -> None:
    memory = resource_memory()
    assert memory.config.retrieval is not None and memory.config.retrieval.scope == "resource"
    assert [t.name for t in memory.tools] == ["recall"]
    model = actor()
    via_agent(memory, model, "A", "u1", f"{FACT}. {FILLER}")
    for i in range(4):
        via_agent(memory, model, "A", "u1", f"turn {i}: {FILLER}")
    assert "recall" in model.last_call.tool_names
    system = system_text(model.last_call)
    assert FACT in system and "## Group" not in system, "the shared view claims no ranges"
    assert not resource_memory(retrieval=False).tools, "retrieval=False keeps it off"
