"""Looping Observers through the front doors: cut as they start, salvaged, never failing a turn."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import FunctionChatModel, RecordedCall
from tests.helpers import archived

LOOP_LINE = "* ✅ (14:{m:02d}) Kasimir said he was off to the regatta in Gdynia."


def _loop(n: int = 60) -> str:
    return "\n".join(LOOP_LINE.format(m=m % 60) for m in range(n))


class CountingLoopModel(BaseChatModel):
    """Streams a reply token by token and counts how many tokens it was asked for."""

    reply: str
    pulled: int = 0

    @property
    def _llm_type(self) -> str:
        return "counting-loop"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.reply))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for index in range(0, len(self.reply), 4):  # about one token a chunk
            self.pulled += 1
            yield ChatGenerationChunk(message=AIMessageChunk(content=self.reply[index : index + 4]))


def _agent(memory: ObservationalMemory) -> Any:
    actor = FunctionChatModel(function=lambda m, i: "Noted.")
    return create_agent(
        actor,
        [],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )


def _say(i: int) -> str:
    return f"Turn {i}: my sister Ingrid booked the ferry to Bergen for the {i + 3}th of June."


def test_generation_stops_soon_after_the_loop_starts() -> None:
    model = CountingLoopModel(reply="<observations>\n" + _loop(400))
    memory = ObservationalMemory(
        model=model, observation={"message_tokens": 60, "buffer_tokens": False}
    )
    memory.add_messages("t", [HumanMessage(_say(i), id=f"u{i}") for i in range(6)])
    total = len(model.reply) // 4
    # two calls (the reply and its retry), each stopped within a few loop rounds
    assert model.pulled < 2 * 120 < total
    assert len(memory.status(thread_id="t").window) == 6  # nothing observed, nothing lost


def test_an_always_looping_observer_never_fails_an_agent_turn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Default settings: the turn goes on, the window stays, one WARNING per failed cycle."""
    observer = FunctionChatModel(function=lambda m, i: "<observations>\n" + _loop())
    memory = ObservationalMemory(
        model=observer, observation={"message_tokens": 80, "buffer_tokens": False}
    )
    events: list[Any] = []
    memory.on_debug_event = events.append
    agent = _agent(memory)
    cfg: RunnableConfig = {"configurable": {"thread_id": "t"}}
    with caplog.at_level(logging.WARNING, logger="langchain_om"):
        for i in range(8):
            out = agent.invoke({"messages": [HumanMessage(_say(i), id=f"u{i}")]}, cfg)
    kept = [m.text for m in out["messages"] if isinstance(m, HumanMessage)]
    assert kept == [_say(i) for i in range(8)]  # every message still in the window
    failed = [e for e in events if e.type == "data-om-observation-failed" and not e.retrying]
    assert failed and all(e.reason in ("degenerate", "backoff") for e in failed)
    cycle_warnings = [
        r for r in caplog.records if r.name == "langchain_om" and "cycle" in r.getMessage()
    ]
    assert len(cycle_warnings) == len(failed)
    # backoff: not every turn calls the Observer again
    assert observer.call_count < 2 * 8


def _salvaging(messages: list[BaseMessage], info: RecordedCall) -> str:
    """Observes the first two user messages faithfully, then loops on an invented line."""
    history = messages[-1].text.split("## New Messages to Observe")[1]
    said = [line.split("): ", 1)[1] for line in history.splitlines() if line.startswith("User (")]
    head = [f"* 🔴 (09:00) User said: {text}" for text in said[:2]]
    return "<observations>\nDate: Dec 2, 2026\n" + "\n".join(head) + "\n" + _loop()


@pytest.mark.parametrize("asynchronous", [False, True])
def test_grounded_lines_before_a_loop_are_salvaged_through_the_agent(asynchronous: bool) -> None:
    observer = FunctionChatModel(function=_salvaging)
    memory = ObservationalMemory(
        model=observer, observation={"message_tokens": 100, "buffer_tokens": False}
    )
    events: list[Any] = []
    memory.on_debug_event = events.append
    agent = _agent(memory)
    cfg: RunnableConfig = {"configurable": {"thread_id": "t"}}
    sent = []
    for i in range(6):
        message = HumanMessage(_say(i), id=f"u{i}")
        sent.append(message.id)
        if asynchronous:
            import asyncio  # noqa: PLC0415

            asyncio.run(agent.ainvoke({"messages": [message]}, cfg))
        else:
            agent.invoke({"messages": [message]}, cfg)
    ends = [e for e in events if e.type == "data-om-observation-end"]
    assert ends and all(e.outcome == "salvaged" for e in ends)
    state = agent.get_state(cfg).values
    record = memory.read_state(state)
    assert "Ingrid booked the ferry" in memory.render(record).text
    assert "Kasimir" not in memory.render(record).text  # the loop line never enters memory
    window = [m.id for m in state["messages"] if isinstance(m, HumanMessage)]
    seen = [m.id for m in archived(memory, "t") if isinstance(m, HumanMessage)] + window
    assert seen == sent  # each message once, in order, in the archive or the window
    # a salvage observes only the messages its lines cover: each cycle two user messages
    assert all(e.covered_messages is not None and e.covered_messages <= 4 for e in ends)


def test_every_observer_and_reflector_call_is_bound_to_its_output_budget() -> None:
    from langchain_om._core.output_budget import observer_budget, reflector_budget  # noqa: PLC0415
    from langchain_om.testing import memory_model  # noqa: PLC0415

    model = memory_model()
    memory = ObservationalMemory(
        model=model,
        observation={"message_tokens": 200, "buffer_tokens": False},
        reflection={"observation_tokens": 150},
    )
    batch = [HumanMessage(_say(i), id=f"u{i}") for i in range(12)]
    memory.observe(thread_id="t", messages=batch)
    observer, *reflector = model.calls
    tokens = memory.counter.count_messages(batch)
    assert observer.kwargs["max_tokens"] == observer_budget(tokens, sections=2)
    assert reflector, "the log is over its threshold: a reflection ran"
    limits = {call.kwargs["max_tokens"] for call in reflector}
    assert all(limit <= reflector_budget(10**6, target_tokens=150, sections=1) for limit in limits)
    fixed = memory_model()
    capped = ObservationalMemory(
        model=fixed,
        observation={"message_tokens": 200, "buffer_tokens": False, "output_budget": 700},
        reflection={"observation_tokens": 20_000},
    )
    capped.observe(thread_id="t", messages=batch)
    assert [call.kwargs["max_tokens"] for call in fixed.calls] == [700]


def test_a_reply_that_re_emits_the_log_is_retried_without_the_log() -> None:
    """The retry after an echo of the log shows the Observer none of it."""
    shown: list[bool] = []

    def copier(messages: list[BaseMessage], info: RecordedCall) -> str:
        prompt = messages[-1].text
        shown.append("These are already recorded" in prompt)
        if info.index == 0:  # the first cycle observes honestly
            return (
                "<observations>\nDate: Dec 2, 2026\n* 🔴 (09:00) " + _say(0) + "\n</observations>"
            )
        if shown[-1]:  # later, shown the log, it copies it back
            return (
                "<observations>\nDate: Dec 2, 2026\n* 🔴 (09:00) " + _say(0) + "\n</observations>"
            )
        return "<observations>\nDate: Dec 2, 2026\n* 🔴 (09:05) " + _say(1) + "\n</observations>"

    memory = ObservationalMemory(
        model=FunctionChatModel(function=copier), observation={"message_tokens": 50_000}
    )
    memory.observe(thread_id="t", messages=[HumanMessage(_say(0), id="u0")])
    snap = memory.observe(thread_id="t", messages=[HumanMessage(_say(1), id="u1")])
    assert shown == [False, True, False]  # no log yet; the log shown; the retry without it
    assert "Bergen for the 4th" in snap.observations and len(snap.window) == 0


def test_a_small_observer_is_shown_no_previous_observations() -> None:
    prompts: list[str] = []

    def observe(messages: list[BaseMessage], info: RecordedCall) -> str:
        prompts.append(messages[-1].text)
        said = messages[-1].text.split("): ", 1)[1].split("\n")[0]
        return f"<observations>\nDate: Dec 2, 2026\n* 🔴 (09:00) User said: {said}\n</observations>"

    small = FunctionChatModel(function=observe, model_name="qwen2.5-1.5b-instruct")
    memory = ObservationalMemory(model=small, observation={"message_tokens": 50_000})
    for i in range(2):
        memory.observe(thread_id="t", messages=[HumanMessage(_say(i), id=f"u{i}")])
    assert "These are already recorded" not in prompts[1]
    assert "recorded observation" in prompts[1]  # it is told the log exists
    told = FunctionChatModel(function=observe, model_name="qwen2.5-1.5b-instruct")
    shown = ObservationalMemory(
        model=told, observation={"message_tokens": 50_000, "previous_observer_tokens": 2_000}
    )
    prompts.clear()
    for i in range(2):
        shown.observe(thread_id="t", messages=[HumanMessage(_say(i), id=f"u{i}")])
    assert "These are already recorded" in prompts[1]  # set explicitly: shown as asked


class _StreamUsageSwitch(FunctionChatModel):
    """A model with the standard ``stream_usage`` switch (as ``ChatOpenAI`` has)."""

    stream_usage: bool | None = None


def test_streamed_calls_ask_for_usage_where_the_model_has_the_switch_unset() -> None:
    from langchain_om.testing import memory_model  # noqa: PLC0415

    batch = [HumanMessage(_say(i), id=f"u{i}") for i in range(6)]
    options: dict[str, Any] = {"observation": {"message_tokens": 200, "buffer_tokens": False}}
    unset = _StreamUsageSwitch(function=memory_model().function)
    ObservationalMemory(model=unset, **options).observe(thread_id="t", messages=batch)
    assert unset.calls and all(c.streamed and c.kwargs["stream_usage"] is True for c in unset.calls)
    refused = _StreamUsageSwitch(function=memory_model().function, stream_usage=False)
    ObservationalMemory(model=refused, **options).observe(thread_id="t", messages=batch)
    assert refused.calls and all("stream_usage" not in c.kwargs for c in refused.calls)
    plain = memory_model()  # no such field: nothing unknown is sent
    ObservationalMemory(model=plain, **options).observe(thread_id="t", messages=batch)
    assert plain.calls and all("stream_usage" not in c.kwargs for c in plain.calls)
