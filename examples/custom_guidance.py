"""Your own guidance for the Observer and the Reflector, and no continuation hints.

``instruction_mode="replace"`` puts ``instruction`` in place of the built-in guidance on what
to record (the Observer) and how to consolidate (the Reflector); the format of the log stays,
so memory still reads, orders and shows it. ``continuation_hints=False`` stops the Observer
writing ``<current-task>`` / ``<suggested-response>``, and the agent is shown none.

    python examples/custom_guidance.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om.testing import memory_model

observer = memory_model()
with tempfile.TemporaryDirectory() as folder:
    memory = ObservationalMemory.from_sqlite(
        str(Path(folder) / "memory.db"),
        model=observer,
        observation={
            "message_tokens": 120,
            "buffer_tokens": False,
            "instruction": "Record only the user's orders: item, quantity and delivery date.",
            "instructionMode": "replace",  # Mastra's camelCase keys work too
            "continuation_hints": False,
        },
        reflection={
            "observation_tokens": 300,
            "instruction": "Keep one line per order with its latest state; drop the rest.",
            "instruction_mode": "replace",
        },
    )
    for i in range(8):
        memory.add_messages(
            "shop",
            [
                HumanMessage(f"Order {i}: {i + 2} boxes of tea, deliver on May {i + 1}. " * 3),
                AIMessage(f"Order {i} noted."),
            ],
        )
    system = str(observer.calls[0].messages[0].content)
    print("Observer follows the application's guidance:", "Record only the user's orders" in system)
    print("built-in guidance left out:", "Tell statements from questions." not in system)
    reflector = [c for c in observer.calls if "You are the Reflector" in str(c.messages[0].content)]
    print("Reflector calls:", len(reflector))
    print(
        "Reflector knows the Observer's guidance:",
        all("Record only the user's orders" in str(c.messages[0].content) for c in reflector),
    )
    context = memory.get_context(thread_id="shop")[0].text
    print("context shows observations:", "<observations>" in context)
    print("context shows hints:", "<current-task>" in context or "<suggested-response>" in context)
    memory.close()
