"""Tracing, logging and LangChain conventions: nested runs, quiet logs, any message form."""

from __future__ import annotations

import logging
import threading
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.graph import START, MessagesState, StateGraph

from langchain_om import (
    ObservationalChatMessageHistory,
    ObservationalMemory,
    add_observational_memory,
)
from langchain_om.errors import CycleFailedError
from langchain_om.events import TemporalGapEvent, ThreadUpdateEvent, parse_event
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import APP_OPTIONS, FIXED, actor_reply, build_agent, build_graph, user_turn

SECRET = "PINEAPPLE-7731"
"""A word that appears only in user messages: it must never reach a log line."""


class RunTree(BaseCallbackHandler):
    """Records every run's parent and, for chat model runs, name, tags and metadata."""

    def __init__(self) -> None:
        self.parents: dict[UUID, UUID | None] = {}
        self.models: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            self.parents[run_id] = parent_run_id

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            self.parents[run_id] = parent_run_id
            self.models.append(
                {
                    "run_id": run_id,
                    "name": kwargs.get("name"),
                    "tags": tags or [],
                    "metadata": metadata or {},
                }
            )

    def root(self, run_id: UUID) -> UUID:
        while (parent := self.parents.get(run_id)) is not None:
            run_id = parent
        return run_id

    def memory_calls(self) -> list[dict[str, Any]]:
        return [m for m in self.models if str(m["name"]).startswith("langchain_om:")]


@pytest.mark.parametrize("buffering", [False, 0.2], ids=["sync", "buffered"])
@pytest.mark.parametrize("door", ["agent", "graph"])
def test_memory_calls_nest_under_the_agent_run(door: str, buffering: float | bool) -> None:
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 600, "buffer_tokens": buffering},
        reflection={"observation_tokens": 500},
    )
    actor = FunctionChatModel(function=actor_reply)
    app = build_agent(memory, actor) if door == "agent" else build_graph(memory, actor)
    tree = RunTree()
    roots: set[UUID] = set()
    for i in range(24):
        cfg = {"configurable": {"thread_id": "tr"}, "callbacks": [tree], "run_name": f"turn-{i}"}
        app.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
        memory.wait_for_background()
    memory.close()
    roots = {run for run, parent in tree.parents.items() if parent is None}
    calls = tree.memory_calls()
    assert {c["name"] for c in calls} >= {"langchain_om:observer", "langchain_om:reflector"}
    assert len(roots) == 24, "one root run per agent invocation, nothing orphaned"
    for call in calls:
        assert tree.parents[call["run_id"]] is not None
        assert tree.root(call["run_id"]) in roots
        meta = call["metadata"]
        assert meta["lc_source"] == call["name"]
        assert meta["thread_id"] == "tr"
        assert meta["langchain_om_cycle_id"]
        assert meta["langchain_om_trigger"] in ("turn-sync", "async-buffer", "manual")
        assert "nostream" in call["tags"]
    triggers = {c["metadata"]["langchain_om_trigger"] for c in calls}
    assert ("async-buffer" in triggers) == bool(buffering)


def _failing_observer(messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
    raise RuntimeError("provider is down")


def test_failed_cycle_logs_a_warning_and_no_message_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="langchain_om")
    failing = ObservationalMemory(
        model=FunctionChatModel(function=_failing_observer),
        observation={"message_tokens": 200, "buffer_tokens": False, "failure_policy": "continue"},
        clock=lambda: FIXED,
        sleep=lambda s: None,
    )
    working = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 200, "buffer_tokens": 0.25},
        reflection={"observation_tokens": 300},
        clock=lambda: FIXED,
    )
    for memory in (failing, working):
        for i in range(12):
            text = f"My code word is {SECRET}, turn {i}. " + "filler words " * 10
            memory.add_messages("t", [HumanMessage(text), AIMessage(f"Noted {SECRET} {i}.")])
            memory.wait_for_background()
        if memory is working:  # its turns observe through buffers; one synchronous cycle too
            memory.observe(thread_id="t")
        memory.close()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any(r.name == "langchain_om.cycles" and "failed" in r.getMessage() for r in warnings)
    assert any(r.name == "langchain_om.retry" for r in warnings) or any(
        "RuntimeError" in r.getMessage() for r in warnings
    )
    infos = [r.getMessage() for r in caplog.records if r.name == "langchain_om.cycles"]
    assert any("observation" in m and "done" in m for m in infos)
    assert any("buffered" in m for m in infos)
    assert caplog.records, "memory logged nothing"
    for record in caplog.records:
        assert SECRET not in record.getMessage(), record.getMessage()
        assert "filler" not in record.getMessage()


def test_exhausted_retries_log_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    class RateLimitError(Exception):
        pass

    def limited(messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
        raise RateLimitError("429 slow down")

    caplog.set_level(logging.INFO, logger="langchain_om")
    memory = ObservationalMemory(
        model=FunctionChatModel(function=limited, model_name="limited"),
        observation={"message_tokens": 200, "buffer_tokens": False},
        sleep=lambda s: None,
    )
    # An explicit observe() reports its failed cycle whatever failure_policy says.
    with pytest.raises(CycleFailedError, match="RateLimitError"):
        memory.observe(thread_id="r", messages=[("user", "hello " * 50)])
    retry = [r for r in caplog.records if r.name == "langchain_om.retry"]
    assert [r.levelno for r in retry].count(logging.INFO) == 3  # the default 3 retries
    assert retry[-1].levelno == logging.WARNING
    assert "after 4 attempt(s)" in retry[-1].getMessage()


def test_engine_methods_accept_langchain_message_forms() -> None:
    memory = ObservationalMemory(
        model=memory_model(), observation={"message_tokens": 10_000}, clock=lambda: FIXED
    )
    snap = memory.add_messages(
        "m",
        [
            ("user", "hello"),
            {"role": "assistant", "content": "hi there"},
            "a plain string is a user message",
        ],
    )
    assert [m.type for m in snap.window] == ["human", "ai", "human"]
    assert [m.text for m in snap.window][:2] == ["hello", "hi there"]
    observed = memory.observe(thread_id="m", messages=[("user", "and one more")])
    assert observed.window == [] and observed.observations
    with pytest.raises(ValueError, match="wrap it in a list"):
        memory.add_messages("m", ("user", "not in a list"))


def test_parse_event_turns_stream_parts_back_into_events() -> None:
    update = ThreadUpdateEvent(
        cycle_id="c", thread_id="t", new_title="Moving", timestamp="2026-11-30T00:00:00+00:00"
    )
    assert parse_event(update.to_part()) == update
    gap = TemporalGapEvent(
        message="<system-reminder>2 days later</system-reminder>",
        gap_text="2 days later",
        gap_ms=172_800_000,
        timestamp="2026-11-30T00:00:00+00:00",
        precedes_message_id="m1",
        thread_id="t",
    )
    part = gap.to_part()
    assert part["type"] == "data-om-temporal-gap"
    assert parse_event(part) == gap
    old = {"type": "data-system-reminder", "data": part["data"]}
    assert parse_event(old) == gap  # the old name is accepted for one release
    with pytest.raises(ValueError, match="Unknown OM event type 'data-om-nope'"):
        parse_event({"type": "data-om-nope", "data": {}})
    with pytest.raises(ValueError, match="Not an OM event part"):
        parse_event({"type": "data-om-status"})


def test_streamed_custom_parts_parse_back() -> None:
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 600, "buffer_tokens": False},
    )
    graph = build_graph(memory, FunctionChatModel(function=actor_reply))
    cfg = {"configurable": {"thread_id": "p"}}
    parsed = []
    for i in range(16):
        for part in graph.stream(
            {"messages": [HumanMessage(user_turn(i))]}, cfg, stream_mode="custom"
        ):
            parsed.append(parse_event(part))
    assert {e.type for e in parsed} >= {"data-om-status", "data-om-observation-end"}


def _graph_seeing(memory: ObservationalMemory, seen: list[list[BaseMessage]], merge: bool) -> Any:
    def model(state: MessagesState) -> dict[str, Any]:
        seen.append(list(state["messages"]))
        return {"messages": [AIMessage("Answer: noted, " + "and more " * 8)]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_edge(START, "model")
    add_observational_memory(builder, memory, merge_system_message=merge)
    return builder.compile(checkpointer=memory.checkpointer, store=memory.store)


@pytest.mark.parametrize("merge", [True, False])
def test_custom_graph_merges_memory_into_the_user_system_message(merge: bool) -> None:
    memory = ObservationalMemory(model=memory_model(), **APP_OPTIONS)
    seen: list[list[BaseMessage]] = []
    graph = _graph_seeing(memory, seen, merge)
    cfg = {"configurable": {"thread_id": "sys"}}
    graph.invoke({"messages": [SystemMessage("You are terse."), HumanMessage(user_turn(1))]}, cfg)
    for i in range(2, 30):
        graph.invoke({"messages": [HumanMessage(user_turn(i))]}, cfg)
    last = seen[-1]
    systems = [m for m in last if m.type == "system"]
    assert str(last[0].text).startswith("You are terse.")
    assert len(systems) == (1 if merge else 2)
    memory_text = "\n".join(str(m.text) for m in systems)
    assert "* " in memory_text, "memory reached the model"
    if merge:
        # Each merge starts from the user's own text: memory is not appended twice.
        assert str(last[0].text).count("You are terse.") == 1
        earlier = next(
            s
            for s in seen
            if len([m for m in s if m.type == "system"]) == 1 and s[0].text != "You are terse."
        )
        assert len(str(last[0].text)) < len(str(earlier[0].text)) * 4
    assert len([m for m in last if m.type == "human"]) < 29, "old turns left the window"


def test_history_adapter_merges_memory_into_a_leading_system_message() -> None:
    memory = ObservationalMemory(
        model=memory_model(), observation={"message_tokens": 300, "buffer_tokens": False}
    )
    memory.observe(thread_id="h", messages=[("user", user_turn(1)), ("ai", "Answer 1")])
    history = ObservationalChatMessageHistory(memory, thread_id="h")
    # The window now starts with the user's system message, and memory holds observations.
    history.add_messages([SystemMessage("You are terse."), HumanMessage("What did I say?")])
    merged = history.messages
    assert [m.type for m in merged].count("system") == 1
    assert str(merged[0].text).startswith("You are terse.") and "* " in str(merged[0].text)
    separate = ObservationalChatMessageHistory(memory, thread_id="h", merge_system_message=False)
    assert [m.type for m in separate.messages].count("system") == 2
