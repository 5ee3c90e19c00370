"""Helpers shared by the unit and the integration tests.

Paths, a settable clock, one way to read a thread's archive, one memory factory, the
PostgreSQL test database, and the small
agent and graph (with a tool) that the front-door tests drive. Test modules import these
instead of keeping their own copies.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langchain_om import (
    ObservationalMemory,
    ObservationalMemoryMiddleware,
    add_observational_memory,
)
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from langchain_om.tools import create_recall_tool

ROOT = Path(__file__).resolve().parents[1]
"""The repository root (examples/, benchmarks/, notebooks/ live there)."""

FIXED = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
"""The instant :func:`make_memory`'s clock always returns."""


class Clock:
    """A clock the test moves by hand: ``clock.now += timedelta(...)``."""

    def __init__(self, now: datetime = FIXED) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


# -- memories and their archives ---------------------------------------------------------------


def memory_options(**overrides: Any) -> dict[str, Any]:
    """Options of a memory on the scripted ``memory_model()``: small windows, a fixed clock,
    no sleeps.

    Keyword arguments replace the defaults whole (``observation={...}`` replaces the
    observation options, it does not merge into them).
    """
    options: dict[str, Any] = {
        "model": memory_model(),
        "observation": {"message_tokens": 2_000, "buffer_tokens": False},
        "reflection": {"observation_tokens": 3_000},
        "clock": lambda: FIXED,
        "sleep": lambda s: None,
    }
    options.update(overrides)
    return options


def make_memory(**overrides: Any) -> ObservationalMemory:
    """A memory with :func:`memory_options` (``overrides`` replace them whole)."""
    return ObservationalMemory(**memory_options(**overrides))


# -- PostgreSQL ---------------------------------------------------------------------------------

POSTGRES_URL = os.environ.get(
    "LANGCHAIN_OM_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
"""The test database (trust auth); ``LANGCHAIN_OM_POSTGRES_URL`` names another."""


def require_postgres() -> None:
    """Skip the test without psycopg or a reachable server (fail instead in CI)."""
    psycopg = pytest.importorskip("psycopg")  # the optional "postgres" extra
    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is required in CI at {POSTGRES_URL}: {exc}")
        pytest.skip(f"no PostgreSQL at {POSTGRES_URL}")


def archived(memory: ObservationalMemory, thread_id: str) -> list[BaseMessage]:
    """The messages archived for a thread, oldest first."""
    return memory.archived_messages(thread_id)


def archived_ids(memory: ObservationalMemory, thread_id: str) -> list[str]:
    """The ids of the messages archived for a thread, oldest first."""
    return [m.id or "" for m in archived(memory, thread_id)]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write ``rows`` as a JSON-lines file (the CLI's replay format) and return its path."""
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


# -- a small agent and graph with a tool (the front-door tests) --------------------------------

APP_OPTIONS: dict[str, Any] = {
    "observation": {"message_tokens": 600, "buffer_tokens": False},
    "reflection": {"observation_tokens": 500},
}
"""Memory options small enough that a few dozen turns observe and reflect."""


@tool
def lookup(query: str) -> str:
    """Look a query up."""
    return f"Results for {query}: " + "lorem ipsum " * 15


def actor_reply(messages: list[BaseMessage], info: RecordedCall) -> AIMessage | str:
    """Call the tool on every third user turn, then answer."""
    last = messages[-1]
    if isinstance(last, HumanMessage) and "use the tool" in last.text:
        call = {"name": "lookup", "args": {"query": last.text[:20]}, "id": f"call-{info.index}"}
        return AIMessage("", tool_calls=[call])
    return f"Answer {info.index}: noted, " + "and more " * 8


def user_turn(i: int) -> str:
    """User turn ``i``; every third one asks for the tool."""
    return f"Turn {i}: please use the tool" if i % 3 == 0 else f"Turn {i}: tell me more " * 3


def expected_messages(turns: int) -> int:
    """How many messages ``turns`` user turns produce with :func:`actor_reply`."""
    return sum(4 if i % 3 == 0 else 2 for i in range(turns))


def check_invariants(memory: ObservationalMemory, thread_id: str, window: list[BaseMessage]) -> int:
    """Every message is archived or in the window, once; no tool pair is split."""
    window = [m for m in window if m.type != "system"]
    stored = archived(memory, thread_id)
    everything = stored + window
    ids = [m.id for m in everything]
    assert len(ids) == len(set(ids))
    for part in (stored, window):
        calls = {c["id"] for m in part if isinstance(m, AIMessage) for c in m.tool_calls}
        results = {m.tool_call_id for m in part if isinstance(m, ToolMessage)}
        assert results <= calls, "a tool result was separated from its call"
    assert not isinstance(window[0], ToolMessage)
    return len(everything)


def build_agent(
    memory: ObservationalMemory, actor: BaseChatModel, tools: Sequence[Any] = (lookup,)
) -> Any:
    """A ``create_agent`` agent with ``tools`` (the lookup tool) and the memory middleware."""
    return create_agent(
        actor,
        list(tools),
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )


def build_graph(
    memory: ObservationalMemory, actor: FunctionChatModel, *, storage: bool = True
) -> Any:
    """A hand-built model/tools ``StateGraph`` with memory added by ``add_observational_memory``.

    ``storage=False`` compiles it without checkpointer and store, as a LangGraph Platform app
    exports it (the server attaches its own).
    """
    llm = actor.bind_tools([lookup])
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda s: {"messages": [llm.invoke(s["messages"])]})
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "model")
    add_observational_memory(builder, memory)
    if not storage:
        return builder.compile()
    return builder.compile(checkpointer=memory.checkpointer, store=memory.store)


# -- the lifecycle invariant (issue: memory never forgets silently) -----------------------------


def visible_messages(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Messages of a window that were sent (no system message, no time-gap reminder)."""
    return [
        m for m in messages if m.type != "system" and not (m.id or "").startswith("__temporal_gap_")
    ]


class LifecycleChecker:
    """Checks, after every step, that memory lost, duplicated or reordered no message.

    Feed it what each step sends (:meth:`sent`) and then the state after the step
    (:meth:`check`): every message sent is in the window or the archive exactly once, in order;
    a re-sent id still in the window replaces that message, any other re-sent id counts as a
    new message (an edit observed again); messages the front door added during the step (the
    agent's replies) may only follow what was sent. Only a message an accepted observation
    group covers leaves the window; the memory context stays within ``limit`` tokens; the
    cursor never moves back.

    Args:
        limit: the largest observation log allowed, in tokens.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.expected: list[str] = []
        self.window_ids: set[str] = set()
        self.cursor = 0
        self.steps = 0

    def sent(self, messages: list[BaseMessage]) -> None:
        """Note the messages a step sends (before the step runs)."""
        for m in messages:
            assert m.id, "the lifecycle sends messages with ids"
            if m.id not in self.window_ids:
                self.expected.append(m.id)
                self.window_ids.add(m.id)

    def check(
        self,
        *,
        archive: list[BaseMessage],
        window: list[BaseMessage],
        record: Any,
        where: str,
        shown: int | None = None,
    ) -> None:
        """Assert the invariants after a step (``where`` names the step in failures).

        ``shown`` is the size of the observations the memory context shows the agent, in tokens.
        """
        self.steps += 1
        window = visible_messages(window)
        archive = visible_messages(archive)
        actual = [m.id or "" for m in archive] + [m.id or "" for m in window]
        head = actual[: len(self.expected)]
        assert head == self.expected, (
            f"{where}: messages lost, duplicated or reordered: {self.expected} -> {actual}"
        )
        added = actual[len(self.expected) :]
        assert not set(added) & set(self.expected), f"{where}: an added message repeats an id"
        self.expected = actual
        self.window_ids = {m.id or "" for m in window}
        observed = int(record["observed_message_count"]) if record else 0
        assert observed == len(archive), f"{where}: archive and cursor disagree"
        assert observed >= self.cursor, f"{where}: the cursor moved back"
        self.cursor = observed
        if archive:
            ids = [m.id for m in archive]
            last = {i: n for n, i in enumerate(ids)}
            ends = [last.get(g["range"][1], -1) for g in record["groups"] if g.get("range")]
            texts = [g for g in record["groups"] if g["text"].strip()]
            assert texts and ends, f"{where}: messages left the window without observations"
            assert max(ends) == len(archive) - 1, (
                f"{where}: archived messages not covered by an accepted observation group"
            )
        if shown is not None:
            assert shown <= self.limit, f"{where}: memory context {shown} > {self.limit} tokens"


# -- semantic recall (shared by the in-memory, SQLite and PostgreSQL tests) ----------------------

SEARCH_FACTS = [
    "My sister's wedding is in Lisbon next June",
    "The car needs new winter tyres before December",
    "Our cat Miso only eats salmon pâté",
]
"""Facts a user told memory; :func:`search_facts` finds one by a paraphrase, none by noise."""


def search_facts(memory: ObservationalMemory) -> tuple[dict[str, Any], dict[str, Any]]:
    """Observe :data:`SEARCH_FACTS`, then search ``(a paraphrase, a nonsense query)``."""
    messages = [HumanMessage(fact, id=f"fact-{i}") for i, fact in enumerate(SEARCH_FACTS)]
    memory.observe(thread_id="facts", resource_id="u-search", messages=messages)
    tool = create_recall_tool(memory)
    cfg: RunnableConfig = {"configurable": {"thread_id": "facts", "resource_id": "u-search"}}

    def search(query: str) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(tool.invoke({"mode": "search", "query": query}, cfg))
        return result

    return search("When is my sister's wedding?"), search("xyzzy plugh quantum accordion")


# -- resource scope: an Observer that answers per thread ----------------------------------------


def thread_observer_reply(messages: list[BaseMessage], info: RecordedCall) -> str:
    """A scripted multi-thread Observer: one ``<thread id>`` block per thread it was sent.

    Each block holds one line per user message of that thread (its first 12 words), under the
    fixed date of :data:`FIXED`, so tests can find a fact in the shared log.
    """
    prompt = messages[-1].text if messages else ""
    new = prompt.split("## New Messages to Observe", 1)[-1]
    blocks = re.findall(r'<thread id="([^"]+)">(.*?)</thread>', new, re.DOTALL)
    if not blocks:
        blocks = [("", new)]
    out = []
    for label, body in blocks:
        said = re.findall(r"^User(?: \([^)]*\))?: (.*)$", body, re.MULTILINE)
        lines = [f"* 🔴 (09:00) User said: {' '.join(s.split()[:12])}" for s in said]
        text = "Date: Nov 30, 2026\n" + "\n".join(lines or ["* 🟡 (09:00) (nothing new)"])
        out.append(f'<thread id="{label}">\n{text}\n</thread>' if label else text)
    return "<observations>\n" + "\n".join(out) + "\n</observations>"


def thread_memory_reply(messages: list[BaseMessage], info: RecordedCall) -> str:
    """Observer as :func:`thread_observer_reply`; as Reflector, keeps each thread's first line
    per date (and its ``<thread id>`` and ``Date:`` lines)."""
    prompt = messages[-1].text if messages else ""
    if "## Observations to Condense" not in prompt:
        return thread_observer_reply(messages, info)
    body = prompt.split("## Observations to Condense", 1)[1].split("\n## ", 1)[0]
    kept: list[str] = []
    first = False
    for line in body.splitlines():
        if line.startswith("<thread id=") or line.startswith("Date:"):
            kept.append(line)
            first = True
        elif line.startswith("</thread>"):
            kept.append(line)
        elif line.startswith("* ") and first:
            kept.append(line)
            first = False
    return "<observations>\n" + "\n".join(kept) + "\n</observations>"


# -- varied, fact-carrying text for long scripted conversations ---------------------------------

FACT_NAMES = (
    "Alice Bruno Chiara Dmitri Elena Farid Greta Hiro Ines Jonas Kavya Lukas Mira Nadia Oscar "
    "Priya Quinn Rosa Samir Tomasz Ulla Viktor Wanda Yusuf Zora"
).split()
FACT_PLACES = (
    "Lisbon Porto Oslo Kyoto Lima Dakar Quito Tunis Riga Cork Bergen Lyon Turin Krakow Malmo "
    "Ghent Split Perth Hobart Nantes"
).split()
FACT_THINGS = (
    "bicycle piano garden kitchen ticket laptop camera violin kayak lantern notebook teapot "
    "backpack telescope guitar scooter"
).split()
FACT_VERBS = "bought repaired painted borrowed sold shipped ordered returned visited booked".split()
FACT_ADJECTIVES = "red quiet heavy old narrow bright wooden small spare rented".split()
"""Word lists for scripted turns that say something an Observer can ground its lines in."""


class Overflowing:
    """An agent model whose call overflows once its prompt holds more than ``limit`` messages."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.sizes: list[int] = []

    def __call__(self, messages: list[BaseMessage], info: RecordedCall) -> str:
        conversation = [m for m in messages if m.type != "system"]
        self.sizes.append(len(conversation))
        if len(conversation) > self.limit:
            raise ContextOverflowError("prompt is too long: maximum context length exceeded")
        return "Noted."
