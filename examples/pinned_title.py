"""A thread title the user chose wins over the Observer's: ``rename_thread``.

With ``observation.thread_title`` the Observer proposes a short title and updates it when the
topic changes. ``memory.rename_thread(thread_id, title)`` pins a title for every front door
(it is kept in the store beside the thread): ``status`` and ``langchain-om inspect`` show it,
observations keep it, and the Observer's proposals wait in the record's hints until
``memory.unpin_thread_title(thread_id)`` lets them show again.

    python examples/pinned_title.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model

scripted = memory_model()


def titling_observer(messages: list[BaseMessage], info: RecordedCall) -> str:
    """The scripted Observer, proposing a title named after its call when asked for one."""
    assert scripted.function is not None
    reply = str(scripted.function(messages, info))
    if "- <thread-title>:" in messages[-1].text:
        reply += f"\n<thread-title>Topic number {info.index}</thread-title>"
    return reply


with tempfile.TemporaryDirectory() as folder:
    memory = ObservationalMemory.from_sqlite(
        str(Path(folder) / "memory.db"),
        model=FunctionChatModel(function=titling_observer),
        observation={"message_tokens": 120, "buffer_tokens": False, "threadTitle": True},
    )

    def chat(i: int) -> None:
        memory.add_messages(
            "t1", [HumanMessage(f"Question {i} about my garden. " * 20), AIMessage("Sure.")]
        )

    chat(0)
    print("Observer's title:", memory.status(thread_id="t1").title)
    memory.rename_thread("t1", "Allotment plans")
    for i in range(1, 4):
        chat(i)
    snap = memory.status(thread_id="t1")
    print("after more observations:", snap.title, "· pinned:", snap.title_pinned)
    print("the Observer proposed:", snap.record["hints"]["thread_title"])
    memory.unpin_thread_title("t1")
    chat(4)
    snap = memory.status(thread_id="t1")
    print("unpinned:", snap.title, "· pinned:", snap.title_pinned)
    memory.close()
