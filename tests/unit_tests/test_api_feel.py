"""How the API feels to a LangChain user: one object to set up, typed arguments, LangChain's
names for sync/async twins, short reprs and readable context text."""

from __future__ import annotations

import inspect
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_om import (
    ObservationalMemory,
    ObservationalMemoryConfig,
    ObservationalMemoryMiddleware,
    ObservationConfig,
    OMConfigError,
    add_observational_memory,
)
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model

TYPED = (
    "model",
    "message_tokens",
    "observation_tokens",
    "buffer_tokens",
    "scope",
    "retrieval",
)
FIXED = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def conversation(n: int, prefix: str = "m") -> list[BaseMessage]:
    """``n`` user/assistant pairs about a garden, long enough to pass a small threshold."""
    out: list[BaseMessage] = []
    for i in range(n):
        out.append(
            HumanMessage(f"Turn {i}: my tomatoes in bed {i} need water " * 4, id=f"{prefix}h{i}")
        )
        out.append(AIMessage(f"Noted for bed {i}: water the tomatoes " * 4, id=f"{prefix}a{i}"))
    return out


# -- typed arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize("target", [ObservationalMemory, ObservationalMemoryMiddleware])
def test_the_common_options_are_typed_keyword_arguments(target: Any) -> None:
    params = inspect.signature(target).parameters
    for name in TYPED:
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert params[name].annotation not in (inspect.Parameter.empty, "Any"), name
    # the rest of the config is still there
    assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def test_typed_arguments_configure_the_same_as_the_nested_form() -> None:
    model = memory_model()
    typed = ObservationalMemory(
        model=model,
        message_tokens=2_000,
        observation_tokens=5_000,
        buffer_tokens=False,
        scope="thread",
        retrieval=True,
    )
    nested = ObservationalMemory(
        model=model,
        scope="thread",
        retrieval=True,
        observation={"message_tokens": 2_000, "buffer_tokens": False},
        reflection={"observation_tokens": 5_000},
    )
    assert typed.config == nested.config
    assert typed.config.observation.message_tokens == 2_000
    assert typed.config.reflection.observation_tokens == 5_000
    assert typed.config.observation.buffer_tokens is False
    assert typed.config.retrieval_enabled
    assert [t.name for t in typed.tools] == [t.name for t in nested.tools] == ["recall"]


def test_typed_arguments_join_the_other_options_of_their_group() -> None:
    memory = ObservationalMemory(
        model=memory_model(),
        message_tokens=("fraction", 0.4),
        buffer_tokens=0.25,
        observation={"threadTitle": True, "block_after": 1.5},
        reflection={"buffer_activation": 0.4},
    )
    observation = memory.config.observation
    assert observation.message_tokens == ("fraction", 0.4)
    assert observation.buffer_tokens == 0.25
    assert observation.thread_title is True and observation.block_after == 1.5
    assert memory.config.reflection.buffer_activation == 0.4


def test_typed_arguments_are_validated_like_the_nested_option() -> None:
    with pytest.raises(OMConfigError) as caught:
        ObservationalMemory(model=memory_model(), message_tokens=-5)
    assert caught.value.option == "observation.message_tokens"


def test_keywords_override_the_options_object_as_before() -> None:
    base = ObservationalMemoryConfig.coerce(
        {"observation": {"message_tokens": 9_000, "buffer_tokens": False}}
    )
    memory = ObservationalMemory(base, model=memory_model(), message_tokens=3_000)
    assert memory.config.observation.message_tokens == 3_000
    assert memory.config.observation.buffer_tokens is False  # the rest of the object stays


@pytest.mark.parametrize(
    ("typed", "group", "spelled"),
    [
        ({"message_tokens": 2_000}, {"observation": {"message_tokens": 3_000}}, "message_tokens"),
        ({"message_tokens": 2_000}, {"observation": {"messageTokens": 3_000}}, "messageTokens"),
        (
            {"message_tokens": 2_000},
            {"observation": ObservationConfig(message_tokens=3_000)},
            "message_tokens",
        ),
        ({"buffer_tokens": False}, {"observation": {"bufferTokens": 0.5}}, "bufferTokens"),
        (
            {"observation_tokens": 9_000},
            {"reflection": {"observation_tokens": 8_000}},
            "observation_tokens",
        ),
    ],
)
def test_a_typed_argument_and_the_same_nested_option_is_an_error(
    typed: dict[str, Any], group: dict[str, Any], spelled: str
) -> None:
    [(name, _)] = typed.items()
    [(group_name, _)] = group.items()
    with pytest.raises(OMConfigError) as caught:
        ObservationalMemory(model=memory_model(), **typed, **group)
    message = str(caught.value)
    assert caught.value.option == f"{group_name}.{name}"
    assert f"{name}=" in message and f"{group_name}=" in message and repr(spelled) in message


def test_storage_constructors_take_the_typed_arguments(tmp_path: Path) -> None:
    with ObservationalMemory.from_sqlite(
        str(tmp_path / "m.db"), model=memory_model(), message_tokens=1_500, buffer_tokens=False
    ) as memory:
        assert memory.config.observation.message_tokens == 1_500
        assert memory.config.observation.buffer_tokens is False


# -- one object for a create_agent agent -------------------------------------------------------


def _actor() -> FunctionChatModel:
    def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
        return f"Answer {info.index}: noted, water the tomatoes " * 3

    return FunctionChatModel(function=reply)


def test_the_middleware_alone_is_the_whole_setup() -> None:
    middleware = ObservationalMemoryMiddleware(
        model=memory_model(),
        message_tokens=400,
        buffer_tokens=False,
        clock=lambda: FIXED,
        retrieval=True,
    )
    memory = middleware.memory
    assert memory.config.observation.message_tokens == 400
    assert [t.name for t in middleware.tools] == ["recall"]
    actor = _actor()
    assert middleware.checkpointer is memory.checkpointer
    agent: Any = create_agent(
        actor, [], middleware=[middleware], checkpointer=middleware.checkpointer
    )
    config: RunnableConfig = {"configurable": {"thread_id": "garden"}}
    for i in range(6):
        agent.invoke({"messages": [HumanMessage(f"Turn {i}: my tomatoes need water " * 5)]}, config)
    record = memory.read_state(agent.get_state(config).values)
    assert record["groups"], "the middleware's memory observed"
    assert memory.archived_messages("garden"), "the archive is in the middleware's memory store"
    sent = actor.calls[-1].messages
    assert isinstance(sent[0], SystemMessage) and "<observations>" in sent[0].text
    snap = memory.status(thread_id="garden")  # memory reads the agent's thread
    assert snap.source == "checkpoint" and snap.record["groups"] == record["groups"]


def test_any_checkpointer_keeps_the_middlewares_memory() -> None:
    middleware = ObservationalMemoryMiddleware(
        model=memory_model(), message_tokens=400, buffer_tokens=False, clock=lambda: FIXED
    )
    agent: Any = create_agent(_actor(), [], middleware=[middleware], checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "garden"}}
    for i in range(6):
        agent.invoke({"messages": [HumanMessage(f"Turn {i}: my tomatoes need water " * 5)]}, config)
    assert middleware.memory.read_state(agent.get_state(config).values)["groups"]


def test_the_middleware_on_a_memory_still_works_and_refuses_options_too() -> None:
    memory = ObservationalMemory(model=memory_model(), buffer_tokens=False)
    middleware = ObservationalMemoryMiddleware(memory, name="om")
    assert middleware.memory is memory and middleware.name == "om"
    with pytest.raises(OMConfigError, match="message_tokens") as caught:
        ObservationalMemoryMiddleware(memory, message_tokens=500)
    assert caught.value.option == "message_tokens"
    with pytest.raises(OMConfigError, match="takes an ObservationalMemory"):
        ObservationalMemoryMiddleware({"model": "x"})  # type: ignore[arg-type]


def test_the_middleware_built_from_options_keeps_the_idle_hook_rule() -> None:
    idle = ObservationalMemoryMiddleware(model=memory_model(), observation={"buffer_on_idle": True})
    plain = ObservationalMemoryMiddleware(model=memory_model(), buffer_tokens=False)
    assert hasattr(type(idle), "after_agent") and isinstance(idle, ObservationalMemoryMiddleware)
    assert "after_agent" not in type(plain).__dict__
    assert idle.memory.config.observation.buffer_on_idle


# -- naming: await_for_background -------------------------------------------------------------


async def test_await_for_background_waits_and_the_old_name_warns() -> None:
    memory = ObservationalMemory(
        model=memory_model(), message_tokens=1_000, buffer_tokens=0.2, clock=lambda: FIXED
    )
    await memory.aadd_messages("t", conversation(3))
    await memory.await_for_background()
    assert not memory.background_running()
    with pytest.warns(DeprecationWarning, match="await_for_background"):
        await memory.await_background()
    await memory.aclose()


# -- afrom_sqlite ------------------------------------------------------------------------------


async def test_afrom_sqlite_builds_off_the_loop_and_the_file_lasts(tmp_path: Path) -> None:
    path = str(tmp_path / "memory.db")
    built_on: list[threading.Thread] = []

    def clock() -> datetime:
        built_on.append(threading.current_thread())
        return FIXED

    options: dict[str, Any] = {"model": memory_model(), "message_tokens": 400}
    async with await ObservationalMemory.afrom_sqlite(
        path, clock=clock, buffer_tokens=False, **options
    ) as memory:
        assert built_on and built_on[0] is not threading.current_thread()  # a worker thread
        snap = await memory.aadd_messages("garden", conversation(8))
        assert snap.record["groups"]
    with ObservationalMemory.from_sqlite(path, buffer_tokens=False, **options) as again:
        assert again.status(thread_id="garden").record["groups"] == snap.record["groups"]


async def test_afrom_sqlite_closes_the_file_when_the_options_are_refused(tmp_path: Path) -> None:
    with pytest.raises(OMConfigError):
        await ObservationalMemory.afrom_sqlite(str(tmp_path / "m.db"), message_tokens=-1)


# -- ThreadSnapshot's repr ---------------------------------------------------------------------


def test_a_snapshot_prints_one_short_line_without_the_threads_text() -> None:
    memory = ObservationalMemory(
        model=memory_model(), message_tokens=400, buffer_tokens=False, clock=lambda: FIXED
    )
    snap = memory.add_messages("garden", conversation(8))
    assert snap.record["groups"] and snap.window
    text = repr(snap)
    assert len(text) < 300
    assert str(snap) == text
    assert "tomatoes" not in text and "water" not in text  # no user text, no observations
    lines = sum(
        1
        for line in snap.observations.splitlines()
        if line.strip() and not line.startswith("Date:")
    )
    assert text.startswith("ThreadSnapshot(thread_id='garden', source='store'")
    assert f"messages={len(snap.window)} ({snap.status.messages.tokens}/" in text
    assert f"observations={lines} lines in {len(snap.record['groups'])} groups" in text
    assert f"generation={snap.status.generation_count}" in text


# -- the context's text ------------------------------------------------------------------------


def test_context_text_separates_blocks_with_a_blank_line() -> None:
    memory = ObservationalMemory(
        model=memory_model(), message_tokens=400, buffer_tokens=False, clock=lambda: FIXED
    )
    memory.add_messages("garden", conversation(8))
    snap = memory.status(thread_id="garden")
    [system, *_] = memory.get_context(thread_id="garden")
    assert system.text == snap.context.text
    assert "</observations>\n\n<current-task>" in system.text
    assert "</observations><" not in system.text


def test_the_agent_model_reads_its_prompt_then_memory_apart() -> None:
    middleware = ObservationalMemoryMiddleware(
        model=memory_model(), message_tokens=400, buffer_tokens=False, clock=lambda: FIXED
    )
    actor = _actor()
    agent: Any = create_agent(
        actor,
        [],
        system_prompt="You help gardeners.",
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": "garden"}}
    for i in range(6):
        agent.invoke({"messages": [HumanMessage(f"Turn {i}: my tomatoes need water " * 5)]}, config)
    system = actor.calls[-1].messages[0]
    memory = middleware.memory
    context = memory.render(memory.read_state(agent.get_state(config).values))
    assert system.text == "You help gardeners.\n\n" + context.text
    assert "</observations>\n\n<current-task>" in system.text


def test_memory_merged_into_a_graphs_system_message_reads_apart() -> None:
    memory = ObservationalMemory(
        model=memory_model(), message_tokens=400, buffer_tokens=False, clock=lambda: FIXED
    )
    actor = _actor()
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda s: {"messages": [actor.invoke(s["messages"])]})
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    graph: Any = add_observational_memory(builder, memory, before="model").compile(
        checkpointer=memory.checkpointer, store=memory.store
    )
    config: RunnableConfig = {"configurable": {"thread_id": "garden"}}
    first = [SystemMessage("You help gardeners.", id="sys")]
    for i in range(6):
        turn = [HumanMessage(f"Turn {i}: my tomatoes need water " * 5)]
        graph.invoke({"messages": [*first, *turn] if i == 0 else turn}, config)
    system = actor.calls[-1].messages[0]
    context = memory.render(memory.read_state(graph.get_state(config).values))
    assert system.id == "sys" and context.blocks
    assert system.text == "You help gardeners.\n\n" + context.text
