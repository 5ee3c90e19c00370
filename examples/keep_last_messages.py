"""Keep the last few messages verbatim: ``keep_last_messages=N``.

Observation moves old messages into the observation log; with the floor, the N most recent
raw messages always stay in the agent's window, whatever observation or activation removes.

    python examples/keep_last_messages.py
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om.testing import memory_model

memory = ObservationalMemory(
    model=memory_model(),  # the Observer and Reflector (scripted here)
    observation={"message_tokens": 400, "buffer_tokens": False},  # small, to observe often
    keep_last_messages=4,
)
for i in range(10):
    detail = "with a lot of detail " * 10
    snap = memory.add_messages(
        "maya",
        [HumanMessage(f"Step {i} of the plan, {detail}"), AIMessage(f"Noted step {i}.")],
    )
snap = memory.observe(thread_id="maya")  # a manual observation takes all it may
print(f"{snap.record['observed_message_count']} observed, {len(snap.window)} kept verbatim:")
for message in snap.window:
    print(f"  {message.type}: {message.text[:24]}")
memory.close()
