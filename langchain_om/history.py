"""``BaseChatMessageHistory`` adapter (legacy surface, deprecated upstream in core 2.0).

``messages`` is the memory system message followed by the unobserved window; ``add_messages``
runs the same engine step as every other front door. The thread's record and window live in
the engine's store, so any process sharing the store sees the same history.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langchain_om import ObservationalMemory, ObservationalChatMessageHistory
    >>> from langchain_om.testing import ScriptedChatModel
    >>> memory = ObservationalMemory(model=ScriptedChatModel(script=["* 🔴 (09:00) hi"]))
    >>> history = ObservationalChatMessageHistory(memory, thread_id="t1", resource_id="u1")
    >>> history.add_messages([HumanMessage("hi"), AIMessage("hello")])
    >>> [m.type for m in history.messages]
    ['human', 'ai']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from langchain_om.engine import ObservationalMemory
from langchain_om.errors import OMConfigError

__all__ = ["ObservationalChatMessageHistory"]


class ObservationalChatMessageHistory(BaseChatMessageHistory):
    """Chat history whose old messages become observations.

    Args:
        memory: the engine (its store keeps the history).
        thread_id: the conversation.
        resource_id: the user or resource owning the conversation.
        actor_model: the chat model (or ``"provider/model"``) the conversation is held with:
            image and file estimates, the ``"auto"`` idle TTL and fractional thresholds follow
            it (the engine's ``actor_model`` when omitted).
        merge_system_message: when the history starts with a system message, append memory to
            it instead of adding a second system message (on by default: the history may feed
            any provider, and some take one system instruction only).

    Raises:
        OMConfigError: ``memory`` has ``memory_tool`` on: the tool edits the record in an
            agent's or graph's state, and the history keeps its thread in the store.
    """

    def __init__(
        self,
        memory: ObservationalMemory,
        *,
        thread_id: str,
        resource_id: str | None = None,
        actor_model: Any = None,
        merge_system_message: bool = True,
    ) -> None:
        if memory.config.memory_tool:
            raise OMConfigError(
                "Option 'memory_tool' does not work with ObservationalChatMessageHistory: the "
                "memory tool edits the record in an agent's or graph's state, and the history "
                "keeps its thread in the store, where the tool cannot reach it. Use the "
                "create_agent middleware or add_observational_memory for threads the agent "
                "edits, or give the history a memory built with memory_tool=False (it may "
                "share the store).",
                option="memory_tool",
            )
        self.memory = memory
        self.thread_id = thread_id
        self.resource_id = resource_id
        self.actor_model = actor_model
        self.merge_system_message = merge_system_message

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The memory system message (when there is memory) followed by the window."""
        return self.memory.get_context(
            thread_id=self.thread_id,
            resource_id=self.resource_id,
            merge_system_message=self.merge_system_message,
        )

    async def aget_messages(self) -> list[BaseMessage]:
        """Async twin of :attr:`messages`."""
        return await self.memory.aget_context(
            thread_id=self.thread_id,
            resource_id=self.resource_id,
            merge_system_message=self.merge_system_message,
        )

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` and run the OM step (observes when over the threshold).

        A message without an id (``add_user_message``, ``add_ai_message``) is stored as a copy
        with a fresh id, the same on every later read of :attr:`messages`.
        """
        self.memory.add_messages(
            self.thread_id, messages, resource_id=self.resource_id, actor_model=self.actor_model
        )

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async twin of :meth:`add_messages`."""
        await self.memory.aadd_messages(
            self.thread_id, messages, resource_id=self.resource_id, actor_model=self.actor_model
        )

    def clear(self) -> None:
        """Forget the thread: its window, its observations and its archive."""
        self.memory.forget(thread_id=self.thread_id, resource_id=self.resource_id)

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await self.memory.aforget(thread_id=self.thread_id, resource_id=self.resource_id)
