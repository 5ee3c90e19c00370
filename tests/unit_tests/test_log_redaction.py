"""No secret reaches the package's logs: messages, arguments and tracebacks are redacted.

A provider error can carry the API key (``Incorrect API key provided: sk-live-…``). Events and
hooks get a redacted summary; the ``langchain_om`` loggers get the full error with the same
redaction, at every level: the message, its arguments, the traceback, a chained cause.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om._core.redact import MASK
from langchain_om.retry import RetryPolicy
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model

SECRETS = {
    "provider key": "sk-live-4f9aQ2xZ7mK1pL0c",
    "project key": "sk-proj-Zr81kLmQ0pWn3s",
    "groq key": "gsk_8KdPq2Lm9XzR4tVb",
    "google key": "AIzaSyB1c2d3E4f5G6h7I8j9K0lMn",
    "github token": "ghp_abcdefghijklmnop1234",
    "aws key": "AKIAIOSFODNN7EXAMPLE",
    "bearer": "Bearer eyAbCdEfGhIjKlMnOp",
    "url credentials": "postgresql://admin:hunter2pw@db.internal:5432/app",
    "key=value": "api_key=Zx9Qw8Er7Ty6",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "opaque blob": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA9Xk",
}
"""One secret for each pattern of the redactor (:mod:`langchain_om._core.redact`)."""

# What must not appear: the part of each secret the redactor masks.
LEAKS = {
    "provider key": "4f9aQ2xZ7mK1pL0c",
    "project key": "Zr81kLmQ0pWn3s",
    "groq key": "8KdPq2Lm9XzR4tVb",
    "google key": "SyB1c2d3E4f5G6h7I8j9K0lMn",
    "github token": "abcdefghijklmnop1234",
    "aws key": "IOSFODNN7EXAMPLE",
    "bearer": "eyAbCdEfGhIjKlMnOp",
    "url credentials": "hunter2pw",
    "key=value": "Zx9Qw8Er7Ty6",
    "jwt": "dozjgNryP4J3jVmNHl0w5N",
    "opaque blob": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA9Xk",
}


class AuthenticationError(Exception):
    """What a provider SDK raises for a bad key (status 401)."""

    status_code = 401


class ProviderDown(Exception):
    """A transient provider error (so it is retried, and logged at INFO)."""

    status_code = 503


def _all_secrets() -> str:
    return "; ".join(SECRETS.values())


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    """Everything the package's loggers write, at every level, tracebacks included."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger("langchain_om")
    before = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield out
    finally:
        root.removeHandler(handler)
        root.setLevel(before)


def _failing(error: Exception) -> FunctionChatModel:
    def reply(messages: list[BaseMessage], info: RecordedCall) -> Any:
        try:
            raise RuntimeError(f"upstream said {_all_secrets()}")
        except RuntimeError as cause:
            raise error from cause

    return FunctionChatModel(function=reply)


def _assert_clean(text: str) -> None:
    assert text, "something was logged"
    leaked = [name for name, part in LEAKS.items() if part in text]
    assert not leaked, f"secrets in the logs: {leaked}\n{text[:3000]}"
    assert MASK in text


def test_a_failed_cycle_logs_its_traceback_without_the_key(logs: io.StringIO) -> None:
    error = AuthenticationError(f"Incorrect API key provided: {_all_secrets()}")
    memory = ObservationalMemory(
        model=_failing(error),
        observation={"message_tokens": 50, "buffer_tokens": False, "failure_policy": "continue"},
        sleep=lambda s: None,
    )
    memory.add_messages("t", [HumanMessage("I live in Lisbon. " * 20)])
    text = logs.getvalue()
    assert "Traceback" in text and "AuthenticationError" in text
    _assert_clean(text)


def test_retries_background_jobs_and_callbacks_log_no_key(logs: io.StringIO) -> None:
    error = ProviderDown(f"Service unavailable for key {_all_secrets()}")

    def on_debug_event(event: Any) -> None:
        raise ValueError(f"my handler broke on {_all_secrets()}")

    memory = ObservationalMemory(
        model=_failing(error),
        observation={"message_tokens": 300, "buffer_tokens": 100, "failure_policy": "continue"},
        retry_policy=RetryPolicy(max_retries=1),
        sleep=lambda s: None,
        background="manual",
        on_debug_event=on_debug_event,
        hooks={"on_observation_end": on_debug_event},
    )
    for i in range(4):
        memory.add_messages("t", [HumanMessage(f"Turn {i}: " + "words here " * 30)])
        memory.run_background()
    text = logs.getvalue()
    for level in ("DEBUG", "INFO", "WARNING", "ERROR"):
        assert f"{level} langchain_om" in text, f"nothing logged at {level}"
    _assert_clean(text)


@pytest.mark.parametrize("level", [logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR])
@pytest.mark.parametrize("name", ["langchain_om", "langchain_om.cycles", "langchain_om.retry"])
def test_every_package_logger_redacts_at_every_level(
    logs: io.StringIO, name: str, level: int
) -> None:
    memory_model()  # the package is imported and its loggers exist
    logger = logging.getLogger(name)
    try:
        raise AuthenticationError(f"Incorrect API key provided: {_all_secrets()}")
    except AuthenticationError:
        logger.log(level, "call failed with %s", _all_secrets(), exc_info=True, stack_info=True)
    _assert_clean(logs.getvalue())


def test_every_logger_of_the_package_has_the_redactor() -> None:
    memory_model()
    ObservationalMemory(model=memory_model())
    names = [n for n in logging.Logger.manager.loggerDict if n.split(".")[0] == "langchain_om"]
    assert {"langchain_om", "langchain_om.cycles", "langchain_om.retry"} <= set(names)
    for name in names:
        logger = logging.getLogger(name)
        assert any(type(f).__name__ == "RedactingFilter" for f in logger.filters), name
