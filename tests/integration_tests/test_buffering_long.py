"""Buffering over long runs: 120 randomized lifecycles, the default window over 900 steps, and a
real background thread behind a slow Observer."""

from __future__ import annotations

import random
import time
from datetime import timedelta
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import ObservationalMemory
from langchain_om._plans.storage import buffer_ns
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import FACT_ADJECTIVES as _ADJECTIVES
from tests.helpers import FACT_NAMES as _NAMES
from tests.helpers import FACT_PLACES as _PLACES
from tests.helpers import FACT_THINGS as _THINGS
from tests.helpers import FACT_VERBS as _VERBS
from tests.helpers import Clock, archived_ids, build_agent

pytestmark = pytest.mark.slow


def test_buffering_does_not_block_the_turn() -> None:
    observer = memory_model()
    observer.delay = 2.0
    memory = ObservationalMemory(
        model=observer, observation={"message_tokens": 400, "buffer_tokens": 100}
    )
    events: list[str] = []
    memory.on_debug_event = lambda e: events.append(e.type)
    actor = FunctionChatModel(function=lambda m, i: f"Answer {i.index}: " + "ok " * 20)
    agent = build_agent(memory, actor, tools=[])
    cfg: RunnableConfig = {"configurable": {"thread_id": "t"}}
    durations = []
    turn = 0
    while not memory.background_running("t"):
        start = time.monotonic()
        agent.invoke({"messages": [HumanMessage(f"Turn {turn}: " + "words " * 20)]}, cfg)
        durations.append(time.monotonic() - start)
        turn += 1
        assert turn < 20
    assert durations[-1] < 1.0, "the turn that started a buffer waited for the Observer"
    memory.wait_for_background()
    assert "data-om-buffering-end" in events
    observer_calls = observer.call_count
    # Keep talking until the threshold: the buffered chunk activates without an Observer call.
    while "data-om-activation" not in events:
        start = time.monotonic()
        agent.invoke({"messages": [HumanMessage(f"Turn {turn}: " + "words " * 20)]}, cfg)
        assert time.monotonic() - start < 1.0
        turn += 1
        assert turn < 40
    assert "data-om-observation-start" not in events  # no synchronous observation
    assert observer.call_count - observer_calls <= 1  # at most a new background buffer
    memory.close()


# -- randomized lifecycle ----------------------------------------------------------------


def lifecycle(seed: int) -> None:
    rng = random.Random(seed)
    clock = Clock()
    failing = {"observer": False, "reflector": False}
    base = memory_model()

    def reply(messages: list[BaseMessage], info: RecordedCall) -> Any:
        is_reflector = "## Observations to Condense" in messages[-1].text
        if failing["reflector" if is_reflector else "observer"]:
            raise RuntimeError("scripted model failure")
        return base.function(messages, info)  # type: ignore[misc]

    message_tokens = rng.choice([300, 500, 800])
    memory = ObservationalMemory(
        model=FunctionChatModel(function=reply),
        observation={
            "message_tokens": message_tokens,
            "buffer_tokens": rng.choice([0.2, 0.3, 100]),
            "buffer_activation": rng.choice([0.8, 0.5, 1.0]),
            "block_after": rng.choice([1.2, 1.5]),
            "activate_after_idle": rng.choice([False, "5m", 60_000]),
            "failure_policy": "continue",
        },
        reflection={"observation_tokens": rng.choice([300, 600])},
        activate_on_provider_change=rng.random() < 0.5,
        clock=clock,
        background="manual",
        sleep=lambda s: None,
    )
    thread = "t"
    sent: list[str] = []
    window: list[BaseMessage] = []
    record: dict[str, Any] | None = None
    cursor = 0
    models = ["openai/gpt-5-mini", "google/gemini-2.5-flash"]
    actor = models[0]
    for step in range(rng.randrange(30, 60)):
        # new messages: a user turn, sometimes with a tool call and its result
        words = " ".join(f"w{rng.randrange(999)}" for _ in range(rng.randrange(3, 80)))
        new: list[BaseMessage] = [HumanMessage(words, id=f"h{step}")]
        if rng.random() < 0.3:
            call = {"name": "tool", "args": {"x": step}, "id": f"c{step}"}
            new.append(AIMessage("", tool_calls=[call], id=f"ai{step}"))
            new.append(
                ToolMessage("r " * rng.randrange(5, 60), tool_call_id=f"c{step}", id=f"t{step}")
            )
        new.append(AIMessage(f"answer {step} " + words[:60], id=f"a{step}"))
        sent.extend(m.id or "" for m in new)
        window = window + new
        failing["observer"] = rng.random() < 0.15
        failing["reflector"] = rng.random() < 0.15
        if rng.random() < 0.1:
            clock.now += timedelta(minutes=rng.choice([2, 10, 90]))  # idle gap
        if rng.random() < 0.1:
            actor = models[1 - models.index(actor)]  # provider switch
        before_record = record
        out = memory.step(thread_id=thread, window=window, record=record, actor_model=actor)
        record, window = dict(out.record), out.window
        # failures remove nothing: what left the window is archived
        assert [m.id for m in out.removed] == archived_ids(memory, thread)[cursor:]
        # the cursor never moves back
        assert record["observed_message_count"] >= cursor
        cursor = record["observed_message_count"]
        # every message is archived or in the window, in order, once
        assert archived_ids(memory, thread) + [m.id for m in window] == sent
        assert len(archived_ids(memory, thread)) == cursor
        assert not window or not isinstance(window[0], ToolMessage)
        if before_record is not None:
            assert record["generation"] >= before_record["generation"]
        # background work: run it, drop it (a crash), or leave it in flight
        roll = rng.random()
        if roll < 0.6:
            memory.run_background()
        elif roll < 0.75:
            memory._background.drop_pending()
        clock.now += timedelta(seconds=rng.randrange(1, 30))
    # stored chunks never strand messages: each names messages still in the window
    window_ids = {m.id for m in window}
    for item in memory.store.search(buffer_ns(thread), limit=10_000):
        ids = set(item.value["message_ids"])
        assert ids <= window_ids or not ids & window_ids


@pytest.mark.parametrize("seed", range(120))
def test_randomized_lifecycle(seed: int) -> None:
    lifecycle(seed)


def _facts(rng: random.Random, turn: int, count: int) -> str:
    """``count`` distinct facts (a name, a place, a price) for turn ``turn``: text an Observer
    can ground its lines in (about 17 tokens a fact)."""
    return " ".join(
        f"{rng.choice(_NAMES)} {rng.choice(_VERBS)} a {rng.choice(_ADJECTIVES)} "
        f"{rng.choice(_THINGS)} in {rng.choice(_PLACES)} for {rng.randrange(10, 990)} euros "
        f"on day {turn}."
        for _ in range(count)
    )


def test_default_settings_window_oscillates() -> None:
    memory = ObservationalMemory(model=memory_model(), background="manual")
    events: list[Any] = []
    memory.on_debug_event = events.append
    window: list[BaseMessage] = []
    record = None
    fractions = []
    rng = random.Random(1)
    for i in range(900):
        # about 100-450 tokens of distinct facts a turn (the Observer must find facts to keep)
        text = _facts(rng, i, rng.randrange(6, 27))
        window = window + [
            HumanMessage(text, id=f"h{i}"),
            AIMessage("ok " + text[:350], id=f"a{i}"),
        ]
        out = memory.step(thread_id="t", window=window, record=record)
        record, window = out.record, out.window
        assert out.status is not None
        fractions.append(out.status.messages.tokens / out.status.messages.threshold)
        memory.run_background()
    counts = {
        "activations": sum(1 for e in events if e.type == "data-om-activation"),
        "sync_observations": sum(
            1
            for e in events
            if e.type == "data-om-observation-end" and e.operation_type == "observation"
        ),
        "buffers": sum(1 for e in events if e.type == "data-om-buffering-end"),
    }
    steady = fractions[len(fractions) // 3 :]
    print(f"window min {min(steady):.2f} max {max(steady):.2f} of message_tokens; {counts}")
    assert counts["activations"] >= 5
    assert counts["sync_observations"] <= counts["activations"] // 10
    assert min(steady) < 0.35 and max(steady) <= 1.0
