"""Checkpoint forks and time travel keep their own archives: fork at message 36 of 48,
continue the fork, go back to the original; nothing archived is overwritten and recall on each
branch returns exactly that branch's messages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import ObservationalMemory
from langchain_om._core.branches import branch_at, fork, segments_of, split_key
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from langchain_om.tools import create_recall_tool
from tests.helpers import FIXED, build_agent, build_graph


def test_branch_paths() -> None:
    root = segments_of(None)
    assert root == [("", 0)] and branch_at(root, 99) == ""
    path = fork(fork(root, "b1", 20), "b2", 30)
    assert [branch_at(path, s) for s in (0, 19, 20, 29, 30, 90)] == ["", "", "b1", "b1", "b2", "b2"]
    assert fork(path, "b3", 25) == [("", 0), ("b1", 20), ("b3", 25)]
    assert segments_of({"branches": [["x", 3]]}) == root  # garbage: the root branch
    assert split_key("b1:000000000004") == ("b1", "000000000004")
    assert split_key("000000000004") == ("", "000000000004")


def _reply(messages: list[BaseMessage], info: RecordedCall) -> AIMessage | str:
    last = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
    return AIMessage(f"reply to {last.text[:12]} " + "ok " * 20, id=f"{last.id}-r")


def _turn(tag: str, i: int) -> HumanMessage:
    return HumanMessage(f"{tag}-{i:02d} " + "words " * 30, id=f"{tag}-{i:02d}")


def _recall_ids(memory: ObservationalMemory, cfg: RunnableConfig, state: dict[str, Any]) -> Any:
    recall = create_recall_tool(memory)
    ids: list[str] = []
    cursor: str | None = None
    total = None
    for _ in range(20):
        args: dict[str, Any] = {"limit": 10, "state": state}
        args |= {"cursor": cursor} if cursor else {"anchor": "start"}
        page = json.loads(recall.invoke(args, cfg))
        total = page["total_messages"]
        new = [m["id"] for m in page["messages"]]
        ids += [i for i in new if i not in ids] if cursor else new
        if not page["has_next_page"]:
            break
        cursor = page["messages"][-1]["id"]
        ids.pop()  # the next page starts at the cursor again
    return ids, total


@pytest.mark.parametrize("door", ["agent", "graph"])
@pytest.mark.parametrize("buffered", [False, True])
def test_fork_and_go_back_overwrite_nothing(door: str, buffered: bool) -> None:
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 500, "buffer_tokens": 150 if buffered else False},
        reflection={"observation_tokens": 100_000},
        clock=lambda: FIXED,
        sleep=lambda s: None,
    )
    actor = FunctionChatModel(function=_reply)
    app = build_agent(memory, actor) if door == "agent" else build_graph(memory, actor)
    cfg: RunnableConfig = {"configurable": {"thread_id": f"fork-{door}-{buffered}"}}
    thread = cfg["configurable"]["thread_id"]

    def run(tag: str, turns: range, config: RunnableConfig) -> None:
        for i in turns:
            app.invoke({"messages": [_turn(tag, i)]}, config)
            memory.wait_for_background()
            config = cfg  # after the first turn, continue the thread's latest checkpoint

    run("orig", range(18), cfg)
    at_36 = app.get_state(cfg).config  # message 36 of 48
    run("orig", range(18, 24), cfg)
    orig_tip = app.get_state(cfg)
    orig_before = [
        m.id for m in memory.archived_messages(thread, record=orig_tip.values["om_record"])
    ]
    assert len(orig_before) > 20

    run("fork", range(12), at_36)  # fork at message 36, continue the fork
    fork_tip = app.get_state(cfg)
    run("back", range(6), orig_tip.config)  # go back to the original, continue it
    back_tip = app.get_state(cfg)

    orig_after = [
        m.id for m in memory.archived_messages(thread, record=back_tip.values["om_record"])
    ]
    overwritten = sum(a != b for a, b in zip(orig_before, orig_after, strict=False))
    assert overwritten == 0 and orig_after[: len(orig_before)] == orig_before
    assert not any(i and i.startswith("fork") for i in orig_after)

    assert len(segments_of(fork_tip.values["om_record"])) == 2  # the fork got its own branch
    assert segments_of(back_tip.values["om_record"]) == [("", 0)]
    forked = [m.id for m in memory.archived_messages(thread, record=fork_tip.values["om_record"])]
    assert any(i and i.startswith("fork") for i in forked)
    shared = [i for i in forked if not (i or "").startswith("fork")]
    assert shared == orig_before[: len(shared)]  # the common prefix, then fork messages only
    assert all((i or "").startswith("fork") for i in forked[len(shared) :])

    # Recall on each branch: exactly its messages (archive + window), in order, right total.
    for tip, archived_ids in ((fork_tip, forked), (back_tip, orig_after)):
        window = [m.id for m in tip.values["messages"] if m.type != "system"]
        ids, total = _recall_ids(memory, cfg, tip.values)
        assert ids == archived_ids + window
        assert total == len(archived_ids) + len(window)
