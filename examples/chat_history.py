"""Chat history: ``ObservationalChatMessageHistory`` read and written around each model call.

Old turns become observations, so the history the model sees stays small. The history object
is used directly (LangChain deprecated ``RunnableWithMessageHistory``; for an agent, use
``create_agent`` with ``ObservationalMemoryMiddleware`` and a checkpointer, see
``examples/agent.py``). Runs offline in seconds with scripted models.

    python examples/chat_history.py
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from langchain_om import ObservationalChatMessageHistory, ObservationalMemory
from langchain_om.display import render_text
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model


def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
    return f"(seeing {len(messages)} messages) Sure: {messages[-1].text[:40]}"


memory = ObservationalMemory(
    model=memory_model(),  # the Observer and Reflector (scripted here)
    message_tokens=200,
    observation_tokens=300,
)
prompt = ChatPromptTemplate.from_messages(
    [("system", "You are a helpful assistant."), MessagesPlaceholder("history"), ("human", "{q}")]
)
chain = prompt | FunctionChatModel(function=reply)
history = ObservationalChatMessageHistory(memory, thread_id="maya")

for i in range(1, 13):
    question = f"Remember item {i}: the code for box {i} is {i * 111}."
    # the history holds memory (a system message) and the unobserved messages
    answer = chain.invoke({"history": history.messages, "q": question})
    history.add_messages([HumanMessage(question), answer])  # observes when over the threshold
print("last answer:", answer.text)
memory.close()  # waits for background observation work

print(render_text(memory.status(thread_id="maya")))
