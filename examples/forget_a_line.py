"""Forgetting sticks: the agent deletes a line with the ``memory`` tool, and it stays deleted.

The user tells the agent a number it should not keep; memory observes it, and a reflection of
the log holding that line is buffered in the background. Then the user asks to forget it: the
agent finds the line and deletes it. The reflection buffered before the edit would bring the
line back when it activates; memory drops it instead and reflects the edited log. The models
are scripted (the agent follows a script, the Observer is ``memory_model()``), so this runs
offline.

    python examples/forget_a_line.py
"""

from __future__ import annotations

import json

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model

SECRET = "4711-0042"


def agent_model(messages: list[BaseMessage], info: RecordedCall) -> AIMessage | str:
    """Finds and deletes the line when asked to forget; otherwise answers."""
    last = messages[-1]
    if isinstance(last, HumanMessage) and "forget" in last.text:
        call = {"name": "memory", "args": {"action": "find", "query": SECRET}, "id": "find"}
        return AIMessage("", tool_calls=[call])
    if isinstance(last, ToolMessage) and last.text.startswith("{"):
        line = json.loads(last.text)["lines"][0]["id"]
        call = {"name": "memory", "args": {"action": "delete", "line_id": line}, "id": "delete"}
        return AIMessage("", tool_calls=[call])
    if isinstance(last, ToolMessage):
        return f"Done, I no longer remember it ({last.text})"
    return f"Answer {info.index}: noted."


memory = ObservationalMemory(
    model=memory_model(keep=0.5),
    observation={"message_tokens": 300, "buffer_tokens": 100},
    reflection={"observation_tokens": 400, "buffer_activation": 0.5},
    memory_tool=True,
    background="manual",  # background work runs when the script says (deterministic)
)
agent = create_agent(
    FunctionChatModel(function=agent_model),
    memory.tools,
    middleware=[ObservationalMemoryMiddleware(memory)],
    checkpointer=memory.checkpointer,
    store=memory.store,
)
config: RunnableConfig = {"configurable": {"thread_id": "maya"}}


def say(text: str) -> str:
    """One turn; background work runs after it. Returns the observation log."""
    agent.invoke({"messages": [HumanMessage(text)]}, config)
    memory.run_background()
    record = memory.read_state(agent.get_state(config).values)
    return "\n".join(g["text"] for g in record["groups"])


log = say(f"My door code is {SECRET}. " + "Some detail. " * 30)
for turn in range(40):
    log = say(f"Turn {turn}: " + "more words about the trip " * 12)
    buffered = memory.store.get(("langchain_om", "reflection", "maya"), "current")
    if buffered is not None and SECRET in str(buffered.value.get("text")) and SECRET in log:
        break
print("before: the log holds the code:", SECRET in log)
print("a reflection holding it is buffered:", buffered is not None)

log = say("Please forget my door code.")
print("after the delete, the log holds it:", SECRET in log)

record = memory.read_state(agent.get_state(config).values)
generation = record["generation"]
for turn in range(12):
    log = say(f"Later {turn}: " + "talk about other things " * 12)
record = memory.read_state(agent.get_state(config).values)
print(f"{record['generation'] - generation} reflection(s) later, the log holds it:", SECRET in log)
memory.close()
