"""Write the memory context's guidance yourself: a custom ``preamble`` template.

Placeholders: ``{observations}`` (the log), ``{hints}`` (current task, suggested response),
``{current_date}`` and ``{default_preamble}`` (the built-in guidance). A typo such as
``{observation}`` is an ``OMConfigError`` naming it, raised when the memory is built.

    python examples/custom_preamble.py
"""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from langchain_om import ObservationalMemory, OMConfigError
from langchain_om.testing import memory_model

PREAMBLE = """You are Maya's travel assistant. Today is {current_date}.
What you remember about her:
{observations}
Where the conversation stood:
{hints}"""

memory = ObservationalMemory(model=memory_model(), preamble=PREAMBLE)
snap = memory.observe(
    thread_id="maya", messages=[HumanMessage("I prefer aisle seats and vegetarian meals.")]
)
print(snap.context.text)
try:
    ObservationalMemory(model=memory_model(), preamble="Notes: {observation}")
except OMConfigError as error:
    print("refused:", error.option, "-", error.message.split(".")[0])
memory.close()
