"""One memory, a schema per tenant: dynamic extractor instructions and schemas.

An extractor's ``instructions`` and ``schema`` may be functions of the run context: the
thread, the resource, the agent's model, the memory and the request's ``configurable``. Here
two tenants of one app share a memory; the ``tenant`` in each run's config picks the typed
value kept for that thread. Offline: the scripted model answers the structured calls.

    python examples/per_tenant_schema.py
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel

from langchain_om import Extractor, ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model


class Trip(BaseModel):
    destination: str | None


class Todo(BaseModel):
    tasks: list[str]


def schema(ctx: Mapping[str, Any]) -> type[BaseModel]:
    """The tenant named in the run's configurable picks the schema."""
    return Todo if ctx["configurable"].get("tenant") == "todo" else Trip


def instructions(ctx: Mapping[str, Any]) -> str:
    return f"What the {ctx['configurable'].get('tenant', 'travel')} app keeps for this user."


base = memory_model(words=30).function
assert base is not None
observer = base


def scripted(messages: list[BaseMessage], info: RecordedCall) -> Any:
    """The Observer's answers; the structured calls filled by rules, as a model would."""
    if info.structured_output is None:
        return observer(messages, info)
    new = messages[-1].text.split("## New observations\n\n")[1]
    if info.structured_output.name == "Todo":
        return {"tasks": sorted(set(re.findall(r"remind me to (\w+)", new, re.I)))}
    return {"destination": next(iter(re.findall(r"trip to (\w+)", new, re.I)), None)}


memory = ObservationalMemory(
    model=FunctionChatModel(function=scripted),
    observation={
        "message_tokens": 300,  # small, to observe quickly
        "buffer_tokens": False,
        "extract": [Extractor("App Value", instructions, schema=schema)],
    },
)
agent = create_agent(
    FunctionChatModel(function=lambda messages, info: "Noted."),
    middleware=[ObservationalMemoryMiddleware(memory)],
    checkpointer=memory.checkpointer,
)
runs = {
    "travel": ("ana", "I'm planning a trip to Kyoto in May."),
    "todo": ("ben", "Remind me to call the plumber."),
}
for tenant, (user, text) in runs.items():
    config: RunnableConfig = {"configurable": {"thread_id": user, "tenant": tenant}}
    for i in range(4):
        filler = " Some more detail about it." * 10
        agent.invoke({"messages": [HumanMessage(f"{text}{filler} ({i})")]}, config)
    record = memory.read_state(agent.get_state(config).values)
    print(f"{tenant} ({user}): {record['extracted'].get('app-value')}")
memory.close()
