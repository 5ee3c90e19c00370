"""A ``create_agent`` agent with a tool and observational memory (middleware).

Runs offline in seconds with scripted models. With real models, write e.g.
``create_agent("openai:gpt-5-mini", ...)`` and
``ObservationalMemory(model="google/gemini-2.5-flash", ...)``.

    python examples/agent.py
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model


@tool
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"Sunny and 21°C in {city}."


def scripted_agent(messages: list[BaseMessage], info: RecordedCall) -> AIMessage | str:
    """Calls the weather tool when asked about the weather, else acknowledges."""
    last = messages[-1]
    if isinstance(last, HumanMessage) and "weather" in last.text:
        call = {"name": "get_weather", "args": {"city": "Lisbon"}, "id": f"call-{info.index}"}
        return AIMessage("", tool_calls=[call])
    return f"Noted: {last.text[:50]}"


memory = ObservationalMemory(
    model=memory_model(),  # the Observer and Reflector (scripted here)
    observation={"message_tokens": 250},  # small thresholds so observation shows quickly
    reflection={"observation_tokens": 300},
)
agent = create_agent(
    FunctionChatModel(function=scripted_agent),
    [get_weather],
    middleware=[ObservationalMemoryMiddleware(memory)],
    checkpointer=memory.checkpointer,
    store=memory.store,
)
config = {"configurable": {"thread_id": "maya"}}
days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
for day in days:
    agent.invoke({"messages": [HumanMessage(f"On {day} I'm working from the café.")]}, config)
    agent.invoke({"messages": [HumanMessage(f"What's the weather like on {day}?")]}, config)
memory.close()  # waits for background observation work

state = agent.get_state(config).values
record = memory.read_state(state)  # om_record names its log by key; this reads it back
print(f"{len(state['messages'])} messages in context, {record['observed_message_count']} observed")
print(
    f"generation {record['generation']}, observation log ({record['observation_tokens']} tokens):"
)
print("\n".join(group["text"] for group in record["groups"]))
