"""One view of every thread: ``inspect``, ``status()`` and ``get_context()`` read agent and
graph threads from their checkpoint and standalone/history threads from the store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langchain_om import ObservationalChatMessageHistory, ObservationalMemory
from langchain_om.cli import main
from langchain_om.errors import OMUsageError
from langchain_om.testing import FunctionChatModel, memory_model
from tests.helpers import APP_OPTIONS, actor_reply, build_agent, build_graph, user_turn

pytestmark = pytest.mark.usefixtures("fresh_model_cache")


def write_threads(db: Path, turns: int = 30) -> dict[str, Any]:
    """An agent thread 'maya', a graph thread 'g1' and a history thread 'h1' in one file."""
    with ObservationalMemory.from_sqlite(str(db), model=memory_model(), **APP_OPTIONS) as memory:
        agent = build_agent(memory, FunctionChatModel(function=actor_reply))
        graph = build_graph(memory, FunctionChatModel(function=actor_reply))
        for i in range(turns):
            agent.invoke({"messages": [HumanMessage(user_turn(i))]}, _cfg("maya"))
            graph.invoke({"messages": [HumanMessage(user_turn(i))]}, _cfg("g1"))
        history = ObservationalChatMessageHistory(memory, thread_id="h1")
        history.add_messages([HumanMessage("a history message " * 5)])
        memory.wait_for_background()
        states = list(agent.get_state_history(_cfg("maya")))
        return {"agent": agent.get_state(_cfg("maya")).values, "history": states}


def _cfg(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def inspect(db: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["inspect", "--db", str(db), *args])
    return code, capsys.readouterr().out


def test_inspect_shows_an_agent_thread_and_status_gives_the_same_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "agent.db"
    written = write_threads(db)
    record = written["agent"]["om_record"]
    assert record["observed_message_count"] > 0 and record["generation"] >= 1

    code, out = inspect(db, capsys, "--thread", "maya", "--json")
    assert code == 0
    shown = json.loads(out)
    assert shown["source"] == "checkpoint"
    assert shown["record"]["observed_message_count"] == record["observed_message_count"]
    assert shown["record"]["generation"] == record["generation"]
    assert shown["archived_messages"] == record["observed_message_count"]

    # Thresholds come from the memory's options (inspect uses the defaults here); the windows,
    # the log and the generation come from the thread.
    with ObservationalMemory.from_sqlite(str(db), model=memory_model()) as memory:
        snap = memory.status(thread_id="maya")
        assert snap.source == "checkpoint"
        assert snap.status.to_part()["data"] == shown["status"]
        assert len(snap.window) == shown["window_messages"]
        window = [m for m in written["agent"]["messages"] if m.type != "system"]
        assert [m.id for m in snap.window] == [m.id for m in window]
        context = memory.get_context(thread_id="maya")
        assert context[0].type == "system" and "<observations>" in context[0].text
        assert asyncio.run(memory.astatus(thread_id="maya")).status == snap.status
        assert memory.list_threads() == ["g1", "h1", "maya"]

    code, out = inspect(db, capsys, "--thread", "maya")
    assert code == 0
    assert f"generation {record['generation']}" in out
    assert "User said: Turn" in out


def test_inspect_lists_agent_graph_and_history_threads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "mixed.db"
    write_threads(db, turns=12)
    assert main(["inspect", "--db", str(db), "--thread", "nobody"]) == 2
    assert "Threads: 'g1', 'h1', 'maya'." in capsys.readouterr().err  # one line, on stderr
    code, out = inspect(db, capsys, "--thread", "g1", "--json")
    assert code == 0 and json.loads(out)["source"] == "checkpoint"
    code, out = inspect(db, capsys, "--thread", "h1", "--json")
    assert code == 0 and json.loads(out)["source"] == "store"


def test_inspect_checkpoint_shows_an_older_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "old.db"
    written = write_threads(db)
    latest = written["agent"]["om_record"]["observed_message_count"]
    older = next(
        s
        for s in written["history"]
        if s.values.get("om_record")
        and 0 < s.values["om_record"]["observed_message_count"] < latest
    )
    checkpoint = older.config["configurable"]["checkpoint_id"]
    code, out = inspect(db, capsys, "--thread", "maya", "--checkpoint", checkpoint, "--json")
    assert code == 0
    shown = json.loads(out)
    assert shown["checkpoint_id"] == checkpoint
    assert (
        shown["record"]["observed_message_count"]
        == older.values["om_record"]["observed_message_count"]
    )
    with ObservationalMemory.from_sqlite(str(db), model=memory_model()) as memory:
        with pytest.raises(OMUsageError, match="No checkpoint 'nope'"):
            memory.status(thread_id="maya", checkpoint_id="nope")
