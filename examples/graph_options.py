"""The StateGraph door with the options that act around your model node.

``add_observational_memory`` puts memory in front of your model node; three options act where
memory meets that node, as they do in the ``create_agent`` middleware:

* ``observation.observe_on_context_overflow`` (on by default): when your model node raises
  LangChain's ``ContextOverflowError``, memory observes what is pending and runs the node once
  more on the smaller window. Let the error propagate from the node (wrap a provider's own
  "prompt too long" error in it); a compiled subgraph as the model node is retried whole.
* ``observation.use_usage_metadata``: the gate also triggers on the provider-reported usage of
  the last AI message (``usage_metadata``) when it is larger than memory's estimate.
* ``observation.buffer_on_idle``: an ``om_idle`` node where the run ends buffers what is left
  of the window in the background, so the next turn finds it observed.

Runs offline in seconds with scripted models, on a SQLite file.

    python examples/graph_options.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_om import ObservationalMemory, add_observational_memory
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model


def small_context_model(messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
    """A model whose context holds at most six conversation messages."""
    conversation = [m for m in messages if m.type != "system"]
    if len(conversation) > 6:
        raise ContextOverflowError("prompt is too long: maximum context length exceeded")
    return AIMessage("Noted.")


def reporting_model(messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
    """A model whose provider reports a far larger prompt than memory estimates."""
    usage: Any = {"input_tokens": 8_990, "output_tokens": 10, "total_tokens": 9_000}
    return AIMessage("Noted.", usage_metadata=usage)


def build(memory: ObservationalMemory, model: FunctionChatModel) -> Any:
    """Your graph: a model node and an edge to the end; memory goes in front of the node."""
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    add_observational_memory(builder, memory, before="model")
    return builder.compile(checkpointer=memory.checkpointer, store=memory.store)


def turn(graph: Any, thread: str, text: str) -> None:
    graph.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread}})


events: list[Any] = []
with tempfile.TemporaryDirectory() as folder:
    memory = ObservationalMemory.from_sqlite(
        str(Path(folder) / "memory.db"),
        model=memory_model(),
        observation={
            "message_tokens": 2_000,  # far above these short turns
            "buffer_tokens": 0.2,
            "buffer_on_idle": True,
            "use_usage_metadata": True,
        },
        on_debug_event=events.append,
    )

    # 1. A context overflow in the model node: memory frees context, the node runs again.
    overflowing = build(memory, FunctionChatModel(function=small_context_model))
    for i in range(5):
        turn(overflowing, "trip", f"Stop {i}: the hotel in town {i} is the Grand Hotel {i}.")
    overflows = [e for e in events if e.type == "data-om-context-overflow"]
    freed = overflows[0].removed_messages
    print("overflows recovered:", len(overflows), "· messages freed:", freed)

    # 2. The provider reports 9 000 prompt tokens: over the 2 000 threshold, memory observes.
    reporting = build(memory, FunctionChatModel(function=reporting_model))
    turn(reporting, "usage", "I am planning a trip to Lisbon with my sister Ana.")
    turn(reporting, "usage", "We land in Lisbon on Friday and stay four nights.")
    state = reporting.get_state({"configurable": {"thread_id": "usage"}}).values
    observed = memory.read_state(state)
    print("observed on reported usage:", observed["observed_message_count"], "messages")

    # 3. buffer_on_idle: each run ends in om_idle, which buffers the rest in the background.
    print("om_idle in the graph:", "om_idle" in overflowing.get_graph().nodes)
    memory.wait_for_background()
    buffered = [e for e in events if e.type == "data-om-buffering-end"]
    print("idle buffers written:", len(buffered) > 0)
    memory.close()
