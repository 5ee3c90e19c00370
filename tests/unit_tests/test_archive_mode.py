"""Archive mode: the oldest groups retire word for word, the agent sees a bounded catalog, and
``recall(mode="observations")`` reads any retired group back, on every door and every branch.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import ObservationalChatMessageHistory, ObservationalMemory
from langchain_om._core.archive import (
    CATALOG_OPEN,
    catalog_rows,
    catalog_text,
    fit_catalog,
    group_label,
    plan_archive,
)
from langchain_om._core.group_keys import _groups
from langchain_om._core.tokens import TokenCounter
from langchain_om.errors import OMConfigError
from langchain_om.events import ArchiveEvent, OMEvent
from langchain_om.testing import FunctionChatModel, HashEmbeddings, RecordedCall, memory_model
from langchain_om.tools import create_recall_tool
from tests.helpers import FIXED, build_agent, build_graph

ARCHIVE = {"after_tokens": 500, "keep_tokens": 150, "max_catalog_tokens": 300}
COUNT = TokenCounter().count_text


def _group(i: int, tokens: int = 10, summary: str | None = None) -> dict[str, Any]:
    group: dict[str, Any] = {
        "id": f"g{i}",
        "kind": "observation",
        "text": f"Date: Nov {i + 1}, 2026\n* 🔴 (09:00) fact {i}",
        "tokens": tokens,
        "range": [f"m{i}a", f"m{i}b"],
        "observed_at": f"2026-11-{i + 1:02d}T09:00:00+00:00",
        "sources": [],
    }
    if summary is not None:
        group["summary"] = summary
    return group


# -- the pure part ------------------------------------------------------------------------------


def test_the_oldest_whole_groups_retire_and_a_live_tail_stays() -> None:
    groups = [_group(i) for i in range(8)]
    plan = plan_archive(groups, after_tokens=50, keep_tokens=25)  # type: ignore[arg-type]
    assert plan is not None
    assert [g["id"] for g in plan.retired] == ["g0", "g1", "g2", "g3", "g4"]
    assert [g["id"] for g in plan.retained] == ["g5", "g6", "g7"]  # 30 >= keep_tokens
    assert plan_archive(groups, after_tokens=81, keep_tokens=25) is None  # type: ignore[arg-type]
    # a single newest group holding everything cannot retire: no progress, nothing moves
    big = [_group(0, tokens=5), _group(1, tokens=200)]
    assert plan_archive(big, after_tokens=100, keep_tokens=300) is None  # type: ignore[arg-type]
    moved = plan_archive(big, after_tokens=100, keep_tokens=50)  # type: ignore[arg-type]
    assert moved is not None and [g["id"] for g in moved.retired] == ["g0"]


def test_catalog_labels_fall_back_to_the_date_and_range() -> None:
    assert group_label(_group(2, summary="  Trip  to Lisbon ")) == "Trip to Lisbon"
    assert group_label(_group(2)) == "Conversation observed on 2026-11-03 (m2a:m2b)"
    assert len(group_label(_group(2, summary="word " * 100))) <= 160
    rows = catalog_rows("oma_1", 3, [_group(0), _group(1)])  # type: ignore[list-item]
    assert [r["group_id"] for r in rows] == ["g1", "g0"]  # newest first
    assert rows[0]["from"] == "Nov 2, 2026" and rows[0]["range"] == "m1a:m1b"
    text = catalog_text(rows, None)
    assert text.startswith(CATALOG_OPEN) and 'group-id="g1"' in text and "hidden" not in text


def test_a_label_cannot_forge_the_catalog_markup() -> None:
    rows = catalog_rows("oma_1", 1, [_group(0, summary='</archived-observations> "x" & <b>')])  # type: ignore[list-item]
    text = catalog_text(rows, None)
    assert text.count("</archived-observations>") == 1
    assert "&lt;/archived-observations&gt; &quot;x&quot; &amp; &lt;b&gt;" in text


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=30),
    budget=st.integers(min_value=1, max_value=700),
    older=st.booleans(),
    words=st.integers(min_value=1, max_value=40),
)
def test_the_catalog_never_exceeds_its_budget(n: int, budget: int, older: bool, words: int) -> None:
    rows = catalog_rows(
        "oma_x",
        2,
        [_group(i, summary="topic " * words) for i in range(n)],  # type: ignore[misc]
    )
    shown, marker, tokens = fit_catalog(
        rows, older="oma_y/g9" if older else None, max_tokens=budget, count=COUNT
    )
    text = catalog_text(shown, marker)
    assert tokens == (COUNT(text) if text else 0) and tokens <= budget
    assert [r["group_id"] for r in shown] == [r["group_id"] for r in rows[: len(shown)]]
    hidden = len(shown) < n or older
    if shown or marker:
        assert (marker is not None) == hidden  # whatever is not shown is marked
    if len(shown) < n and marker is not None:
        assert marker.endswith("/" + rows[len(shown)]["group_id"])


# -- the engine, standalone ----------------------------------------------------------------------


def _turn(i: int, tag: str = "t") -> list[BaseMessage]:
    return [
        HumanMessage(f"{tag} turn {i}: I like topic {i} " + "words " * 40, id=f"{tag}h{i}"),
        AIMessage(f"{tag} noted {i} " + "ok " * 8, id=f"{tag}a{i}"),
    ]


def _memory(**options: Any) -> tuple[ObservationalMemory, list[OMEvent]]:
    events: list[OMEvent] = []
    settings_: dict[str, Any] = {
        "model": memory_model(),
        "observation": {"message_tokens": 300, "buffer_tokens": False, "archive": ARCHIVE},
        "retrieval": True,
        "clock": lambda: FIXED,
        "sleep": lambda s: None,
        "on_debug_event": events.append,
    }
    settings_.update(options)
    return ObservationalMemory(**settings_), events


def _reflector_calls(memory: ObservationalMemory) -> int:
    model = memory.config.model
    assert isinstance(model, FunctionChatModel)
    return sum("## Observations to Condense" in c.messages[-1].text for c in model.calls)


def test_archive_lifecycle_retires_groups_word_for_word_and_never_reflects() -> None:
    memory, events = _memory()
    recall = create_recall_tool(memory, token_budget=4000)
    cfg: RunnableConfig = {"configurable": {"thread_id": "t", "resource_id": "u"}}
    seen: dict[str, str] = {}  # every group ever live: id -> text
    sent: list[str] = []
    for i in range(60):
        batch = _turn(i)
        sent += [m.id or "" for m in batch]
        snap = memory.add_messages("t", batch, resource_id="u")
        seen.update({g["id"]: g["text"] for g in snap.record["groups"]})
        assert snap.record["observation_tokens"] < ARCHIVE["after_tokens"] + 400
    record = snap.record
    archives = [e for e in events if isinstance(e, ArchiveEvent)]
    assert len(archives) >= 4 and _reflector_calls(memory) == 0
    assert record["archive"]["count"] == len(archives) == record["generation"]
    # nothing is lost: each message is archived or in the window, once, in order
    ids = [m.id for m in memory.archived_messages("t")] + [m.id for m in snap.window]
    assert ids == sent
    # the catalog the agent sees stays within its budget and names retired groups
    context = memory.render(record)
    catalog = next(b for b in context.blocks if b.startswith(CATALOG_OPEN))
    assert COUNT(catalog) <= ARCHIVE["max_catalog_tokens"]
    assert context.blocks.index(catalog) < next(
        i for i, b in enumerate(context.blocks) if b.startswith("<observations>")
    )
    assert "recall" in context.blocks[0] and 'mode="observations"' in context.blocks[0]
    # paging from the newest entry to the oldest lists every archived group once
    listed: list[tuple[str, str]] = []
    cursor: str | None = None
    while True:
        args: dict[str, Any] = {"mode": "observations", "limit": 3}
        if cursor:
            args["cursor"] = cursor
        page = json.loads(recall.invoke(args, cfg))
        listed += [(a["archive_id"], g["group_id"]) for a in page["archives"] for g in a["groups"]]
        cursor = page.get("next_cursor")
        if cursor is None:
            break
    assert len(listed) == len(set(listed)) == sum(e.groups_archived for e in archives)
    live = {g["id"] for g in record["groups"]}
    assert {g for _, g in listed}.isdisjoint(live)
    # each retired group reads back exactly as it was live
    for archive_id, group_id in listed:
        read = json.loads(
            recall.invoke(
                {"mode": "observations", "archive_id": archive_id, "group_id": group_id}, cfg
            )
        )
        assert read["observations"] == seen[group_id] and not read["truncated"]
        assert read["source"]["cursor"] is not None


def test_a_long_group_reads_back_in_chunks_with_char_offset() -> None:
    memory, _ = _memory()
    for i in range(30):
        memory.add_messages("t", _turn(i), resource_id="u")
    small = create_recall_tool(memory, token_budget=300)
    cfg: RunnableConfig = {"configurable": {"thread_id": "t", "resource_id": "u"}}
    first = json.loads(small.invoke({"mode": "observations"}, cfg))
    archive_id, group_id = first["archive_id"], first["group_id"]
    whole = json.loads(
        create_recall_tool(memory).invoke(
            {"mode": "observations", "archive_id": archive_id, "group_id": group_id}, cfg
        )
    )["observations"]
    pieces, offset = [], 0
    for _ in range(50):
        args = {"mode": "observations", "archive_id": archive_id, "group_id": group_id}
        part = json.loads(small.invoke({**args, "char_offset": offset}, cfg))
        pieces.append(part["observations"])
        if not part["truncated"]:
            break
        assert part["next_char_offset"] > offset
        offset = part["next_char_offset"]
    assert len(pieces) > 1 and "".join(pieces) == whole


def test_observations_mode_filters_and_explains_its_errors() -> None:
    memory, _ = _memory()
    for i in range(40):
        memory.add_messages("t", _turn(i), resource_id="u")
    recall = create_recall_tool(memory)
    cfg: RunnableConfig = {"configurable": {"thread_id": "t", "resource_id": "u"}}

    def call(**args: Any) -> dict[str, Any]:
        return dict(json.loads(recall.invoke({"mode": "observations", **args}, cfg)))

    found = call(text="topic 3 words")
    assert found["count"] == 1 and "topic 3 " in found["observations"]
    assert call(text="no such words at all")["count"] == 0
    assert call(before="2020-01-01")["count"] == 0 and call(after="2020-01-01")["count"] >= 1
    assert "archive_id" in call(group_id="g")["error"]
    assert "not in this thread" in call(archive_id="oma_nope")["error"]
    assert "semantic search" in call(query="topic")["error"]
    assert "ISO dates" in call(before="soon")["error"]
    off, _ = _memory(observation={"message_tokens": 300, "buffer_tokens": False})
    off.add_messages("t", _turn(0), resource_id="u")
    result = json.loads(create_recall_tool(off).invoke({"mode": "observations"}, cfg))
    assert "archive mode is off" in result["error"]


def test_archived_lines_keep_their_receipts() -> None:
    memory, _ = _memory()
    for i in range(40):
        memory.add_messages("t", _turn(i), resource_id="u")
    line = "User said: t turn 2: I like topic 2"
    receipt = memory.receipt("t", line)
    assert receipt["archive_id"].startswith("oma_")
    assert "th2" in receipt["message_ids"]  # the message the line is about
    assert receipt["message_ids"] == sorted(receipt["message_ids"], key=_order)


def _order(message_id: str) -> tuple[int, int]:
    return int(message_id[2:]), message_id[1] == "a"


def test_reflect_in_archive_mode_retires_now() -> None:
    memory, events = _memory(
        observation={
            "message_tokens": 300,
            "buffer_tokens": False,
            "archive": {**ARCHIVE, "after_tokens": 100_000},
        }
    )
    for i in range(20):
        memory.add_messages("t", _turn(i), resource_id="u")
    before = memory.status(thread_id="t").record
    assert "archive" not in before and len(before["groups"]) > 2
    after = memory.reflect(thread_id="t").record
    assert after["archive"]["count"] == 1 and len(after["groups"]) < len(before["groups"])
    assert _reflector_calls(memory) == 0 and any(isinstance(e, ArchiveEvent) for e in events)
    status = memory.status(thread_id="t").status
    assert status.archive is not None and status.archive.archives == 1
    assert status.archive.catalog_tokens == after["archive"]["catalog_tokens"] > 0


def test_the_history_adapter_shows_the_catalog() -> None:
    memory, _ = _memory()
    history = ObservationalChatMessageHistory(memory, thread_id="h", resource_id="u")
    for i in range(40):
        history.add_messages(_turn(i, "h"))
    system = history.messages[0]
    assert isinstance(system, SystemMessage) and CATALOG_OPEN in system.text


def test_archive_mode_options_and_refusals() -> None:
    memory, _ = _memory(
        observation={"archive": {"afterTokens": 900, "keepTokens": 100, "maxCatalogTokens": 50}}
    )
    archive = memory.config.observation.archive
    assert archive is not None and (archive.after_tokens, archive.max_catalog_tokens) == (900, 50)
    with pytest.raises(OMConfigError, match="replaces reflection") as caught:
        ObservationalMemory(
            model=memory_model(),
            observation={"archive": True},
            reflection={"observation_tokens": 9_000},
        )
    assert caught.value.option == "observation.archive"
    with pytest.raises(OMConfigError, match="resource scope"):
        ObservationalMemory(
            model=memory_model(),
            scope="resource",
            observation={"archive": True, "buffer_tokens": False},
        )
    with pytest.raises(OMConfigError, match="below after_tokens"):
        ObservationalMemory(model=memory_model(), observation={"archive": {"keep_tokens": 50_000}})


# -- agents and graphs: the catalog in the model's context, recall from state, forks --------------


def _actor() -> FunctionChatModel:
    def reply(messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
        last = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
        return AIMessage(f"noted: {last.text[:10]} " + "ok " * 8, id=f"{last.id}-r")

    return FunctionChatModel(function=reply)


@pytest.mark.parametrize("door", ["agent", "graph"])
def test_agents_and_graphs_see_the_catalog_and_recall_archived_groups(door: str) -> None:
    memory, _ = _memory()
    actor = _actor()
    app = build_agent(memory, actor) if door == "agent" else build_graph(memory, actor)
    cfg: RunnableConfig = {"configurable": {"thread_id": door, "resource_id": "u"}}
    for i in range(40):
        app.invoke({"messages": [_turn(i, door)[0]]}, cfg)
    system = actor.calls[-1].messages[0]
    assert isinstance(system, SystemMessage) and CATALOG_OPEN in system.text
    state = app.get_state(cfg).values
    assert state["om_record"]["archive"]["count"] >= 2
    recall = create_recall_tool(memory)
    listed = json.loads(recall.invoke({"mode": "observations", "state": state}, cfg))
    assert listed["count"] >= 1 and listed["observations"].startswith("Date:")
    done = asyncio.run(recall.ainvoke({"mode": "observations", "state": state}, cfg))
    assert json.loads(done) == listed


def _archived_texts(
    memory: ObservationalMemory, cfg: RunnableConfig, state: dict[str, Any]
) -> list[str]:
    """The text of every archived group the branch of ``state`` can read."""
    recall = create_recall_tool(memory)
    texts: list[str] = []
    cursor = None
    while True:
        args: dict[str, Any] = {"mode": "observations", "limit": 20, "state": state}
        if cursor:
            args["cursor"] = cursor
        page = json.loads(recall.invoke(args, cfg))
        for archive in page.get("archives", []):
            for group in archive["groups"]:
                read = {
                    "mode": "observations",
                    "archive_id": archive["archive_id"],
                    "group_id": group["group_id"],
                    "state": state,
                }
                texts.append(json.loads(recall.invoke(read, cfg))["observations"])
        cursor = page.get("next_cursor")
        if not cursor:
            return texts


def test_a_fork_reads_only_its_own_archive() -> None:
    memory, _ = _memory()
    app = build_graph(memory, _actor())
    cfg: RunnableConfig = {"configurable": {"thread_id": "f", "resource_id": "u"}}
    for i in range(20):
        app.invoke({"messages": [_turn(i, "o")[0]]}, cfg)
    fork_point = app.get_state(cfg).config
    for i in range(20, 45):
        app.invoke({"messages": [_turn(i, "o")[0]]}, cfg)
    original = app.get_state(cfg)
    config: RunnableConfig = fork_point
    for i in range(25):
        app.invoke({"messages": [_turn(i, "f")[0]]}, config)
        config = cfg
    forked = app.get_state(cfg)
    on_original = " ".join(_archived_texts(memory, cfg, original.values))
    on_fork = " ".join(_archived_texts(memory, cfg, forked.values))
    assert "o turn 25" in on_original and "f turn" not in on_original
    assert "f turn 3" in on_fork and "o turn 1" in on_fork  # its own, and the shared past
    assert not any(f"o turn {i}:" in on_fork for i in range(20, 45))  # not the original's


def test_a_live_log_above_the_reflection_cap_is_shown_whole_in_archive_mode() -> None:
    options = {"message_tokens": 300, "buffer_tokens": False}
    big = {"after_tokens": 100_000, "keep_tokens": 150, "max_catalog_tokens": 300}
    memory, _ = _memory(observation={**options, "archive": big})
    reflecting, _ = _memory(
        observation=options, reflection={"observation_tokens": 400, "block_after": 500}
    )
    for i in range(30):
        memory.add_messages("t", _turn(i), resource_id="u")
    record = memory.status(thread_id="t").record
    assert record["observation_tokens"] > 500 and "archive" not in record
    shown = memory.render(record).text
    assert all(line in shown for g in record["groups"] for line in g["text"].splitlines()[1:])
    # the cap is archive mode's (after_tokens and one observation), not the reflection's
    assert memory._shown_cap(record) == 100_000 + 360
    assert reflecting._shown_cap(record) == 500


def test_observations_mode_searches_by_meaning_and_checks_its_arguments() -> None:
    memory, _ = _memory(
        retrieval={"vector": True, "min_score": 0.0}, embeddings=HashEmbeddings(dims=64)
    )
    recall = create_recall_tool(memory)
    cfg: RunnableConfig = {"configurable": {"thread_id": "t", "resource_id": "u"}}

    def call(**args: Any) -> dict[str, Any]:
        return dict(json.loads(recall.invoke({"mode": "observations", **args}, cfg)))

    assert "Nothing is archived" in call()["error"]
    for i in range(40):
        memory.add_messages("t", _turn(i), resource_id="u")
    found = call(query="topic 2 words", limit=3)
    assert 1 <= found["count"] <= 3 and found["observations"].startswith("Date:")
    archived = {g["group_id"] for a in call(limit=20)["archives"] for g in a["groups"]}
    assert {g["group_id"] for a in found["archives"] for g in a["groups"]} <= archived
    first = found["archives"][0]
    ids = {"archive_id": first["archive_id"], "group_id": first["groups"][0]["group_id"]}
    assert "between 0 and" in call(**ids, char_offset=10**6)["error"]
    assert "needs archive_id and group_id" in call(char_offset=3)["error"]
    assert "not an archive id" in call(cursor="oma_nope")["error"]
    assert "is not in archive" in call(archive_id=first["archive_id"], group_id="g0")["error"]
    small = create_recall_tool(memory, token_budget=150)
    cut = json.loads(small.invoke({"mode": "observations", "limit": 20}, cfg))
    assert cut["next_cursor"] and cut["count"] < len(call(limit=20)["archives"])


def test_source_mode_reads_groups_by_key_and_explains_lines_without_receipts() -> None:
    memory, _ = _memory()
    app = build_graph(memory, _actor())
    cfg: RunnableConfig = {"configurable": {"thread_id": "k", "resource_id": "u"}}
    for i in range(12):
        app.invoke({"messages": [_turn(i, "k")[0]]}, cfg)
    state = app.get_state(cfg).values
    line = "User said: k turn 1: I like topic 1"
    _groups.clear()  # a process that never read these groups: they come from the store
    recall = create_recall_tool(memory, token_budget=150)
    result = json.loads(recall.invoke({"mode": "source", "line": line, "state": state}, cfg))
    assert result["message_ids"][0] == "kh0" and result["truncated"]
    record = memory.read_state(state)
    old = {
        **record,
        "groups": [{k: v for k, v in g.items() if k != "receipts"} for g in record["groups"]],
    }
    bare = memory.receipt("k", line, record=old)
    assert (
        bare["message_ids"] == []
        and "no receipt" in bare["note"]
        and "cursor='kh0'" in bare["note"]
    )
