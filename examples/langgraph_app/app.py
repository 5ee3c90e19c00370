"""A LangGraph Platform / ``langgraph dev`` app with observational memory.

The server brings the checkpointer and the store (PostgreSQL on the platform, in-memory under
``langgraph dev``), so the graphs here are exported without them and the memory is built
without storage: inside every run memory keeps its archive, buffered observations and search
documents in the store the server gives the run (``runtime.store``), and its record in the
thread's checkpoint.

Two graphs, one per front door: ``agent`` (a ``create_agent`` agent with the memory
middleware) and ``graph`` (a ``StateGraph`` with ``add_observational_memory``). Both use
scripted models so the app runs offline; with real models write e.g.
``create_agent("openai:gpt-5-mini", ...)`` and
``ObservationalMemory(model="google/gemini-2.5-flash")``.

    langgraph dev --config examples/langgraph_app/langgraph.json   # from the repository root
    cd examples/langgraph_app && langgraph dev                     # or from this folder
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_om import (
    ObservationalMemory,
    ObservationalMemoryMiddleware,
    add_observational_memory,
)
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model


def build_memory() -> ObservationalMemory:
    """Memory without storage: inside a run it uses the server's store and checkpointer."""
    return ObservationalMemory(
        model=memory_model(),  # the Observer and Reflector (scripted here)
        # Small thresholds so the demo observes within a few turns (defaults: 30k / 40k).
        observation={"message_tokens": 150},
        reflection={"observation_tokens": 400},
    )


def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
    """The scripted assistant: says how many observations its memory shows it."""
    memory_lines = [ln for m in messages if m.type == "system" for ln in m.text.splitlines()]
    remembered = sum(line.startswith("* ") for line in memory_lines)
    return f"Got it ({remembered} things remembered): {messages[-1].text[:40]}"


# No checkpointer, no store: the server supplies both (a graph that brings its own fails to
# load under ``langgraph dev`` and on the platform).
memory = build_memory()
agent = create_agent(
    FunctionChatModel(function=reply),
    [],
    middleware=[ObservationalMemoryMiddleware(memory)],
)

graph_memory = build_memory()
llm = FunctionChatModel(function=reply)
builder = StateGraph(MessagesState)
builder.add_node("model", lambda state: {"messages": [llm.invoke(state["messages"])]})
builder.add_edge(START, "model")
builder.add_edge("model", END)
graph = add_observational_memory(builder, graph_memory, before="model").compile()
