"""Two users, one thread id: the scenario every store runs (InMemory, SQLite, PostgreSQL).

Alice writes a secret on thread ids that Bob then uses through every front door: the history
adapter, the standalone engine, the agent middleware, the graph nodes and the recall tool.
Bob reads 0 of Alice's messages and deletes none of them; where he names another resource on
her thread id, he gets the documented ``OMUsageError``.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel

from langchain_om import Extractor, ObservationalChatMessageHistory, ObservationalMemory
from langchain_om.errors import OMUsageError
from langchain_om.testing import FunctionChatModel, RecordedCall
from langchain_om.tools import create_recall_tool
from tests.helpers import Clock, archived, build_agent, build_graph, thread_memory_reply

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


class Codes(BaseModel):
    """A schema extractor's value: the locker codes the user named."""

    codes: list[str]


def locker_codes(text: str) -> list[str]:
    """The locker codes ``text`` names."""
    return sorted(set(re.findall(r"code (\d{4})\b", text)))


def _between(text: str, head: str) -> str:
    return text.split(f"## {head}\n\n", 1)[1].split("\n\n## ", 1)[0]


def family_reply(messages: list[BaseMessage], info: RecordedCall) -> Any:
    """A scripted memory model for every option family, grounded in what it is sent.

    Observer and Reflector as :func:`~tests.helpers.thread_memory_reply`; when asked, one
    ``<thread-title>`` line per thread of the batch (the first four words of its first new
    user message), and each inline extractor's section listing the batch's locker codes
    (left out when it has none). A structured call (a schema extractor) adds the codes of its
    new observations to its previous value.
    """
    prompt = messages[-1].text if messages else ""
    if info.structured_output is not None:
        before = _between(prompt, "Previous value")
        kept = json.loads(before)["codes"] if before != "none" else []
        return {"codes": sorted({*kept, *locker_codes(_between(prompt, "New observations"))})}
    reply = thread_memory_reply(messages, info)
    if "## Observations to Condense" in prompt:
        return reply
    new, _, task = prompt.split("## New Messages to Observe", 1)[-1].partition("## Your Task")
    if "<thread-title>:" in task:
        titles = []
        for label, body in re.findall(r'<thread id="([^"]+)">(.*?)</thread>', new, re.DOTALL):
            said = re.findall(r"^User(?: \([^)]*\))?: (.*)$", body, re.MULTILINE)
            if said:
                titles.append(f'<thread id="{label}">{" ".join(said[0].split()[:4])}</thread>')
        reply += "\n<thread-title>\n" + "\n".join(titles) + "\n</thread-title>"
    codes = locker_codes(new)
    for slug in re.findall(r"^- <([a-z-]+)>:", task, re.MULTILINE):
        if slug in ("observations", "current-task", "suggested-response", "thread-title"):
            continue
        if codes:  # nothing new: the section is left out, the value stays
            body = "# Notes\n- codes: " if slug == "working-memory" else ""
            reply += f"\n<{slug}>\n{body}{', '.join(codes)}\n</{slug}>"
    return reply


def _secret_of(resource: str) -> str:
    return "4921" if resource == "alice" else "7788"


def run_resource_families(path: str, *, sync: bool) -> dict[str, int]:
    """Every option family resource scope runs, on at once, for Alice and Bob.

    Three threads (A and B of Alice, C of Bob) on the SQLite file ``path``; transform hooks,
    titles, extractors (inline, schema, working memory, reflection), time-gap markers and a
    floor of raw messages, then a read-only reader per user. Returns how often something
    computed, stored or shown for one user held the other's secret (``leaks``, 0), and how
    many such values were checked (``checked``).
    """
    clock = Clock()
    seen: list[tuple[str, Any]] = []  # (resource, what a hook or the model was given)

    def recorder() -> Callable[[Any, Any], Any]:
        """A transform hook that records what it is given and changes nothing."""

        def hook(value: Any, ctx: Any) -> Any:
            seen.append((ctx["resource_id"], value))
            return value  # unchanged

        return hook

    model = FunctionChatModel(function=family_reply)
    options: dict[str, Any] = {
        "model": model,
        "scope": "resource",
        "observation": {
            "message_tokens": 250,
            "buffer_tokens": False,
            "thread_title": True,
            "manage_working_memory": True,
            "extract": [
                Extractor("Codes", "The locker codes the user named."),
                Extractor("Typed codes", "The locker codes, as a list.", schema=Codes),
            ],
        },
        "reflection": {
            "observation_tokens": 150,
            "block_after": 1_000,
            "extract": [Extractor("Kept codes", "The codes kept.", schema=Codes)],
        },
        "hooks": {
            name: recorder()
            for name in (
                "before_observation",
                "after_observation",
                "before_reflection",
                "after_reflection",
            )
        },
        "temporal_markers": True,
        "keep_last_messages": 4,
        "clock": clock,
        "sleep": lambda s: None,
    }

    def tick(i: int) -> None:
        clock.now += timedelta(hours=2 if i == 4 else 0, minutes=1)

    leaks = checked = 0

    def check(resource: str, value: Any) -> None:
        nonlocal leaks, checked
        theirs = _secret_of("bob" if resource == "alice" else "alice")
        checked += 1
        leaks += theirs in _text(value)

    with ObservationalMemory.from_sqlite(path, **options) as memory:
        asyncio.run(run_three_threads(memory, sync=sync, turns=8, before_round=tick))
        for resource, value in seen:
            check(resource, value)
        for call in model.calls:  # Observer, Reflector and extractor calls: one user each
            text = _text(list(call.messages))
            checked += 1
            leaks += "4921" in text and "7788" in text
        for thread, resource in RESOURCE_THREADS:
            snap = memory.status(thread_id=thread)
            for value in (
                snap.title,
                snap.extracted,
                snap.observations,
                snap.window,
                memory.get_working_memory(thread_id=thread),
                memory.get_context(thread_id=thread, resource_id=resource),
                memory.archived_messages(thread),
            ):
                check(resource, value if value is not None else "")
        reader = ObservationalMemory(
            **{**options, "read_only": True}, store=memory.store, checkpointer=memory.checkpointer
        )
        for thread, resource in (("R", "alice"), ("S", "bob")):
            snap = reader.add_messages(
                thread, [HumanMessage("What is my code?")], resource_id=resource
            )
            check(resource, reader.render(snap.record).blocks)
            assert _secret_of(resource) in _text(reader.render(snap.record).blocks)
    assert len({r for r, _ in seen}) == 2, "both users' cycles ran the hooks"
    return {"leaks": leaks, "checked": checked}
