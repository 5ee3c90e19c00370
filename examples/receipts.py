"""Receipts: which messages every observation line was written from, and what memory saves.

Each line of the observation log keeps the archive positions of the messages its cycle
observed. ``memory.receipt(thread_id, line)`` (or the recall tool's ``mode="source"``) returns
them; ``langchain-om inspect --receipts`` lists them; ``status().savings`` compares the tokens
of the messages observed with the memory shown in their place.

    python examples/receipts.py
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om.testing import memory_model

memory = ObservationalMemory(
    model=memory_model(),  # the Observer (scripted here)
    observation={"message_tokens": 400, "buffer_tokens": False},
)
facts = [
    "My sister's wedding is on June 14 in Porto.",
    "I switched my phone plan to the 20 GB one.",
    "The plumber comes on Thursday at 9.",
    "I'm training for a 10 km run in October.",
]
for i, fact in enumerate(facts * 3):
    memory.add_messages(
        "maya",
        [
            HumanMessage(f"{fact} (note {i}) " + "Some more context. " * 8, id=f"user-{i}"),
            AIMessage(f"Got it, note {i}.", id=f"reply-{i}"),
        ],
    )

snap = memory.status(thread_id="maya")
line = "sister's wedding is on June 14"
receipt = memory.receipt("maya", line)
print(f"line {receipt['line_id']}: {receipt['text']}")
print(f"written from {receipt['message_count']} messages: {', '.join(receipt['message_ids'])}")
print(f"first source message: {receipt['messages'][0]['parts'][0]['text'][:60]}…")
saved = snap.status.savings
print(
    f"tokens saved: {saved.tokens_saved} "
    f"(messages observed {saved.observed_tokens}, memory shown {saved.context_tokens})"
)
memory.close()
