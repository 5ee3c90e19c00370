"""Every public module's ``__all__`` is pinned: adding or removing a name is a deliberate change.

Public modules are the ones whose dotted path has no part starting with an underscore. Their
public methods return types that are exported too, so a user can name what they get back.
"""

from __future__ import annotations

import importlib
import inspect
import types
import typing
from pathlib import Path
from typing import Any

import pytest

import langchain_om
from langchain_om._plans.types import TurnOutcome

PACKAGE = Path(langchain_om.__file__).parent

PINNED: dict[str, list[str]] = {
    "langchain_om": [
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
    ],
    "langchain_om.cli": [
        "ReplayFormatError",
        "load_conversation",
        "main",
    ],
    "langchain_om.config": [
        "CadenceConfig",
        "ContinuationHints",
        "DEFAULT_MODEL",
        "Hooks",
        "ModelSettings",
        "ObservationConfig",
        "ObservationalMemoryConfig",
        "ReflectionConfig",
        "RetrievalConfig",
        "SpendConfig",
        "parse_duration",
    ],
    "langchain_om.display": [
        "plot_windows",
        "render_html",
        "render_text",
        "render_windows",
        "token_bar",
    ],
    "langchain_om.engine": [
        "EndTurnOptions",
        "ObservationalMemory",
        "StepOptions",
        "ThreadSnapshot",
    ],
    "langchain_om.errors": [
        "CycleFailedError",
        "HookError",
        "MissingProviderError",
        "ModelResolutionError",
        "ModelTierExceededError",
        "OMConfigError",
        "OMUsageError",
        "ObservationalMemoryError",
        "ObserverOutputError",
        "ReflectorOutputError",
        "SpendLimitError",
        "StorageError",
    ],
    "langchain_om.eval": [
        "ANSWER_PROMPT",
        "Conversation",
        "Dataset",
        "EvalDataError",
        "EvalRunError",
        "FORMATS",
        "FRONT_DOORS",
        "Ingested",
        "LOCOMO_CATEGORIES",
        "MeteredChatModel",
        "Question",
        "ReplayModel",
        "RunSettings",
        "SYSTEMS",
        "Session",
        "SystemSettings",
        "Turn",
        "answer_messages",
        "contains",
        "exact_match",
        "ingest",
        "judge_messages",
        "load_dataset",
        "load_jsonl",
        "load_locomo",
        "load_longmemeval",
        "locomo_score",
        "multi_answer_f1",
        "normalize_answer",
        "parse_verdict",
        "read_records",
        "run_eval",
        "sample_questions",
        "scripted_answerer",
        "scripted_judge",
        "scripted_summarizer",
        "summarize",
        "to_markdown",
        "token_f1",
        "write_plot",
        "write_reports",
    ],
    "langchain_om.eval.cli": [
        "add_eval_command",
        "cmd_eval",
    ],
    "langchain_om.eval.data": [
        "Conversation",
        "Dataset",
        "EvalDataError",
        "FORMATS",
        "LOCOMO_CATEGORIES",
        "Question",
        "Session",
        "Turn",
        "load_dataset",
        "load_jsonl",
        "load_locomo",
        "load_longmemeval",
    ],
    "langchain_om.eval.models": [
        "Meter",
        "MeteredChatModel",
        "ReplayModel",
        "SLOW_ENV",
        "scripted_answerer",
        "scripted_judge",
        "scripted_summarizer",
    ],
    "langchain_om.eval.recorded": [
        "LineCheck",
        "MemoryCall",
        "Replayed",
        "batch_messages",
        "check_lines",
        "load_calls",
        "previous_observations",
        "replay",
    ],
    "langchain_om.eval.report": [
        "summarize",
        "to_markdown",
        "write_plot",
        "write_reports",
    ],
    "langchain_om.eval.runner": [
        "ANSWER_PROMPT",
        "EvalRunError",
        "RunSettings",
        "answer_messages",
        "read_records",
        "run_eval",
        "sample_questions",
    ],
    "langchain_om.eval.scoring": [
        "ABSTENTION_PHRASES",
        "contains",
        "exact_match",
        "judge_messages",
        "locomo_score",
        "multi_answer_f1",
        "normalize_answer",
        "parse_verdict",
        "stem_tokens",
        "token_f1",
    ],
    "langchain_om.eval.systems": [
        "Clock",
        "FRONT_DOORS",
        "Ingested",
        "SYSTEMS",
        "SystemSettings",
        "ingest",
        "summary_budget",
        "transcript",
        "transcript_line",
    ],
    "langchain_om.events": [
        "ActivationEvent",
        "ArchiveEvent",
        "ArchiveStatus",
        "BudgetUsage",
        "BufferedObservationsStatus",
        "BufferedReflectionStatus",
        "BufferingEndEvent",
        "BufferingFailedEvent",
        "BufferingStartEvent",
        "ContextOverflowEvent",
        "MemorySavings",
        "OMEvent",
        "ObservationEndEvent",
        "ObservationFailedEvent",
        "ObservationStartEvent",
        "SpendLimitEvent",
        "SpendStatus",
        "StatusEvent",
        "TemporalGapEvent",
        "ThreadUpdateEvent",
        "WindowUsage",
        "parse_event",
    ],
    "langchain_om.extractors": [
        "DEFAULT_WORKING_MEMORY_TEMPLATE",
        "ExtractionResult",
        "Extractor",
        "RESERVED_SLUGS",
        "WorkingMemoryExtractor",
        "check_extractors",
        "run_extractors",
    ],
    "langchain_om.graph": [
        "ObservationalMemoryGraphState",
        "add_observational_memory",
    ],
    "langchain_om.history": [
        "ObservationalChatMessageHistory",
    ],
    "langchain_om.local": [
        "INSTALL_HINT",
        "LocalServer",
        "MODEL_FILE",
        "find_local_model",
        "local_model_available",
        "start_local_server",
    ],
    "langchain_om.locks": [
        "LocalThreadLock",
        "PostgresThreadLock",
        "SqliteThreadLock",
        "ThreadLock",
        "hold_async",
    ],
    "langchain_om.offline": [
        "ExtractiveObserver",
        "OBSERVER_LABEL",
        "extractive_observer",
    ],
    "langchain_om.middleware": [
        "ObservationalMemoryMiddleware",
        "ObservationalMemoryState",
    ],
    "langchain_om.models": [
        "DEFAULT_MAX_OUTPUT_TOKENS",
        "DEFAULT_MODEL",
        "ModelByInputTokens",
        "ModelSpec",
        "ModelWithRetries",
        "Role",
        "RunContext",
        "apply_settings",
        "clear_model_cache",
        "model_id",
        "plan_attempts",
        "resolve_model_string",
    ],
    "langchain_om.retry": [
        "DEFAULT_MAX_RETRIES",
        "DEFAULT_RETRY_POLICY",
        "ModelAttempt",
        "ModelCallResult",
        "ModelUsage",
        "RetryEvent",
        "RetryPolicy",
        "ainvoke_model",
        "invoke_model",
        "is_transient",
    ],
    "langchain_om.postgres": [
        "AsyncPostgresStorage",
        "CONNECTION_KWARGS",
        "POOL_DEFAULTS",
        "PostgresMemorySaver",
        "PostgresStorage",
        "aopen_postgres",
        "open_postgres",
    ],
    "langchain_om.sqlite": [
        "SqliteMemorySaver",
        "SqliteMemoryStore",
        "open_sqlite",
    ],
    "langchain_om.testing": [
        "FunctionChatModel",
        "HashEmbeddings",
        "RecordedCall",
        "Reply",
        "ScriptExhaustedError",
        "ScriptItem",
        "ScriptedChatModel",
        "ScriptedProviderError",
        "ScriptedRateLimitError",
        "ScriptedResponse",
        "ScriptedServerError",
        "ScriptedTimeoutError",
        "StructuredOutputSpec",
        "memory_model",
        "rate_limit_error",
        "server_error",
        "timeout_error",
    ],
    "langchain_om.testing.pytest_plugin": [
        "ALLOWED_MODULE_PREFIXES",
        "is_allowed_fake",
    ],
    "langchain_om.transforms": [
        "PII_MASKS",
        "redact_messages",
        "redact_pii",
        "redactor",
    ],
    "langchain_om.tools": [
        "create_memory_tool",
        "create_recall_code_tool",
        "create_recall_tool",
    ],
}


def public_modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if not any(part.startswith("_") for part in parts):
            names.append(".".join(parts))
    return names


def test_every_public_module_is_pinned() -> None:
    assert sorted(PINNED) == public_modules()


@pytest.mark.parametrize("module", sorted(PINNED))
def test_all_is_pinned_sorted_and_resolves(module: str) -> None:
    mod = importlib.import_module(module)
    assert mod.__all__ == PINNED[module]
    assert sorted(mod.__all__) == mod.__all__
    for name in mod.__all__:
        assert hasattr(mod, name), f"{module}.{name} is in __all__ but not defined"


def exported() -> set[Any]:
    """Every object a public module exports."""
    found: set[Any] = set()
    for module, names in PINNED.items():
        mod = importlib.import_module(module)
        found.update(id(getattr(mod, name)) for name in names)
    return found


def package_classes(annotation: Any) -> list[type]:
    """Classes of this package named anywhere in a type annotation."""
    found: list[type] = []
    if isinstance(annotation, type) and annotation.__module__.startswith("langchain_om"):
        found.append(annotation)
    elif typing.is_typeddict(annotation) and annotation.__module__.startswith("langchain_om"):
        found.append(annotation)
    for arg in typing.get_args(annotation):
        found.extend(package_classes(arg))
    origin = typing.get_origin(annotation)
    if origin is not None and origin is not types.UnionType:
        found.extend(package_classes(origin))
    return found


FRONT_DOOR_CLASSES = [
    "langchain_om.engine.ObservationalMemory",
    "langchain_om.engine.ThreadSnapshot",
    "langchain_om.history.ObservationalChatMessageHistory",
    "langchain_om.middleware.ObservationalMemoryMiddleware",
]


@pytest.mark.parametrize("path", FRONT_DOOR_CLASSES)
def test_public_methods_return_exported_types(path: str) -> None:
    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    ids = exported()
    unexported: dict[str, list[str]] = {}
    for attr, member in inspect.getmembers(cls):
        if attr.startswith("_"):
            continue
        function = member.fget if isinstance(member, property) else member
        if not callable(function) or getattr(function, "__module__", "") != cls.__module__:
            continue
        hints = typing.get_type_hints(function)
        missing = [c.__qualname__ for c in package_classes(hints.get("return")) if id(c) not in ids]
        if missing:
            unexported[attr] = missing
    assert unexported == {}


def test_the_return_type_check_sees_package_classes() -> None:
    assert package_classes(list[TurnOutcome] | None) == [TurnOutcome]
    assert package_classes(int) == []
