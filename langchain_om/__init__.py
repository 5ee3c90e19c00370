"""langchain-om: Observational Memory for LangChain and LangGraph agents.

An Observer model turns old conversation into a dated, prioritised observation log, a
Reflector model condenses the log when it grows, and the agent keeps a small, stable context
however long it runs.

Public API:
    ObservationalMemory: the engine (``observe``/``reflect``/``status`` and ``a*`` twins,
        ``from_sqlite`` for the embedded default storage).
    ObservationalMemoryMiddleware: the ``create_agent`` middleware.
    add_observational_memory: adds the OM nodes to a user's ``StateGraph``.
    ObservationalChatMessageHistory: the ``BaseChatMessageHistory`` adapter.
    ObservationalMemoryConfig (+ ObservationConfig, ReflectionConfig, RetrievalConfig):
        the validated options.
    create_recall_tool: the ``recall`` tool (page back to archived raw messages).
    ModelByInputTokens, ModelWithRetries: model selectors.
    Extractor: a named value the Observer keeps up to date.
    TokenCounter: the offline token counter; CallableTokenCounter wraps a LangChain counter
        (``Callable[[list[BaseMessage]], int]``) and as_token_counter builds either.
    TurnOutcome, MemoryContext, OMRecord, OMEvent: what the engine's methods return and emit
        (a step's outcome, the rendered memory context, the JSON-native record, events).
    langchain_om.testing: scripted chat models for offline tests.
"""

from __future__ import annotations

from langchain_om._core.callable_tokens import CallableTokenCounter, as_token_counter
from langchain_om._core.render import MemoryContext
from langchain_om._core.tokens import TokenCounter
from langchain_om._core.types import OMRecord
from langchain_om._plans.types import TurnOutcome
from langchain_om.config import (
    Hooks,
    ModelSettings,
    ObservationalMemoryConfig,
    ObservationConfig,
    ReflectionConfig,
    RetrievalConfig,
)
from langchain_om.engine import ObservationalMemory, ThreadSnapshot
from langchain_om.errors import (
    CycleFailedError,
    HookError,
    MissingProviderError,
    ModelResolutionError,
    ModelTierExceededError,
    ObservationalMemoryError,
    ObserverOutputError,
    OMConfigError,
    OMUsageError,
    ReflectorOutputError,
    SpendLimitError,
    StorageError,
)
from langchain_om.events import OMEvent
from langchain_om.extractors import Extractor, WorkingMemoryExtractor
from langchain_om.graph import add_observational_memory
from langchain_om.history import ObservationalChatMessageHistory
from langchain_om.middleware import ObservationalMemoryMiddleware
from langchain_om.models import ModelByInputTokens, ModelWithRetries
from langchain_om.tools import create_recall_tool

# One line, as hatch reads it at build time; `langchain-om --version` asks the installed package.
__version__ = "0.1.0"

__all__ = [
    "CallableTokenCounter",
    "CycleFailedError",
    "Extractor",
    "HookError",
    "Hooks",
    "MemoryContext",
    "MissingProviderError",
    "ModelByInputTokens",
    "ModelResolutionError",
    "ModelSettings",
    "ModelTierExceededError",
    "ModelWithRetries",
    "OMConfigError",
    "OMEvent",
    "OMRecord",
    "OMUsageError",
    "ObservationConfig",
    "ObservationalChatMessageHistory",
    "ObservationalMemory",
    "ObservationalMemoryConfig",
    "ObservationalMemoryError",
    "ObservationalMemoryMiddleware",
    "ObserverOutputError",
    "ReflectionConfig",
    "ReflectorOutputError",
    "RetrievalConfig",
    "SpendLimitError",
    "StorageError",
    "ThreadSnapshot",
    "TokenCounter",
    "TurnOutcome",
    "WorkingMemoryExtractor",
    "__version__",
    "add_observational_memory",
    "as_token_counter",
    "create_recall_tool",
]
