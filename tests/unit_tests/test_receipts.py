"""Receipts: every observation line names the messages it was written from, on every door.

The Observer of :mod:`tests.receipts_run` logs which messages each of its calls was shown and
writes lines naming only the call, so a receipt is checked against the Observer's own log.
(The 200-turn run on a SQLite file is in the integration tests.)
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig

from langchain_om import ModelByInputTokens, ObservationalChatMessageHistory, ObservationalMemory
from langchain_om._cli.receipts import receipts_data, receipts_text
from langchain_om._core.receipts import (
    cycle_receipts,
    find_line,
    line_spans,
    merge_spans,
    parts_receipts,
    reflection_receipts,
    savings,
)
from langchain_om.errors import OMUsageError
from langchain_om.testing import FunctionChatModel
from langchain_om.tools import create_recall_tool
from tests.helpers import FIXED, build_agent, build_graph
from tests.receipts_run import (
    ObserverLog,
    actor,
    all_lines,
    check_receipts,
    receipts_memory,
    turn,
)

# -- the pure part ------------------------------------------------------------------------------


def test_spans_merge_and_lines_find_their_entry() -> None:
    assert merge_spans([[5, 9], [0, 3], [3, 4], [8, 12], [7, 7]]) == [[0, 4], [5, 12]]
    assert cycle_receipts(10, 4) == [[0, [[10, 14]]]] and cycle_receipts(10, 0) == []
    group: dict[str, Any] = {"receipts": parts_receipts(10, [(2, 3), (0, 5), (3, 2)])}
    assert group["receipts"] == [[0, [[10, 13]]], [2, [[18, 20]]]]
    assert [line_spans(group, i) for i in (0, 1, 2, 4, 9)] == [
        [[10, 13]],
        [[10, 13]],
        [[18, 20]],
        [[18, 20]],
        [[18, 20]],
    ]
    assert line_spans({}, 0) == [] and line_spans({"receipts": "junk"}, 0) == []
    merged = reflection_receipts([{"receipts": [[0, [[0, 4]]]]}, {"receipts": [[0, [[4, 9]]]]}])
    assert merged == [[0, [[0, 9]]]]


def test_a_line_is_found_by_id_or_by_text() -> None:
    group = {
        "id": "g1",
        "kind": "observation",
        "text": "Date: Nov 30, 2026\n* 🔴 (09:00) User  likes tea\n* 🟡 (09:01) asked",
        "tokens": 9,
        "range": ["a", "b"],
        "observed_at": "x",
        "sources": [],
        "receipts": [[0, [[3, 5]]]],
    }
    by_text = find_line({"groups": [group]}, "user likes TEA")
    assert by_text is not None and by_text.index == 1 and by_text.spans == [[3, 5]]
    by_id = find_line({"groups": [group]}, by_text.line_id)
    assert by_id is not None and by_id.text == by_text.text and by_id.message_count == 2
    assert find_line({"groups": [group]}, "Date: Nov") is None  # a header is no line
    assert find_line({"groups": [group]}, "  ") is None


# -- the standalone engine and the history adapter --------------------------------------------


@pytest.mark.parametrize("buffered", [False, True])
def test_each_line_names_exactly_the_messages_its_cycle_observed(buffered: bool) -> None:
    log = ObserverLog()
    observation = {"message_tokens": 400, "buffer_tokens": 120 if buffered else False}
    memory = receipts_memory(log, observation=observation, clock=lambda: FIXED)
    for i in range(40):
        memory.add_messages("t", turn(i), resource_id="u")
        memory.wait_for_background()
    record = memory.status(thread_id="t").record
    lines = all_lines(record)
    assert len(lines) >= 15
    checked = check_receipts(
        log, lines, lambda text: memory.receipt("t", text, resource_id="u"), sample=100, seed=3
    )
    assert checked == len(lines)


def test_a_batch_observed_in_parts_has_line_by_line_receipts() -> None:
    log = ObserverLog()
    model = ModelByInputTokens(up_to={1_600: log.model()})
    memory = receipts_memory(
        log,
        model=None,
        observation={"model": model, "message_tokens": 2_500, "buffer_tokens": False},
        reflection={"model": log.model(), "observation_tokens": 1_000_000},
        clock=lambda: FIXED,
    )
    for i in range(60):
        memory.add_messages("t", turn(i), resource_id="u")
    record = memory.status(thread_id="t").record
    split = [g for g in record["groups"] if len(g.get("receipts", [])) > 1]
    assert split, "no batch was observed in parts"
    check_receipts(log, all_lines(record), lambda t: memory.receipt("t", t), sample=100, seed=4)


def test_a_reflection_line_names_every_message_of_the_groups_it_merged() -> None:
    log = ObserverLog()
    memory = receipts_memory(log, reflection={"observation_tokens": 120}, clock=lambda: FIXED)
    for i in range(30):
        memory.add_messages("t", turn(i), resource_id="u")
    record = memory.status(thread_id="t").record
    reflection = next(g for g in record["groups"] if g["kind"] == "reflection")
    line = next(line for line in reflection["text"].splitlines() if "cycle" in line)
    got = memory.receipt("t", line)
    observed = [i for k in sorted(log.calls) for i in log.calls[k]]
    assert got["kind"] == "reflection"
    assert got["message_ids"] == observed[: len(got["message_ids"])]
    assert len(got["message_ids"]) >= 20


def test_receipt_refuses_unknown_lines_and_other_users() -> None:
    log = ObserverLog()
    memory = receipts_memory(log, clock=lambda: FIXED)
    for i in range(10):
        memory.add_messages("t", turn(i), resource_id="alice")
    line = all_lines(memory.status(thread_id="t").record)[0]
    with pytest.raises(OMUsageError, match="No observation line"):
        memory.receipt("t", "nothing like this")
    with pytest.raises(OMUsageError, match="another resource"):
        memory.receipt("t", line, resource_id="bob")
    assert asyncio.run(memory.areceipt("t", line)) == memory.receipt("t", line)


def test_history_adapter_lines_have_receipts() -> None:
    log = ObserverLog()
    memory = receipts_memory(log, clock=lambda: FIXED)
    history = ObservationalChatMessageHistory(memory, thread_id="h", resource_id="u")
    for i in range(16):
        history.add_messages(turn(i))
    lines = all_lines(memory.status(thread_id="h").record)
    assert check_receipts(log, lines, lambda t: memory.receipt("h", t), sample=100, seed=5) > 3


def test_status_reports_the_tokens_memory_saved() -> None:
    log = ObserverLog()
    memory = receipts_memory(log, clock=lambda: FIXED)
    for i in range(20):
        memory.add_messages("t", turn(i), resource_id="u")
    snap = memory.status(thread_id="t")
    saved = snap.status.savings
    assert saved.observed_tokens == snap.record["total_tokens_observed"] > 0
    assert saved.context_tokens == snap.record["observation_tokens"]
    assert saved.tokens_saved == saved.observed_tokens - saved.context_tokens > 0
    assert savings(snap.record).tokens_saved == saved.tokens_saved
    part = snap.status.to_part()["data"]["savings"]
    assert part == {
        "observed_tokens": saved.observed_tokens,
        "context_tokens": saved.context_tokens,
        "tokens_saved": saved.tokens_saved,
    }


# -- agents and graphs: the recall tool's source mode on the checkpoint's record ------------


def _run(
    door: str, log: ObserverLog, turns: int
) -> tuple[ObservationalMemory, Any, RunnableConfig]:
    memory = receipts_memory(log, clock=lambda: FIXED)
    model = FunctionChatModel(function=actor)
    app = build_agent(memory, model) if door == "agent" else build_graph(memory, model)
    cfg: RunnableConfig = {"configurable": {"thread_id": f"{door}-t", "resource_id": "u"}}
    for i in range(turns):
        app.invoke({"messages": [turn(i)[0]]}, cfg)
    return memory, app, cfg


@pytest.mark.parametrize("door", ["agent", "graph"])
def test_recall_source_mode_gives_a_lines_receipt(door: str) -> None:
    log = ObserverLog()
    memory, app, cfg = _run(door, log, 24)
    state = app.get_state(cfg).values
    record = state["om_record"]
    lines = all_lines(memory.read_state(state))
    recall = create_recall_tool(memory)

    def receipt(text: str) -> dict[str, Any]:
        result = json.loads(recall.invoke({"mode": "source", "line": text, "state": state}, cfg))
        assert result["mode"] == "source" and result["messages"]
        assert result["messages"][0]["id"] == result["message_ids"][0]
        return dict(result)

    assert check_receipts(log, lines, receipt, sample=100, seed=6) >= 8
    # the public API reads the checkpoint's record too
    first = lines[0]
    assert memory.receipt(f"{door}-t", first)["message_ids"] == receipt(first)["message_ids"]
    assert "group_keys" in record or "groups" in record


def test_inspect_receipts_lists_each_line_with_its_messages() -> None:
    log = ObserverLog()
    memory, _, _ = _run("agent", log, 16)
    snap = memory.status(thread_id="agent-t")
    rows = receipts_data(memory, snap)
    assert rows and all(r["message_ids"] for r in rows)
    for row in rows:
        cycle = int(row["text"].split("cycle ")[1].split()[0])
        assert row["message_ids"] == log.calls[cycle]
    text = receipts_text(memory, snap)
    assert rows[0]["line_id"] in text and "Tokens saved:" in text
