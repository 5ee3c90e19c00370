"""A second memory that reads a user's memory and changes nothing: ``read_only=True``.

The writer observes a conversation; the reviewer (an evaluation, a replay, a second agent)
shares its store, sees the same memory context, and never observes, reflects or writes.

    python examples/read_only.py
"""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from langchain_om import ObservationalMemory
from langchain_om.testing import memory_model

writer = ObservationalMemory(model=memory_model(), observation={"message_tokens": 2_000})
writer.observe(
    thread_id="maya",
    messages=[HumanMessage("I moved to Lisbon in March."), HumanMessage("I'm allergic to nuts.")],
)

reviewer_model = memory_model()
reviewer = ObservationalMemory(model=reviewer_model, store=writer.store, read_only=True)
context = reviewer.get_context(thread_id="maya")
seen = [line for line in context[0].text.splitlines() if "User said" in line]
print("reviewer sees:", *seen, sep="\n  ")
snap = reviewer.observe(thread_id="maya", messages=[HumanMessage("Forget Lisbon, I'm in Porto.")])
print("reviewer model calls:", reviewer_model.call_count)
print("stored log unchanged:", writer.status(thread_id="maya").observations == snap.observations)
writer.close()
reviewer.close()
