"""Redact personal data before memory sees it: a ``before_observation`` transform hook.

The agent still sees the user's messages as written; the Observer sees them with email
addresses, phone numbers and card numbers masked, so they never enter the observation log.
``archive_transformed=True`` keeps the redacted copies in the archive too.

    python examples/redact_pii.py
"""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from langchain_om import ObservationalMemory
from langchain_om.testing import memory_model
from langchain_om.transforms import redact_messages

observer = memory_model(words=30)
memory = ObservationalMemory(
    model=observer,  # the Observer and Reflector (scripted here)
    observation={"message_tokens": 2_000, "buffer_tokens": False},
    hooks={"before_observation": redact_messages, "archive_transformed": True},
)
memory.add_messages(
    "maya",
    [
        HumanMessage("Hi, I'm Maya. Mail me at maya.lopez@example.com", id="m1"),
        HumanMessage("or call +1 (415) 555-0134. My card is 4111 1111 1111 1111.", id="m2"),
    ],
)
snap = memory.observe(thread_id="maya")
prompt = observer.last_call.messages[-1].text
print("observer prompt holds the email:", "maya.lopez@example.com" in prompt)
print("observations:")
print(snap.observations)
print("archived:", [m.text for m in memory.archived_messages("maya")])
memory.close()
