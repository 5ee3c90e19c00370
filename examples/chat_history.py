"""Drop-in chat history: ``ObservationalChatMessageHistory`` with ``RunnableWithMessageHistory``.

Old turns become observations, so the history the chain sees stays small. Runs offline in
seconds with scripted models.

    python examples/chat_history.py
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_om import ObservationalChatMessageHistory, ObservationalMemory
from langchain_om.display import render_text
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model


def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
    return f"(seeing {len(messages)} messages) Sure: {messages[-1].text[:40]}"


memory = ObservationalMemory(
    model=memory_model(),  # the Observer and Reflector (scripted here)
    observation={"message_tokens": 200},
    reflection={"observation_tokens": 300},
)
prompt = ChatPromptTemplate.from_messages(
    [("system", "You are a helpful assistant."), MessagesPlaceholder("history"), ("human", "{q}")]
)
chain = RunnableWithMessageHistory(
    prompt | FunctionChatModel(function=reply),
    lambda session_id: ObservationalChatMessageHistory(memory, thread_id=session_id),
    input_messages_key="q",
    history_messages_key="history",
)

config = {"configurable": {"session_id": "maya"}}
for i in range(1, 13):
    answer = chain.invoke({"q": f"Remember item {i}: the code for box {i} is {i * 111}."}, config)
print("last answer:", answer.text)
memory.close()  # waits for background observation work

print(render_text(memory.status(thread_id="maya")))
