"""When the agent's model rejects a prompt as too long, memory frees context and retries.

``observation.observe_on_context_overflow`` (on by default) catches LangChain's
``ContextOverflowError`` from the agent's model call (here in a ``create_agent`` agent; a
``StateGraph`` with ``add_observational_memory`` does the same for its model node, see
``examples/graph_options.py``), observes
what is pending whatever the threshold, and retries the call once with the smaller window.
``observe(force=True)`` does the same by hand, and an Observer input above the largest
``ModelByInputTokens`` tier fails its cycle (reason ``tier-exceeded``) while the turn goes on.

    python examples/context_overflow.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_om import ModelByInputTokens, ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model


def small_context_model(messages: list[BaseMessage], info: RecordedCall) -> str:
    """An agent model whose context holds at most six conversation messages."""
    if len([m for m in messages if m.type != "system"]) > 6:
        raise ContextOverflowError("prompt is too long: maximum context length exceeded")
    return "Noted."


events: list[Any] = []
with tempfile.TemporaryDirectory() as folder:
    memory = ObservationalMemory.from_sqlite(
        str(Path(folder) / "memory.db"),
        model=memory_model(),
        observation={"message_tokens": 30_000, "buffer_tokens": False},  # far above these turns
        on_debug_event=events.append,
    )
    agent: Any = create_agent(
        FunctionChatModel(function=small_context_model),
        [],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )
    config: Any = {"configurable": {"thread_id": "trip"}}
    for i in range(5):
        agent.invoke({"messages": [HumanMessage(f"Stop {i}: the hotel in town {i}.")]}, config)
    overflow = [e for e in events if e.type == "data-om-context-overflow"]
    print("overflows recovered:", len(overflow), "· messages freed:", overflow[0].removed_messages)
    print("observed:", memory.status(thread_id="trip").record["observed_message_count"])

    # observe(force=True): observe below the threshold, by hand (standalone threads).
    memory.add_messages("notes", [HumanMessage("Pack the blue raincoat.")])
    print("forced observation:", "raincoat" in memory.observe(thread_id="notes").observations)

    # An Observer tier too small for any prompt: the cycle fails, the agent's turn goes on.
    tiny = ObservationalMemory.from_sqlite(
        str(Path(folder) / "tiny.db"),
        model=ModelByInputTokens(up_to={200: memory_model()}),
        observation={"message_tokens": 100, "buffer_tokens": False},
        on_debug_event=events.append,
    )
    tiny_agent: Any = create_agent(
        FunctionChatModel(function=lambda m, i: "Noted."),
        [],
        middleware=[ObservationalMemoryMiddleware(tiny)],
        checkpointer=tiny.checkpointer,
        store=tiny.store,
    )
    out = tiny_agent.invoke({"messages": [HumanMessage("A long note. " * 40)]}, config)
    reasons = {e.reason for e in events if e.type == "data-om-observation-failed"}
    print("turn answered:", out["messages"][-1].content, "· failure reasons:", sorted(reasons))
    memory.close()
    tiny.close()
