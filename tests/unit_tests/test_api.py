"""The public API is pinned: adding or removing a name is a deliberate change."""

from __future__ import annotations

import langchain_om
import langchain_om.testing

EXPECTED = [
    "CallableTokenCounter",
    "CycleFailedError",
    "Extractor",
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
    "StorageError",
    "ThreadSnapshot",
    "TokenCounter",
    "TurnOutcome",
    "__version__",
    "add_observational_memory",
    "as_token_counter",
    "create_recall_tool",
]


def test_all_is_pinned_and_sorted() -> None:
    assert langchain_om.__all__ == EXPECTED
    assert sorted(langchain_om.__all__) == langchain_om.__all__


def test_every_public_name_resolves() -> None:
    for name in langchain_om.__all__:
        assert getattr(langchain_om, name) is not None
    for name in langchain_om.testing.__all__:
        assert getattr(langchain_om.testing, name) is not None


def test_version() -> None:
    assert langchain_om.__version__.count(".") == 2
