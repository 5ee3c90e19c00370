"""The recall tool answers every argument: a page, or a clear error string, never an exception."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool

from langchain_om.tools import create_recall_tool
from tests.helpers import make_memory

ARGS: list[dict[str, Any]] = [
    {"mode": "bogus"},
    {"page": "many"},
    {"limit": -5},
    {"cursor": "no-such-id"},
    {"cursor": "\x00\ud83d"},
    {"mode": "search"},
    {"mode": "search", "query": ""},
    {"thread_id": "a.b@c.d", "anchor": "end"},
    {"mode": "threads", "before": "yesterday"},
    {"page": 0},
    {"part_index": 10**9, "cursor": "h1"},
    {"unknown": 1},
]


@pytest.fixture(scope="module")
def tool() -> BaseTool:
    memory = make_memory(observation={"message_tokens": 50, "buffer_tokens": False})
    memory.observe(
        thread_id="t1",
        resource_id="u1",
        messages=[HumanMessage("I live in Porto.", id="h1"), AIMessage("Noted.", id="a1")],
    )
    return create_recall_tool(memory)


@pytest.mark.parametrize("args", ARGS, ids=[json.dumps(a)[:40] for a in ARGS])
def test_recall_answers_any_argument(tool: BaseTool, args: dict[str, Any]) -> None:
    out = tool.invoke(args, {"configurable": {"thread_id": "t1", "resource_id": "u1"}})
    assert isinstance(out, str) and out
    if out.lstrip().startswith("{"):
        data = json.loads(out)
        assert "error" in data or "messages" in data or "threads" in data or "results" in data
    else:
        assert "recall" in out.lower()
