"""A typed user profile the memory keeps current: a schema extractor.

After each observation a structured-output call (``with_structured_output`` on the Observer's
model) fills ``Profile`` from the new observations and the previous value; the value is
validated and kept in ``record["extracted"]["profile"]``. Offline here: the scripted model
answers the structured calls with a few rules, as a real model would from the prompt.

    python examples/profile_extractor.py
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel

from langchain_om import Extractor, ObservationalMemory
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model


class Profile(BaseModel):
    name: str
    city: str | None
    allergies: list[str]


observer = memory_model(words=30).function
assert observer is not None


def scripted(messages: list[BaseMessage], info: RecordedCall) -> Any:
    """The Observer's answers, and a rule-based stand-in for the structured Profile call."""
    if info.structured_output is None:
        return observer(messages, info)
    prompt = messages[-1].text
    before = prompt.split("## Previous value\n\n")[1].split("\n\n## ")[0]
    value = json.loads(before) if before != "none" else {"name": "", "city": None, "allergies": []}
    new = prompt.split("## New observations\n\n")[1]
    value["name"] = next(iter(re.findall(r"name is (\w+)", new)), value["name"])
    value["city"] = next(iter(re.findall(r"(?:live in|moved to) (\w+)", new)), value["city"])
    value["allergies"] += [a for a in re.findall(r"allergic to (\w+)", new)]
    return value


memory = ObservationalMemory(
    model=FunctionChatModel(function=scripted),
    observation={
        "message_tokens": 300,  # small, to observe often
        "buffer_tokens": False,
        "extract": [
            Extractor("Profile", "The user's name, home city and allergies.", schema=Profile)
        ],
    },
)
said = {
    "My name is Maya.": " I'm planning a week of trains and ferries along the coast in May.",
    "I live in Lisbon.": " The trip starts with a night train north, then two days of hiking.",
    "I'm allergic to peanuts.": " So street food stalls and bakeries need checking before I eat.",
    "I moved to Porto.": " Now the coastal trip starts from the river, by the old bridge.",
}
for i, (text, chat) in enumerate(said.items()):
    memory.add_messages("maya", [HumanMessage(text + chat), AIMessage(f"Noted ({i}).")])
    snap = memory.observe(thread_id="maya")
    print(f"after {text!r}: {snap.extracted['profile']}")
memory.close()
