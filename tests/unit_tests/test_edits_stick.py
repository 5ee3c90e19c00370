"""An edit of the memory sticks: buffered work computed before it never undoes it.

The agent deletes or corrects an observation line with the ``memory`` tool (or the application
updates the working memory) while background work computed from the log before the edit is
stored or still running: a buffered reflection that holds the old line, a buffered chunk that
carries the old working memory. That work is dropped or has the edit re-applied when it would
activate, so a deleted line never comes back, a correction is never undone, and the
application's working-memory update is never overwritten by a stale chunk.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware, OMConfigError
from langchain_om._core.line_edits import (
    LOG_EDIT_KEY,
    WORKING_MEMORY_EDIT_KEY,
    edit_line,
    edit_marks,
    find_lines,
    without_forgotten,
)
from langchain_om._core.record import make_group, new_record
from langchain_om._plans.storage import chunk_put_op, state_put_op
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.unit_tests.test_working_memory import observer_keeping_working_memory

SSN = "123-45-6789"
CORRECTED = "User said their SSN must not be kept"

Action = Literal["delete", "correct"]


def _call(index: int, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "memory", "args": args, "id": f"c{index}"}])


def _actor(action: Action) -> FunctionChatModel:
    """Finds the SSN line when asked to forget it, then deletes (or corrects) every match."""

    def reply(messages: list[BaseMessage], info: RecordedCall) -> AIMessage | str:
        last = messages[-1]
        if isinstance(last, HumanMessage) and "forget my SSN" in last.text:
            return _call(info.index, action="find", query=SSN)
        if isinstance(last, ToolMessage) and last.text.startswith("{"):
            lines = json.loads(last.text)["lines"]
            if not lines:
                return "Nothing to forget."
            if action == "delete":
                return _call(info.index, action="delete", line_id=lines[0]["id"])
            return _call(info.index, action="correct", line_id=lines[0]["id"], text=CORRECTED)
        if isinstance(last, ToolMessage):
            return f"Done: {last.text}"
        return f"Answer {info.index}: " + "noted " * 10

    return FunctionChatModel(function=reply)


class _Run:
    """An agent with the memory tool on buffered memory, turn by turn."""

    def __init__(self, action: Action, background: Literal["auto", "manual"]) -> None:
        self.memory = ObservationalMemory(
            model=memory_model(keep=0.5),
            observation={"message_tokens": 300, "buffer_tokens": 100},
            reflection={"observation_tokens": 400, "buffer_activation": 0.5},
            memory_tool=True,
            background=background,
            sleep=lambda s: None,
        )
        self.manual = background == "manual"
        self.actor = _actor(action)
        self.agent = create_agent(
            self.actor,
            self.memory.tools,
            middleware=[ObservationalMemoryMiddleware(self.memory)],
            checkpointer=self.memory.checkpointer,
            store=self.memory.store,
        )
        self.config: RunnableConfig = {"configurable": {"thread_id": "t"}}

    def turn(self, text: str, *, background: bool = True) -> dict[str, Any]:
        self.agent.invoke({"messages": [HumanMessage(text)]}, self.config)
        if background:
            self.settle()
        return dict(self.memory.read_state(self.agent.get_state(self.config).values))

    def settle(self) -> None:
        if self.manual:
            self.memory.run_background()
        else:
            self.memory.wait_for_background(timeout=30)

    def stored_reflection(self) -> Any:
        item = self.memory.store.get(("langchain_om", "reflection", "t"), "current")
        return item.value if item is not None else None

    def reflection_pending(self) -> bool:
        return "ref:t" in self.memory._background.pending

    def close(self) -> None:
        self.memory.close()


def _log(record: dict[str, Any]) -> str:
    return "\n".join(g["text"] for g in record["groups"])


def _until_reflection_holds_the_line(run: _Run, *, in_flight: bool) -> dict[str, Any]:
    """Turns until a background reflection over the SSN line is stored (or still queued)."""
    record = run.turn(f"My SSN is {SSN}. " + "Detail. " * 30)
    for i in range(40):
        record = run.turn(f"Turn {i}: " + "more words here " * 15, background=not in_flight)
        if in_flight and run.reflection_pending() and SSN in _log(record):
            return record
        if in_flight:
            run.settle()
        reflection = run.stored_reflection()
        if not in_flight and reflection and SSN in str(reflection.get("text")):
            assert SSN in _log(record)
            return record
    raise AssertionError("no background reflection over the SSN line was buffered")


@pytest.mark.parametrize("action", ["delete", "correct"])
@pytest.mark.parametrize(
    ("background", "in_flight"),
    [("manual", False), ("auto", False), ("manual", True)],  # a thread's job cannot be held
    ids=["manual-stored", "auto-stored", "manual-in-flight"],
)
def test_a_deleted_or_corrected_line_never_comes_back(
    action: Action, background: Literal["auto", "manual"], in_flight: bool
) -> None:
    run = _Run(action, background)
    try:
        _until_reflection_holds_the_line(run, in_flight=in_flight)
        record = run.turn("Please forget my SSN.", background=False)
        assert SSN not in _log(record), "the tool edited the log"
        if action == "correct":
            assert CORRECTED in _log(record)
        run.settle()  # the reflection buffered (or still running) from the old log lands now
        sent_before = len(run.actor.calls)
        events: list[Any] = []
        run.memory.on_debug_event = events.append
        generation = record["generation"]
        for i in range(12):
            record = run.turn(f"Later {i}: " + "talk words " * 15)
            assert SSN not in _log(record), f"the old line came back at later turn {i}"
            if action == "correct":
                assert CORRECTED in _log(record) or record["generation"] > generation
        assert record["generation"] > generation, "a reflection ran after the edit"
        shown = [m for c in run.actor.calls[sent_before:] for m in c.messages if m.type == "system"]
        assert shown and not any(SSN in str(m.content) for m in shown), (
            "the memory context showed the forgotten line again"
        )
        applied = [e for e in events if e.type in ("data-om-activation", "data-om-observation-end")]
        assert applied and not any(SSN in str(e.to_part()) for e in applied)
    finally:
        run.close()


def test_a_forgotten_line_is_kept_out_of_new_observations() -> None:
    record = new_record(thread_id="t", resource_id=None, now="")
    text = "Date: Nov 30, 2026\n* 🔴 (09:00) User's SSN is 123-45-6789\n* 🟡 (09:01) Likes tea"
    record["groups"] = [make_group(text=text, tokens=10, message_ids=["m"], observed_at="")]
    line = find_lines(record, SSN)[0]["id"]
    edited = edit_line(record, line, None, len)
    again = "Date: Dec 1, 2026\n* 🔴 (14:30) User's SSN is  123-45-6789.\n* 🟡 (14:31) Likes cake"
    assert without_forgotten(edited, again) == "Date: Dec 1, 2026\n* 🟡 (14:31) Likes cake"
    alone = "Date: Dec 1, 2026\n* 🔴 (14:30) user's ssn is 123-45-6789"
    assert without_forgotten(edited, alone) == ""
    assert without_forgotten(record, again) == again  # nothing forgotten: unchanged
    # correcting another line back to the forgotten text re-asserts it
    tea = find_lines(edited, "tea")[0]["id"]
    back = edit_line(edited, tea, "* 🔴 (09:00) User's SSN is 123-45-6789", len)
    assert without_forgotten(back, again) == again


@pytest.mark.parametrize("front_door", ["standalone", "record"])
def test_a_working_memory_update_is_not_undone_by_a_chunk_buffered_before_it(
    front_door: str,
) -> None:
    memory = ObservationalMemory(
        model=observer_keeping_working_memory(),
        observation={"message_tokens": 400, "buffer_tokens": 100, "manage_working_memory": True},
        reflection={"observation_tokens": 4000},
        background="manual",
    )
    try:
        window: list[BaseMessage] = []
        record: Any = None
        for i in range(3):
            said = ("I live in Lisbon. " if i == 0 else "") + f"Turn {i} " + "w " * 40
            window = [*window, HumanMessage(said, id=f"h{i}")]
            window = [*window, AIMessage("ok", id=f"a{i}")]
            out = memory.step(thread_id="t", window=window, record=record)
            record, window = out.record, out.window
        assert "obs:t" in memory._background.pending, "a chunk is being buffered"
        memory.run_background()  # the chunk carries "Location: Lisbon"
        update = "# About the user\n- Location: Porto\n- Role: reviewer"
        if front_door == "standalone":  # the application's own call on a stored thread
            memory.store.batch([state_put_op("t", record, window)])  # a stored thread
            memory.update_working_memory(update, thread_id="t")
            record = memory.status(thread_id="t").record
        else:
            record = memory.update_working_memory(update, record=record)
        for i in range(3, 9):  # turn 3 crosses the threshold: the stored chunk activates
            words = "w " * (300 if i == 3 else 40)
            window = [*window, HumanMessage(f"Turn {i}: " + words, id=f"h{i}")]
            window = [*window, AIMessage("ok", id=f"a{i}")]
            out = memory.step(thread_id="t", window=window, record=record)
            record, window = out.record, out.window
            memory.run_background()
            kept = memory.get_working_memory(record=record)
            assert "Lisbon" not in kept, f"turn {i}: a chunk from before the update undid it"
        assert record["observed_message_count"] > 0, "the chunk was activated or re-observed"
        assert "- Location: Porto" in memory.get_working_memory(record=record)
    finally:
        memory.close()


def test_in_resource_scope_the_memory_tool_is_refused() -> None:
    with pytest.raises(OMConfigError, match="memory_tool"):
        ObservationalMemory(model=memory_model(), scope="resource", memory_tool=True)


def test_deleting_a_line_forgets_its_identical_copies_and_keeps_other_ids() -> None:
    record = new_record(thread_id="t", resource_id=None, now="")
    first = "Date: Nov 30, 2026\n* 🔴 (09:00) User's PIN is 4711\n* 🟡 (09:01) Likes tea"
    again = "Date: Dec 1, 2026\n* 🔴 (11:00) User's PIN is 4711\n* 🟡 (11:05) Likes cake"
    record["groups"] = [
        make_group(text=first, tokens=10, message_ids=["m1"], observed_at="", group_id="g1"),
        make_group(text=again, tokens=10, message_ids=["m2"], observed_at="", group_id="g2"),
    ]
    cake = find_lines(record, "cake")[0]["id"]
    target = find_lines(record, "4711")[-1]["id"]  # the older copy
    edited = edit_line(record, target, None, len)
    assert find_lines(edited, "4711") == []
    assert find_lines(edited, "cake")[0]["id"] == cake  # other lines keep their ids
    assert edited["observation_tokens"] == sum(g["tokens"] for g in edited["groups"])


def test_a_chunk_that_observed_a_forgotten_line_again_activates_without_it() -> None:
    """A re-sent message observed after the delete: its chunk lands, the line does not."""
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 300, "buffer_tokens": 100},
        reflection={"observation_tokens": 4000},
        background="manual",
    )
    record = memory.new_record(thread_id="t")
    old = "Date: Nov 30, 2026\n* 🔴 (09:00) User's SSN is 123-45-6789\n* 🟡 (09:01) Likes tea"
    record["groups"] = [make_group(text=old, tokens=20, message_ids=["m0"], observed_at="")]
    record = edit_line(record, find_lines(record, SSN)[0]["id"], None, len)
    window: list[BaseMessage] = [
        HumanMessage("My SSN is 123-45-6789. " + "w " * 150, id="h1"),
        AIMessage("ok", id="a1"),
        HumanMessage("And more. " + "w " * 150, id="h2"),
    ]
    again = "Date: Dec 1, 2026\n* 🔴 (10:00) User's SSN is 123-45-6789\n* 🟡 (10:01) Assistant: ok"
    chunk = {
        "id": "c1",
        "text": again,
        "tokens": 30,
        "message_ids": ["h1", "a1"],
        "message_tokens": memory.counter.count_messages(window[:2]),
        "created_at": "",
        "hints": {},
        "extracted": {},
        **edit_marks(record, LOG_EDIT_KEY, WORKING_MEMORY_EDIT_KEY),
    }
    memory.store.batch([chunk_put_op("t", chunk)])
    events: list[Any] = []
    memory.on_debug_event = events.append
    out = memory.step(thread_id="t", window=window, record=record)
    (activation,) = [e for e in events if e.type == "data-om-activation"]
    assert "Assistant: ok" in activation.observations and SSN not in activation.observations
    assert SSN not in _log(dict(out.record)) and "Assistant: ok" in _log(dict(out.record))
    memory.close()
