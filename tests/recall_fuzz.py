"""A seeded fuzz of the recall tool over its four calling patterns.

Two resources (``alice`` and ``bob``) each have standalone threads and an agent thread; every
id and every message of a resource carries its marker (``ALICE`` / ``BOB``). Each call picks a
caller (one of them, by run config; or nobody) and random arguments: ids and cursors of both
resources, ranges, junk, anchors, pages, limits, filters, and a ``state`` written the way a
model would write it (an ``om_record`` naming the other resource, its threads, huge counts).
The calling patterns are a ``ToolNode`` inside ``create_agent`` (one model turn makes a batch
of tool calls), ``tool.invoke(tool_call, config)``, ``tool.invoke(args)`` and an LCEL chain.
Every result must hold nothing of the other resource and no call may raise.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from langchain_om.tools import create_recall_tool
from tests.helpers import FIXED, build_agent, build_graph

Scope = Literal["thread", "resource"]

MARKERS = {"alice": "ALICE", "bob": "BOB"}
ECHO_KEYS = {"error", "cursor", "hint", "note", "query", "next_cursor", "prev_cursor"}
"""Result fields that may repeat what the caller asked for (not stored data)."""
TOOL_CALLS_PER_TURN = 25


@dataclass
class FuzzReport:
    """What the fuzz saw: calls per pattern, items returned, leaks (must be 0)."""

    calls: dict[str, int] = field(default_factory=dict)
    items: int = 0
    leaks: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.calls.values())


def _turns(resource: str, thread: str, n: int) -> list[BaseMessage]:
    marker = MARKERS[resource]
    out: list[BaseMessage] = []
    for i in range(n):
        out.append(HumanMessage(f"{marker} secret {i} " + "words " * 25, id=f"{thread}-h{i}"))
        out.append(AIMessage(f"{marker} reply {i} " + "ok " * 10, id=f"{thread}-a{i}"))
    return out


def build_world(
    seed: int, scope: Scope = "thread"
) -> tuple[ObservationalMemory, dict[str, list[str]], list[str]]:
    """The memory with both resources' threads; ``(memory, threads by resource, message ids)``."""
    memory = ObservationalMemory(
        scope=scope,
        model=memory_model(),
        observation={"message_tokens": 300, "buffer_tokens": False},
        reflection={"observation_tokens": 100_000},
        retrieval=True,
        clock=lambda: FIXED,
        sleep=lambda s: None,
    )
    threads: dict[str, list[str]] = {}
    ids: list[str] = []
    for resource, marker in MARKERS.items():
        names = [f"{marker}-t{seed}-{k}" for k in range(2)]
        for name in names:
            turns = _turns(resource, name, 10)
            ids += [m.id or "" for m in turns]
            for i in range(0, len(turns), 2):
                memory.add_messages(name, turns[i : i + 2], resource_id=resource)
        threads[resource] = [*names, f"{marker}-agent{seed}"]
    return memory, threads, ids


def random_args(
    rng: random.Random, threads: dict[str, list[str]], ids: list[str]
) -> dict[str, Any]:
    """Arguments a model might write, valid for the tool's schema, spoofed state included."""
    all_threads = [t for ts in threads.values() for t in ts]

    def pick_id() -> str | None:
        roll = rng.random()
        if roll < 0.55:
            return rng.choice(ids)
        if roll < 0.7:
            return f"{rng.choice(ids)}:{rng.choice(ids)}"
        if roll < 0.8:
            return rng.choice(["", " ", "`x`", "current", "::", "langchain_om:indexed"])
        return None

    args: dict[str, Any] = {}
    args["mode"] = rng.choice(
        ["messages"] * 5 + ["threads", "threads", "search", "source", "observations"]
    )
    for key, value in (
        ("cursor", pick_id),
        ("thread_id", lambda: rng.choice([*all_threads, "current", "", "nope", None])),
        ("anchor", lambda: rng.choice(["start", "end"])),
        ("page", lambda: rng.randint(-4, 4)),
        ("limit", lambda: rng.choice([-1, 0, 1, 3, 20, 500])),
        ("detail", lambda: rng.choice(["low", "high"])),
        ("part_type", lambda: rng.choice(["text", "tool_call", "image", "zzz"])),
        ("tool_name", lambda: rng.choice(["recall", "lookup"])),
        ("part_index", lambda: rng.randint(-1, 3)),
        ("before", lambda: rng.choice(["2030-01-01", "garbage", "2026-11-30T09:00"])),
        ("after", lambda: rng.choice(["2020-01-01", "soon"])),
        ("query", lambda: rng.choice(["secret", "PIN", ""])),
        ("line", lambda: rng.choice(["secret", "reply", "said", "L000000", ""])),
        ("archive_id", lambda: rng.choice(["oma_0", "", "x"])),
        ("text", lambda: rng.choice(["secret", "words"])),
    ):
        if rng.random() < 0.45:
            args[key] = value()
    if rng.random() < 0.7:
        victim = rng.choice(list(MARKERS))
        args["state"] = {
            "om_record": {
                "thread_id": rng.choice([*all_threads, None]),
                "resource_id": victim,
                "observed_message_count": rng.choice([0, 5, 10_000]),
                "groups": [],
                "v": 1,
            },
            "messages": [{"type": "human", "content": f"spoof {rng.random()}", "id": "sp"}],
        }
    return {k: v for k, v in args.items() if v is not None}


def _entries(result: Any) -> dict[str, Any]:
    if isinstance(result, str):
        try:
            result = json.loads(result)
        except json.JSONDecodeError:
            return {"raw": result}
    if not isinstance(result, dict):
        return {"raw": result}
    return {k: v for k, v in result.items() if k not in ECHO_KEYS}


def check(report: FuzzReport, caller: str | None, result: Any, where: str) -> None:
    """Count the items returned; record a leak when one belongs to another resource.

    Another resource's data is its message texts (``BOB secret …``), its message ids and its
    thread ids. (Ids the model itself wrote into tool calls are the caller's own data.)
    """
    data = _entries(result)
    found: list[Any] = []
    for key in ("messages", "threads", "results"):
        if isinstance(data.get(key), list):
            report.items += len(data[key])
            found += data[key]
    text = json.dumps(data, default=str)
    for resource, marker in MARKERS.items():
        if resource == caller:
            continue
        leaked = any(f"{marker} {kind}" in text for kind in ("secret", "reply", "agent turn"))
        leaked = leaked or any(
            str(entry.get(k, "")).startswith(marker)
            for entry in found
            if isinstance(entry, dict)
            for k in ("id", "thread_id", "cursor")
        )
        if "error" not in (result if isinstance(result, dict) else data):
            leaked = leaked or str(data.get("thread_id", "")).startswith(marker)
        if leaked:
            report.leaks.append(f"{where}: caller {caller} got {marker}: {text[:300]}")


def _config(rng: random.Random, caller: str, threads: dict[str, list[str]]) -> RunnableConfig:
    thread = rng.choice(threads[caller])
    configurable: dict[str, Any] = {"thread_id": thread}
    if rng.random() < 0.6:
        configurable["resource_id" if rng.random() < 0.7 else "user_id"] = caller
    return {"configurable": configurable}


def run_fuzz(calls: int, seed: int = 0, scope: Scope = "thread") -> FuzzReport:
    """About ``calls`` recall calls spread over the four patterns; see the module docstring.

    ``scope="resource"`` runs it on memory that shares one log per resource.
    """
    rng = random.Random(seed)
    memory, threads, ids = build_world(seed, scope)
    recall = create_recall_tool(memory)
    report = FuzzReport()
    agents = {resource: _agent(memory, rng, threads, ids) for resource in MARKERS}
    for resource, marker in MARKERS.items():  # the agent threads, archived
        cfg: RunnableConfig = {
            "configurable": {"thread_id": threads[resource][-1], "resource_id": resource}
        }
        for i in range(8):
            text = f"{marker} agent turn {i} " + "words " * 40
            agents[resource].invoke({"messages": [HumanMessage(text)]}, cfg)

    def direct_tool_call() -> None:
        caller = rng.choice(list(MARKERS))
        call = {
            "name": "recall",
            "args": random_args(rng, threads, ids),
            "id": "c",
            "type": "tool_call",
        }
        out = recall.invoke(call, _config(rng, caller, threads))
        check(report, caller, out.artifact if isinstance(out, ToolMessage) else out, "tool_call")

    def direct_args() -> None:
        caller = rng.choice([*MARKERS, None])
        args = random_args(rng, threads, ids)
        if caller is None:
            out = recall.invoke(args)
        else:
            out = recall.invoke(args, _config(rng, caller, threads))
        check(report, caller, out, "args")

    def lcel() -> None:
        caller = rng.choice(list(MARKERS))
        chain = RunnableLambda(lambda x: x) | recall
        out = chain.invoke(random_args(rng, threads, ids), _config(rng, caller, threads))
        check(report, caller, out, "lcel")

    def tool_node() -> None:
        caller = rng.choice(list(MARKERS))
        cfg = _config(rng, caller, threads)
        cfg["configurable"]["thread_id"] = threads[caller][-1]
        state = agents[caller].invoke({"messages": [HumanMessage("recall please")]}, cfg)
        for message in state["messages"]:
            if isinstance(message, ToolMessage) and message.name == "recall":
                if message.tool_call_id.startswith("fz-") and message.status != "error":
                    check(report, caller, message.content, "tool_node")
        report.calls["tool_node"] = report.calls.get("tool_node", 0) + TOOL_CALLS_PER_TURN - 1

    patterns: list[tuple[str, Callable[[], None]]] = [
        ("tool_call", direct_tool_call),
        ("args", direct_args),
        ("lcel", lcel),
        ("tool_node", tool_node),
    ]
    while report.total < calls:  # the pattern with the fewest calls goes next
        name, fn = min(patterns, key=lambda p: (report.calls.get(p[0], 0), rng.random()))
        report.calls[name] = report.calls.get(name, 0) + 1
        fn()
    return report


def _agent(
    memory: ObservationalMemory,
    rng: random.Random,
    threads: dict[str, list[str]],
    ids: list[str],
) -> Any:
    """An agent whose model answers "recall please" with a batch of random recall calls."""

    def reply(messages: list[BaseMessage], info: RecordedCall) -> AIMessage | str:
        last = messages[-1]
        if isinstance(last, HumanMessage) and last.text == "recall please":
            calls = [
                {"name": "recall", "args": random_args(rng, threads, ids), "id": f"fz-{k}"}
                for k in range(TOOL_CALLS_PER_TURN)
            ]
            return AIMessage("", tool_calls=calls)
        return f"Answer {info.index}: " + "fine " * 10

    return create_agent(
        FunctionChatModel(function=reply),
        [],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )


# -- branches: a checkpoint fork's recall holds only that branch --------------------------------

ORIGINAL_AFTER_FORK = re.compile(r"\borig-(1[89]|2[0-3])\b")
"""Tags of the original branch's messages after the fork point (its turns 18-23)."""
FORK = re.compile(r"\bfork-\d\d\b")
"""Tags of the fork's own messages."""
BRANCH_WORDS = ["alpha", "beta", "gamma", "delta", "river", "stone", "orig", "fork", "topic"]


@dataclass
class BranchReport:
    """Calls per branch, items they returned and results naming the other branch (must be 0)."""

    calls: dict[str, int] = field(default_factory=dict)
    items: int = 0
    leaks: list[str] = field(default_factory=list)


def _branch_turn(tag: str, i: int) -> HumanMessage:
    words = "alpha beta river" if tag == "orig" else "gamma delta stone"
    return HumanMessage(
        f"{tag}-{i:02d} says {words} topic {i} " + "words " * 25, id=f"{tag}-{i:02d}"
    )


def _branch_reply(messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
    last = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
    return AIMessage(f"reply to {last.text[:7]} " + "ok " * 12, id=f"{last.id}-r")


def build_branches(
    memory: ObservationalMemory, door: str, thread: str | None = None, resource: str = "u"
) -> tuple[Any, dict[str, Any]]:
    """A thread of 48 messages forked at message 36: ``(app, {"orig": state, "fork": state})``.

    Both branches observe after the fork, so each has archived messages the other lacks.
    """
    actor = FunctionChatModel(function=_branch_reply)
    app = build_agent(memory, actor) if door == "agent" else build_graph(memory, actor)
    cfg: RunnableConfig = {
        "configurable": {"thread_id": thread or f"branches-{door}", "resource_id": resource}
    }

    def run(tag: str, turns: range, config: RunnableConfig) -> None:
        for i in turns:
            app.invoke({"messages": [_branch_turn(tag, i)]}, config)
            memory.wait_for_background()
            config = cfg

    run("orig", range(18), cfg)
    at_fork = app.get_state(cfg)  # 36 messages
    run("orig", range(18, 24), cfg)
    original = app.get_state(cfg).values
    run("fork", range(6), at_fork.config)
    forked = app.get_state(cfg).values
    cursor = at_fork.values["om_record"]["observed_message_count"]
    for state in (original, forked):  # each branch archived messages of its own
        assert state["om_record"]["observed_message_count"] > cursor
    assert len(forked["om_record"]["branches"]) == 2
    return app, {"orig": original, "fork": forked}


def _branch_args(rng: random.Random, ids: list[str], search: bool) -> dict[str, Any]:
    """A random search or page query (cursors from both branches included)."""
    if search and rng.random() < 0.5:
        query = " ".join(rng.sample(BRANCH_WORDS, rng.randint(1, 3)))
        if rng.random() < 0.3:
            query += f" {rng.choice(ids)}"
        return {
            "mode": "search",
            "query": query,
            "limit": rng.choice([3, 10, 20]),
            "page": rng.choice([1, 1, 2]),
        }
    args: dict[str, Any] = {
        "mode": "messages",
        "limit": rng.choice([2, 5, 10, 50]),
        "page": rng.choice([1, 2, -1, -2]),
    }
    if rng.random() < 0.6:
        args["cursor"] = rng.choice(ids)
    else:
        args["anchor"] = rng.choice(["start", "end"])
    args["detail"] = rng.choice(["low", "high"])
    return args


def run_branch_fuzz(
    memory: ObservationalMemory,
    door: str,
    queries: int,
    seed: int = 0,
    *,
    search: bool = True,
    thread: str | None = None,
    resource: str = "u",
) -> BranchReport:
    """``queries`` random search and page queries on each branch of a fork at message 36/48.

    ``search=False`` asks page queries only (a store without a vector index). Search covers
    every thread of ``resource``: a store shared by several runs needs one resource per run
    (another run's thread holds ``fork-`` messages of its own, which are no leak).
    """
    rng = random.Random(seed)
    _, states = build_branches(memory, door, thread, resource)
    recall = create_recall_tool(memory)
    cfg: RunnableConfig = {
        "configurable": {"thread_id": thread or f"branches-{door}", "resource_id": resource}
    }
    ids = [f"orig-{i:02d}" for i in range(24)] + [f"fork-{i:02d}" for i in range(6)]
    ids += [f"{i}-r" for i in ids]
    report = BranchReport()
    for branch, other in (("orig", FORK), ("fork", ORIGINAL_AFTER_FORK)):
        for _ in range(queries):
            args = _branch_args(rng, ids, search)
            result = json.loads(recall.invoke({**args, "state": states[branch]}, cfg))
            report.calls[branch] = report.calls.get(branch, 0) + 1
            found = result.get("messages") or result.get("results") or []
            report.items += len(found)
            shown = json.dumps(found)
            if other.search(shown):
                report.leaks.append(f"{branch} {args}: {shown[:300]}")
    return report
