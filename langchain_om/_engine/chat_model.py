"""A base for the package's own chat models: LangChain's generate hooks, written once.

``BaseChatModel._generate``/``_agenerate`` take the messages, ``stop``, a callback manager and
extra keyword arguments and return a ``ChatResult``. The offline Observer, the scripted test
models and the eval's metering wrapper only differ in how they answer, so they subclass
:class:`AnsweringChatModel` and implement :meth:`~AnsweringChatModel._answer` (and
:meth:`~AnsweringChatModel._aanswer` when their async path differs).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables.config import run_in_executor


class AnsweringChatModel(BaseChatModel):
    """A chat model defined by the one message it answers with."""

    @abstractmethod
    def _answer(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> BaseMessage:
        """The reply to ``messages`` (``kwargs``: the call's extra keyword arguments)."""

    async def _aanswer(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> BaseMessage:
        """Async twin of :meth:`_answer`; by default it runs on an executor, as in LangChain."""
        return await run_in_executor(None, self._answer, messages, stop, kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(
            generations=[ChatGeneration(message=self._answer(messages, stop, kwargs))]
        )

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = await self._aanswer(messages, stop, kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])
