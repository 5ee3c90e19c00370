"""The engine end to end with scripted models: thresholds, reflection, failures, hooks."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_om import CycleFailedError, ObservationalMemory
from langchain_om.testing import (
    FunctionChatModel,
    ScriptedChatModel,
    memory_model,
    rate_limit_error,
    server_error,
)
from tests.helpers import archived, make_memory

OBS = "<observations>\nDate: Nov 30, 2026\n* 🔴 (09:00) User likes tea\n</observations>"


def conversation(n_turns: int, seed: int = 0) -> list[list[BaseMessage]]:
    """Turns of messages with ids; every fourth turn has a tool call and its result."""
    rng = random.Random(seed)
    turns: list[list[BaseMessage]] = []
    for t in range(n_turns):
        words = " ".join(f"w{rng.randrange(1000)}" for _ in range(rng.randrange(5, 60)))
        turn: list[BaseMessage] = [HumanMessage(f"turn {t}: {words}", id=f"h{t}")]
        if t % 4 == 3:
            call = {"name": "lookup", "args": {"q": f"q{t}"}, "id": f"call{t}"}
            turn.append(AIMessage("", tool_calls=[call], id=f"c{t}"))
            turn.append(ToolMessage(f"result {t} " * 20, tool_call_id=f"call{t}", id=f"r{t}"))
        turn.append(AIMessage(f"answer {t}: {words[:80]}", id=f"a{t}"))
        turns.append(turn)
    return turns


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_long_conversation_observes_and_reflects(mode: str) -> None:
    memory = make_memory()
    events: list[str] = []
    memory.on_debug_event = lambda e: events.append(e.type)
    sent: list[str] = []
    threshold = memory.config.observation.message_tokens
    limit = memory.config.observation.block_after_tokens
    cursor = 0
    for turn in conversation(130):  # 300+ messages
        sent.extend(m.id or "" for m in turn)
        if mode == "sync":
            snap = memory.add_messages("t1", turn)
        else:
            snap = asyncio.run(memory.aadd_messages("t1", turn))
        assert snap.status.messages.tokens <= limit, "unobserved tokens over block_after"
        assert snap.record["observed_message_count"] >= cursor, "cursor moved back"
        cursor = snap.record["observed_message_count"]
        # No message lost: every message is archived or in the window, in order.
        in_memory = [m.id for m in archived(memory, "t1")] + [m.id for m in snap.window]
        assert in_memory == sent
        assert not isinstance(snap.window[0], ToolMessage)
    assert len(sent) >= 300
    assert events.count("data-om-observation-end") >= 10
    assert snap.record["generation"] >= 2
    assert snap.status.observations.tokens < 3_000 * 1.2
    assert threshold == 2_000


def test_sync_and_async_give_identical_records() -> None:
    sync_memory, async_memory = make_memory(), make_memory()

    async def run_async() -> Any:
        snap = None
        for turn in conversation(60, seed=3):
            snap = await async_memory.aadd_messages("t", turn)
        return snap

    snap_sync = None
    for turn in conversation(60, seed=3):
        snap_sync = sync_memory.add_messages("t", turn)
    snap_async = asyncio.run(run_async())
    assert snap_sync is not None and snap_async is not None
    assert snap_sync.record == snap_async.record
    assert [m.id for m in snap_sync.window] == [m.id for m in snap_async.window]
    assert snap_sync.record["generation"] >= 1


def test_manual_observe_reflect_status() -> None:
    memory = make_memory()
    turn = conversation(1)[0]
    snap = memory.observe(thread_id="t", messages=turn)
    assert snap.window == []
    assert "User said: turn 0" in snap.observations
    assert snap.record["observed_message_count"] == len(turn)
    assert snap.record["hints"]["current_task"] == "Continue the conversation"
    reflected = memory.reflect(thread_id="t")
    assert reflected.record["generation"] == 1
    assert reflected.record["groups"][0]["kind"] == "reflection"
    status = memory.status(thread_id="t")
    assert status.record == reflected.record
    context = memory.get_context(thread_id="t")
    assert context[0].type == "system" and "User said" in context[0].text


def test_transient_error_is_retried() -> None:
    observer = ScriptedChatModel(script=[rate_limit_error(), OBS])
    memory = make_memory(model=observer)
    snap = memory.observe(thread_id="t", messages=[HumanMessage("I like tea", id="m1")])
    assert observer.call_count == 2
    assert "User likes tea" in snap.observations


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_permanent_failure_removes_nothing_and_reports(mode: str) -> None:
    ends: list[dict[str, Any]] = []
    starts: list[dict[str, Any]] = []
    observer = ScriptedChatModel(script=[server_error(400, "bad request")])
    memory = make_memory(
        model=observer,
        hooks={"on_observation_start": starts.append, "on_observation_end": ends.append},
    )
    memory.add_messages("t", [HumanMessage("hello", id="m1"), AIMessage("hi", id="m2")])
    before = memory.status(thread_id="t")
    with pytest.raises(CycleFailedError) as info:
        if mode == "sync":
            memory.observe(thread_id="t")
        else:
            asyncio.run(memory.aobserve(thread_id="t"))
    assert "Nothing was removed" in info.value.message
    after = memory.status(thread_id="t")
    assert after.record == before.record
    assert [m.id for m in after.window] == ["m1", "m2"]
    assert archived(memory, "t") == []
    assert starts and starts[0]["trigger"] == "manual" and starts[0]["thread_id"] == "t"
    assert ends and ends[0]["error"] is not None


def test_failure_policy_continue_keeps_window() -> None:
    observer = ScriptedChatModel(script=[ValueError("boom")], repeat_last=True)
    memory = make_memory(
        model=observer,
        observation={"message_tokens": 50, "buffer_tokens": False, "failure_policy": "continue"},
    )
    outcome = memory.step(
        thread_id="t",
        window=[HumanMessage("word " * 100, id="a"), AIMessage("ok", id="b"), HumanMessage("x")],
    )
    assert not outcome.observed
    assert len(outcome.errors) == 1 and isinstance(outcome.errors[0], CycleFailedError)
    assert [m.id for m in outcome.window][:2] == ["a", "b"]


def test_hook_that_raises_is_ignored() -> None:
    def broken(payload: dict[str, Any]) -> None:
        raise RuntimeError("hook bug")

    memory = make_memory(
        model=ScriptedChatModel(script=[OBS]), hooks={"on_observation_end": broken}
    )
    snap = memory.observe(thread_id="t", messages=[HumanMessage("I like tea")])
    assert "User likes tea" in snap.observations


def test_async_hooks_are_awaited() -> None:
    seen: list[str] = []

    async def hook(payload: dict[str, Any]) -> None:
        seen.append(payload["trigger"])

    memory = make_memory(
        model=ScriptedChatModel(script=[OBS, OBS]), hooks={"on_observation_end": hook}
    )
    memory.observe(thread_id="t", messages=[HumanMessage("I like tea")])
    asyncio.run(memory.aobserve(thread_id="t2", messages=[HumanMessage("I like tea")]))
    assert seen == ["manual", "manual"]


def test_degenerate_output_is_retried_then_rejected() -> None:
    loop = "<observations>\n" + "* 🟡 (09:00) the same line repeats forever and ever\n" * 300
    good = ScriptedChatModel(script=[loop, OBS])
    memory = make_memory(model=good)
    snap = memory.observe(thread_id="t", messages=[HumanMessage("tea")])
    assert good.call_count == 2 and "User likes tea" in snap.observations

    bad = ScriptedChatModel(script=[loop, loop])
    memory = make_memory(model=bad)
    with pytest.raises(CycleFailedError):
        memory.observe(thread_id="t", messages=[HumanMessage("tea")])
    assert memory.status(thread_id="t").window[0].text == "tea"


def test_empty_reflection_never_replaces_the_log() -> None:
    def reply(messages: list[BaseMessage], info: Any) -> str:
        if "## Observations to Condense" in messages[-1].text:
            return "<observations>\n</observations>"
        return OBS

    memory = make_memory(model=FunctionChatModel(function=reply))
    memory.observe(thread_id="t", messages=[HumanMessage("tea")])
    with pytest.raises(CycleFailedError):
        memory.reflect(thread_id="t")
    snap = memory.status(thread_id="t")
    assert snap.record["generation"] == 0 and "User likes tea" in snap.observations


def test_reflection_failure_in_a_turn_does_not_raise_and_sets_churn_guard() -> None:
    def reply(messages: list[BaseMessage], info: Any) -> str:
        if "## Observations to Condense" in messages[-1].text:
            raise ValueError("reflector down")
        return OBS

    memory = make_memory(
        model=FunctionChatModel(function=reply),
        observation={"message_tokens": 20, "buffer_tokens": False},
        reflection={"observation_tokens": 10},
    )
    out = memory.step(thread_id="t", window=[HumanMessage("tea " * 50), HumanMessage("now")])
    assert out.observed and not out.reflected and out.errors
    assert out.record["reflection_suppressed_at_tokens"] == out.record["observation_tokens"]
    assert memory.should_reflect(out.record) is False


def test_missing_thread_id_is_a_clear_error() -> None:
    memory = make_memory()
    with pytest.raises(ValueError, match="thread id"):
        memory.step(thread_id=None, window=[HumanMessage("x")])


def test_observer_sees_previous_observations_and_hints() -> None:
    green = OBS.replace("likes tea", "likes green tea")  # new: the log holds "likes tea"
    observer = ScriptedChatModel(script=[OBS + "\n<current-task>tea</current-task>", green])
    memory = make_memory(model=observer)
    memory.observe(thread_id="t", messages=[HumanMessage("first: I like tea")])
    memory.observe(thread_id="t", messages=[HumanMessage("second: I like green tea")])
    prompt = observer.last_call.messages[-1].text
    assert "## Previous Observations" in prompt and "User likes tea" in prompt
    assert "prior current-task: tea" in prompt
    assert "second" in prompt and "first" not in prompt.split("## New Messages to Observe")[1]


def test_thread_title_updates_emit_an_event() -> None:
    titled = OBS + "\n<thread-title>Tea preferences</thread-title>"
    memory = make_memory(
        model=ScriptedChatModel(script=[titled]),
        observation={"message_tokens": 2_000, "buffer_tokens": False, "thread_title": True},
    )
    events: list[Any] = []
    memory.on_debug_event = events.append
    snap = memory.observe(thread_id="t", messages=[HumanMessage("I like tea")])
    assert snap.record["title"] == "Tea preferences"
    update = [e for e in events if e.type == "data-om-thread-update"]
    assert len(update) == 1 and update[0].new_title == "Tea preferences"
    assert update[0].old_title is None


def test_share_token_budget_moves_the_message_threshold() -> None:
    memory = make_memory(
        share_token_budget=True,
        observation={"message_tokens": 1_000, "buffer_tokens": False},
        reflection={"observation_tokens": 3_000},
    )
    empty = memory.new_record(thread_id="t")
    assert memory.threshold(empty) == 4_000
    grown = {**empty, "observation_tokens": 2_500}
    assert memory.threshold(grown) == 1_500
    full = {**empty, "observation_tokens": 3_500}
    assert memory.threshold(full) == 1_000


def test_disabled_memory_passes_through() -> None:
    observer = ScriptedChatModel(script=[OBS])
    memory = ObservationalMemory(False, model=observer)
    window = [HumanMessage("word " * 5_000, id="big"), AIMessage("ok", id="b"), HumanMessage("x")]
    out = memory.step(thread_id="t", window=window)
    assert not out.observed and out.window == window and observer.call_count == 0
    assert memory.render(out.record).blocks == []


def test_model_settings_and_provider_options_reach_the_calls() -> None:
    observer = memory_model()
    reflector = memory_model()
    memory = make_memory(
        model=None,
        observation={
            "model": observer,
            "message_tokens": 2_000,
            "buffer_tokens": False,
            "model_settings": {"max_output_tokens": 500},  # below the output budget
            "provider_options": {"seed": 7},
        },
        reflection={"model": reflector, "observation_tokens": 3_000},
    )
    # A log large enough for a real reflection (a one-line log cannot shrink).
    said = [
        HumanMessage(f"I booked flight {n} to Lisbon on {n % 28 + 1} May for {n * 10} euros.")
        for n in range(1, 40)
    ]
    memory.observe(thread_id="t", messages=said)
    memory.reflect(thread_id="t")
    sent = observer.last_call.kwargs
    assert sent["temperature"] == 0.3 and sent["max_tokens"] == 500 and sent["seed"] == 7
    assert reflector.last_call.kwargs["temperature"] == 0
    assert "seed" not in reflector.last_call.kwargs
