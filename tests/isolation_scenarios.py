"""Two users, one thread id: the scenario every store runs (InMemory, SQLite, PostgreSQL).

Alice writes a secret on thread ids that Bob then uses through every front door: the history
adapter, the standalone engine, the agent middleware, the graph nodes and the recall tool.
Bob reads 0 of Alice's messages and deletes none of them; where he names another resource on
her thread id, he gets the documented ``OMUsageError``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import ObservationalChatMessageHistory, ObservationalMemory
from langchain_om.errors import OMUsageError
from langchain_om.testing import FunctionChatModel
from langchain_om.tools import create_recall_tool
from tests.helpers import archived, build_agent, build_graph

SECRET = "alice's bank PIN is 4921"


def _turns(n: int, tag: str) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(n):
        text = f"{tag} turn {i}: {SECRET if i == 0 else 'words ' * 30}"
        out += [HumanMessage(text, id=f"{tag}-h{i}"), AIMessage(f"ok {i}", id=f"{tag}-a{i}")]
    return out


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value)
    if isinstance(value, BaseMessage):
        return str(value.content)
    return json.dumps(value, default=str) if not isinstance(value, str) else value


def _actor() -> FunctionChatModel:
    return FunctionChatModel(function=lambda m, i: f"Answer {i.index}: " + "ok " * 20)


def run_two_users(memory: ObservationalMemory) -> dict[str, int]:
    """Run the scenario on ``memory``; returns what Bob read and deleted of Alice's (all 0)."""
    tag = uuid.uuid4().hex[:8]
    reads = deletes = refused = 0
    # -- history adapter and standalone engine ---------------------------------------------
    thread = f"main-{tag}"
    alice = ObservationalChatMessageHistory(memory, thread_id=thread, resource_id="alice")
    for i in range(0, 24, 2):
        alice.add_messages(_turns(12, tag)[i : i + 2])
    alice_archive = len(archived(memory, thread))
    alice_window = len(alice.messages)
    assert alice_archive > 0, "the scenario needs an archive"
    bob = ObservationalChatMessageHistory(memory, thread_id=thread, resource_id="bob")
    for action in (
        lambda: bob.messages,
        lambda: bob.add_messages([HumanMessage("bob here")]),
        bob.clear,
        lambda: memory.status(thread_id=thread, resource_id="bob"),
        lambda: memory.get_context(thread_id=thread, resource_id="bob"),
        lambda: memory.add_messages(thread, [HumanMessage("bob")], resource_id="bob"),
        lambda: memory.forget(thread_id=thread, resource_id="bob"),
    ):
        with pytest.raises(OMUsageError, match="'alice', not 'bob'"):
            got = action()
            reads += SECRET in _text(got)
        refused += 1
    deletes += alice_archive - len(archived(memory, thread))
    deletes += alice_window - len(alice.messages)
    assert SECRET in _text(alice.messages) or SECRET in _text(archived(memory, thread))

    # -- recall: Bob's own config on Alice's thread id, or on his thread with her cursors ---
    recall = create_recall_tool(memory, scope="resource")
    cursors = [f"{tag}-h0", f"{tag}-a3", None]
    for cfg_thread in (thread, f"bob-own-{tag}"):
        cfg: RunnableConfig = {"configurable": {"thread_id": cfg_thread, "resource_id": "bob"}}
        for cursor in cursors:
            for args in (
                {"cursor": cursor, "detail": "high"},
                {"cursor": cursor, "thread_id": thread, "detail": "high"},
                {"mode": "threads"},
                {"anchor": "start", "detail": "high"},
            ):
                reads += SECRET in str(recall.invoke(args, cfg))

    # -- agent and graph: Bob runs on Alice's thread ids ------------------------------------
    for build in (build_agent, build_graph):
        app = build(memory, _actor())
        gthread = f"{build.__name__}-{tag}"
        alice_cfg: RunnableConfig = {"configurable": {"thread_id": gthread, "resource_id": "alice"}}
        for i in range(12):
            app.invoke({"messages": [HumanMessage(f"{SECRET} {i} " + "words " * 30)]}, alice_cfg)
        before = len(archived(memory, gthread))
        assert before > 0
        bob_cfg: RunnableConfig = {"configurable": {"thread_id": gthread, "resource_id": "bob"}}
        with pytest.raises(OMUsageError, match="'alice', not 'bob'"):
            app.invoke({"messages": [HumanMessage("what is my PIN?")]}, bob_cfg)
        refused += 1
        with pytest.raises(OMUsageError, match="'alice', not 'bob'"):
            memory.forget(thread_id=gthread, resource_id="bob")
        refused += 1
        deletes += before - len(archived(memory, gthread))
        result = recall.invoke({"anchor": "start", "detail": "high"}, bob_cfg)
        reads += SECRET in str(result)
        assert "another resource" in str(result)
        # Alice still reads her own thread.
        assert SECRET in str(recall.invoke({"anchor": "start", "detail": "high"}, alice_cfg))

    # -- a thread created without a resource keeps working without one ----------------------
    anon = ObservationalChatMessageHistory(memory, thread_id=f"anon-{tag}")
    for i in range(0, 24, 2):
        anon.add_messages(_turns(12, f"anon{tag}")[i : i + 2])
    assert len(anon.messages) > 1 and archived(memory, f"anon-{tag}")
    anon.clear()
    assert archived(memory, f"anon-{tag}") == []
    # Alice clears her own thread: allowed, and everything goes.
    alice.clear()
    assert archived(memory, thread) == []
    return {"reads": reads, "deletes": deletes, "refused": refused}


# -- resource scope: three threads, two users -------------------------------------------------

ALICE_SECRET = "Alice keeps her locker code 4921 in the blue notebook"
BOB_SECRET = "Bob keeps his locker code 7788 in the red drawer"
SHARED_FILLER = "and here is some more about my week " * 6
RESOURCE_THREADS = (("A", "alice"), ("B", "alice"), ("C", "bob"))
"""Alice talks in threads A and B, Bob in thread C (thread, resource)."""


def resource_turn(thread: str, resource: str, i: int) -> list[BaseMessage]:
    """One user turn of ``thread`` (and its reply); the first carries the user's secret."""
    secret = ALICE_SECRET if resource == "alice" else BOB_SECRET
    text = f"{secret} ({thread})" if i == 0 else f"{thread} turn {i} of {resource}"
    return [
        HumanMessage(f"{text}. {SHARED_FILLER}", id=f"{thread}-h{i}"),
        AIMessage(f"Noted {thread} {i}.", id=f"{thread}-a{i}"),
    ]


async def run_three_threads(
    memory: ObservationalMemory,
    *,
    sync: bool,
    turns: int = 6,
    before_round: Callable[[int], object] | None = None,
) -> None:
    """Alice and Bob talk in turns on their threads, through ``add_messages`` (or its async
    twin): enough for each resource to observe, and with a low reflection threshold, reflect.
    ``before_round(i)`` runs before round ``i`` (to move a clock)."""
    for i in range(turns):
        if before_round is not None:
            before_round(i)
        for thread, resource in RESOURCE_THREADS:
            messages = resource_turn(thread, resource, i)
            if sync:
                memory.add_messages(thread, messages, resource_id=resource)
            else:
                await memory.aadd_messages(thread, messages, resource_id=resource)


def other_user(resource: str) -> tuple[str, set[str]]:
    """The other user's secret and threads, which ``resource``'s memory must never contain."""
    if resource == "alice":
        return "7788", {"C"}
    return "4921", {"A", "B"}
