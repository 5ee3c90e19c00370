"""Archive mode, receipts and branch-aware recall on real stores: a SQLite file (reopened by a
new memory, as after a restart) and PostgreSQL.

- Receipts: for 100 random observation lines of a scripted 200-turn agent run, the receipt's
  messages are exactly those the line's cycle observed (the Observer's own log says which).
- Branch-aware recall: fork at message 36 of 48, 100 random search and page queries on each
  branch, 0 results from the other branch (search where the store has a vector index).
- Archive mode: retired groups read back word for word after a restart.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.memory import InMemoryStore

from langchain_om import ObservationalMemory
from langchain_om.cli import main
from langchain_om.testing import FunctionChatModel, HashEmbeddings, RecordedCall, memory_model
from langchain_om.tools import create_recall_tool
from tests.helpers import POSTGRES_URL, build_agent, build_graph, require_postgres, write_jsonl
from tests.integration_tests.test_cli import SMALL, conversation
from tests.integration_tests.test_from_postgres import pgvector_url  # noqa: F401 (fixture)
from tests.recall_fuzz import run_branch_fuzz
from tests.receipts_run import ObserverLog, actor, all_lines, check_receipts, turn

ARCHIVE = {"after_tokens": 500, "keep_tokens": 150, "max_catalog_tokens": 300}


@pytest.fixture
def postgres_url() -> Iterator[str]:
    require_postgres()
    pytest.importorskip("langgraph.store.postgres")
    yield POSTGRES_URL


def _open(kind: str, where: str, **options: Any) -> ObservationalMemory:
    if kind == "sqlite":
        return ObservationalMemory.from_sqlite(where, **options)
    return ObservationalMemory.from_postgres(where, **options)


def _where(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return str(tmp_path / "memory.db")
    return str(request.getfixturevalue("postgres_url"))


# -- receipts ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_receipts_of_a_200_turn_run_name_exactly_what_each_cycle_observed(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where = _where(kind, tmp_path, request)
    turns = 200 if kind == "sqlite" else 80
    log = ObserverLog()
    options: dict[str, Any] = {
        "model": log.model(),
        "observation": {"message_tokens": 400, "buffer_tokens": 120},
        "reflection": {"observation_tokens": 1_000_000},
        "retrieval": True,
    }
    thread = f"receipts-{uuid.uuid4().hex[:8]}"
    cfg: RunnableConfig = {"configurable": {"thread_id": thread, "resource_id": "u"}}
    with _open(kind, where, **options) as memory:
        agent = build_agent(memory, FunctionChatModel(function=actor), tools=[])
        for i in range(turns):
            agent.invoke({"messages": [turn(i)[0]]}, cfg)
            memory.wait_for_background()
        state = agent.get_state(cfg).values
    # a new memory on the same storage (a restart) reads the receipts back
    with _open(kind, where, **options) as memory:
        lines = all_lines(memory.read_state(state))
        assert len(lines) >= (100 if kind == "sqlite" else 30)
        checked = check_receipts(
            log, lines, lambda text: memory.receipt(thread, text), sample=100, seed=11
        )
        assert checked == min(100, len(lines))
        recall = create_recall_tool(memory)

        def by_tool(text: str) -> dict[str, Any]:
            args = {"mode": "source", "line": text, "state": state, "limit": 100}
            return dict(json.loads(recall.invoke(args, cfg)))

        check_receipts(log, lines, by_tool, sample=20, seed=12)
        saved = memory.status(thread_id=thread).status.savings
        assert saved.tokens_saved == saved.observed_tokens - saved.context_tokens > 0


# -- branch-aware recall -------------------------------------------------------------------------


def _branch_options() -> dict[str, Any]:
    return {
        "model": memory_model(),
        "observation": {"message_tokens": 250, "buffer_tokens": False},
        "reflection": {"observation_tokens": 100_000},
        "sleep": lambda s: None,
    }


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("door", ["agent", "graph"])
def test_a_fork_pages_only_its_own_branch(
    kind: str, door: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where = _where(kind, tmp_path, request)
    with _open(kind, where, retrieval=True, **_branch_options()) as memory:
        report = run_branch_fuzz(
            memory, door, 100, seed=21, search=False, thread=f"br-{uuid.uuid4().hex[:8]}"
        )
    assert report.leaks == [] and report.calls == {"orig": 100, "fork": 100}
    assert report.items > 400


@pytest.mark.parametrize("door", ["agent", "graph"])
def test_a_forks_search_never_returns_the_other_branch_with_sqlite_checkpoints(
    door: str, tmp_path: Path
) -> None:
    """Checkpoints (the forks) in a SQLite file; the search index in an indexed in-memory store
    (this machine's ``sqlite3`` loads no extension, so SQLite itself has no vector search)."""
    conn = sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False)
    store = InMemoryStore(index={"embed": HashEmbeddings(dims=64), "dims": 64, "fields": ["text"]})
    memory = ObservationalMemory(
        checkpointer=SqliteSaver(conn),
        store=store,
        retrieval={"vector": True, "min_score": 0.0},
        **_branch_options(),
    )
    try:
        report = run_branch_fuzz(memory, door, 100, seed=23)
    finally:
        memory.close()
        conn.close()
    assert report.leaks == [] and report.calls == {"orig": 100, "fork": 100}
    assert report.items > 400


@pytest.mark.slow
@pytest.mark.parametrize("door", ["agent", "graph"])
def test_a_forks_search_never_returns_the_other_branch_on_pgvector(
    door: str,
    pgvector_url: str,  # noqa: F811
) -> None:
    with ObservationalMemory.from_postgres(
        pgvector_url,
        embeddings=HashEmbeddings(dims=128),
        retrieval={"vector": True, "min_score": 0.0},
        **_branch_options(),
    ) as memory:
        # The server is shared by both doors: each run searches its own resource's threads.
        thread = f"bv-{uuid.uuid4().hex[:8]}"
        report = run_branch_fuzz(memory, door, 100, seed=22, thread=thread, resource=thread)
    assert report.leaks == [] and report.calls == {"orig": 100, "fork": 100}
    assert report.items > 400


# -- archive mode --------------------------------------------------------------------------------


def _actor() -> FunctionChatModel:
    def reply(messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
        last = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
        return AIMessage(f"noted: {last.text[:12]} " + "ok " * 8, id=f"{last.id}-r")

    return FunctionChatModel(function=reply)


@pytest.mark.parametrize("door", ["agent", "graph", "agent-async"])
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_archived_groups_read_back_word_for_word_after_a_restart(
    kind: str, door: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where = _where(kind, tmp_path, request)
    options: dict[str, Any] = {
        "model": memory_model(),
        "observation": {"message_tokens": 300, "buffer_tokens": False, "archive": ARCHIVE},
        "retrieval": True,
    }
    thread = f"arch-{uuid.uuid4().hex[:8]}"
    cfg: RunnableConfig = {"configurable": {"thread_id": thread, "resource_id": "u"}}
    seen: dict[str, str] = {}
    with _open(kind, where, **options) as memory:
        app = (build_graph if door == "graph" else build_agent)(memory, _actor())
        for i in range(40):
            text = f"turn {i}: I like topic {i} " + "words " * 40
            inputs = {"messages": [HumanMessage(text, id=f"{thread}-h{i}")]}
            if door == "agent-async":
                asyncio.run(app.ainvoke(inputs, cfg))
            else:
                app.invoke(inputs, cfg)
            record = memory.read_state(app.get_state(cfg).values)
            seen.update({g["id"]: g["text"] for g in record["groups"]})
        state = app.get_state(cfg).values
    with _open(kind, where, **options) as memory:
        snap = memory.status(thread_id=thread)
        assert snap.status.archive is not None and snap.status.archive.archives >= 3
        recall = create_recall_tool(memory)
        page = json.loads(recall.invoke({"mode": "observations", "state": state}, cfg))
        assert page["count"] >= 1
        for archive in page["archives"]:
            for group in archive["groups"]:
                read = {
                    "mode": "observations",
                    "archive_id": archive["archive_id"],
                    "group_id": group["group_id"],
                    "state": state,
                }
                text = json.loads(recall.invoke(read, cfg))["observations"]
                assert text == seen[group["group_id"]]
        archived = [m.id for m in memory.archived_messages(thread, record=state["om_record"])]
        window = [m.id for m in state["messages"] if isinstance(m, (HumanMessage, AIMessage))]
        assert len(archived) + len(window) == 80 and not set(archived) & set(window)


# -- langchain-om inspect --receipts ----------------------------------------------------------


def test_inspect_receipts_lists_each_line_with_its_messages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "om.db"
    rows = conversation(12)
    main(["replay", str(write_jsonl(tmp_path / "t.jsonl", rows)), "--db", str(db), *SMALL])
    capsys.readouterr()
    assert main(["inspect", "--db", str(db), "--receipts"]) == 0
    text = capsys.readouterr().out
    assert "Receipts (observation line → source messages):" in text
    assert re.search(r"Tokens saved: \d+ \(messages observed \d+, memory shown \d+\)", text)
    assert main(["inspect", "--db", str(db), "--json", "--receipts"]) == 0
    data = json.loads(capsys.readouterr().out)
    receipts = data["receipts"]
    assert receipts and all(r["message_ids"] for r in receipts)
    assert data["status"]["savings"]["tokens_saved"] >= 0
    with ObservationalMemory.from_sqlite(str(db), model=memory_model()) as memory:
        for row in receipts:
            assert memory.receipt("default", row["line_id"])["message_ids"] == row["message_ids"]
            assert row["line_id"] in text


# -- recall code mode ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_an_agent_program_reads_an_archived_thread(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where = _where(kind, tmp_path, request)
    thread = f"code-{uuid.uuid4().hex[:8]}"
    program = (
        "seen = []\n"
        "page = recall(mode='messages', anchor='start', limit=100)\n"
        "for m in page['messages']:\n"
        "    if m['role'] == 'human':\n"
        "        seen.append(m['parts'][0]['text'].split(':')[0])\n"
        "return {'seen': seen, 'total': page['total_messages']}"
    )

    def reply(messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage) and last.text == "what did I say?":
            call = {"name": "execute_memory_recall", "args": {"code": program}, "id": "p1"}
            return AIMessage("", tool_calls=[call])
        return AIMessage("ok " * 10)

    options: dict[str, Any] = {
        "model": memory_model(),
        "observation": {"message_tokens": 300, "buffer_tokens": False},
        "retrieval": {"code_mode": True},
    }
    cfg: RunnableConfig = {"configurable": {"thread_id": thread, "resource_id": "u"}}
    with _open(kind, where, **options) as memory:
        agent = build_agent(memory, FunctionChatModel(function=reply), tools=[])
        for i in range(12):
            agent.invoke({"messages": [HumanMessage(f"turn {i}: " + "words " * 40)]}, cfg)
        state = agent.invoke({"messages": [HumanMessage("what did I say?")]}, cfg)
        record = agent.get_state(cfg).values["om_record"]
        assert record["observed_message_count"] > 10  # most of it is archived
    answer = next(m for m in reversed(state["messages"]) if m.type == "tool")
    result = json.loads(answer.text)
    assert result["success"] and result["calls"] == 1
    assert result["result"]["seen"][:12] == [f"turn {i}" for i in range(12)]
