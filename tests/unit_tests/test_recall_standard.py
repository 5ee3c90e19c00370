"""The recall tool against the langchain-tests standard suites for tools."""

from __future__ import annotations

from functools import cache
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from langchain_om import ObservationalMemory
from langchain_om.testing import FunctionChatModel
from langchain_om.tools import create_recall_tool

OBSERVER_REPLY = (
    "<observations>\nDate: Nov 30, 2026\n* 🔴 (10:00) User asked about the weather in Oslo\n"
    "</observations>\n<current-task>weather</current-task>"
)


@cache
def observed_memory() -> ObservationalMemory:
    """A memory whose archive was filled by a real observation cycle (scripted Observer)."""
    observer = FunctionChatModel(function=lambda messages, info: OBSERVER_REPLY)
    memory = ObservationalMemory(model=observer, retrieval=True)
    call = {"name": "weather", "args": {"city": "Oslo"}, "id": "c1"}
    memory.observe(
        thread_id="std-thread",
        resource_id="std-user",
        messages=[
            HumanMessage("What's the weather in Oslo?", id="std-1"),
            AIMessage("", tool_calls=[call], id="std-2"),
            ToolMessage("Snow, -3°C", tool_call_id="c1", name="weather", id="std-3"),
            AIMessage("It is snowing in Oslo, -3°C.", id="std-4"),
            HumanMessage("Thanks!", id="std-5"),
        ],
    )
    return memory


class _RecallToolSetup:
    @property
    def tool_constructor(self) -> Any:
        return create_recall_tool

    @property
    def tool_constructor_params(self) -> dict[str, Any]:
        return {
            "memory": observed_memory(),
            "thread_id": "std-thread",
            "resource_id": "std-user",
        }

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"cursor": "std-2", "limit": 3, "detail": "high"}


class TestRecallToolUnit(_RecallToolSetup, ToolsUnitTests):
    pass


class TestRecallToolIntegration(_RecallToolSetup, ToolsIntegrationTests):
    pass


def test_the_example_call_reads_the_observed_messages() -> None:
    tool = create_recall_tool(observed_memory(), thread_id="std-thread", resource_id="std-user")
    message = tool.invoke(
        {"type": "tool_call", "id": "x", "name": "recall", "args": {"cursor": "std-2", "limit": 3}}
    )
    assert [m["id"] for m in message.artifact["messages"]] == ["std-2", "std-3", "std-4"]
