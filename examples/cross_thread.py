"""Memory across a user's threads, two ways: resource scope, or thread scope with recall.

Runs offline with scripted models.

    python examples/cross_thread.py
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import FunctionChatModel, memory_model


def run(memory: ObservationalMemory, thread: str, text: str) -> FunctionChatModel:
    """One user turn in ``thread`` of the user ``zelda``; returns the agent's model."""
    model = FunctionChatModel(function=lambda messages, info: "Noted.")
    agent = create_agent(
        model,
        memory.tools,  # the recall tool when retrieval is on
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )
    config = {"configurable": {"thread_id": thread, "resource_id": "zelda"}}
    agent.invoke({"messages": [HumanMessage(text)]}, config)
    return model


small = {"message_tokens": 120, "buffer_tokens": False}  # observe after a few turns

# 1. Resource scope: one observation log shared by every thread of the user.
shared = ObservationalMemory(model=memory_model(), scope="resource", observation=small)
run(shared, "monday", "I moved to Oslo last week, and I'm looking for a good bakery nearby.")
for i in range(3):
    run(shared, "monday", f"Another thing about my week, number {i}, to talk a little more.")
model = run(shared, "tuesday", "Which city do I live in?")  # a new conversation
memory_text = model.calls[0].messages[0].text  # the system message the agent's model received
print("resource scope, new thread sees Oslo:", "Oslo" in memory_text)

# 2. Thread scope + recall across the user's threads: each thread keeps its own log; the agent
#    can search the other threads with the recall tool when it needs to.
separate = ObservationalMemory(
    model=memory_model(), observation=small, retrieval={"scope": "resource"}
)
run(separate, "monday", "I moved to Oslo last week, and I'm looking for a good bakery nearby.")
model = run(separate, "tuesday", "Which city do I live in?")
print("thread scope + recall, tools offered:", model.calls[0].tool_names)
