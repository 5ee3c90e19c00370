"""Working memory: one document about the user, kept current and shown in its own block.

``observation.manage_working_memory=True`` asks the Observer to rewrite the document each
cycle; the application reads and edits it (``get_working_memory`` / ``update_working_memory``);
the agent sees it as ``<working-memory>`` in its memory context. The scripted Observer here
fills the ``Location`` line from what the user says, as a real model would from its prompt.

    python examples/working_memory.py
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model

observe = memory_model(words=30).function
assert observe is not None


def scripted_observer(messages: list[BaseMessage], info: RecordedCall) -> Any:
    """The scripted Observer's log, plus the working-memory section it was asked for."""
    new = messages[-1].text.split("## New Messages to Observe", 1)[-1]
    prior = re.findall(r"- Location: (\w+)", messages[-1].text)
    city = (re.findall(r"live in (\w+)", new) or prior or [""])[-1]
    document = f"# About the user\n- Location: {city}"
    return f"{observe(messages, info)}\n<working-memory>\n{document}\n</working-memory>"


memory = ObservationalMemory(
    model=FunctionChatModel(function=scripted_observer),
    observation={"message_tokens": 2_000, "buffer_tokens": False, "manage_working_memory": True},
)
memory.observe(thread_id="maya", messages=[HumanMessage("Hi! I live in Lisbon.")])
print("kept by the Observer:", repr(memory.get_working_memory(thread_id="maya")))

memory.update_working_memory("# About the user\n- Location: Porto", thread_id="maya")
context = memory.get_context(thread_id="maya")[0].text
start = context.index("<working-memory>")
block = context[start : context.index("</working-memory>") + len("</working-memory>")]
print("the agent sees:")
print(block)
memory.close()
