"""Errors the scripted models raise: script exhaustion and provider-like failures.

Provider-like failures carry the attributes retry logic can rely on:

- ``status_code``: the HTTP status (``429``, ``5xx``), or ``None`` for a client-side timeout;
- ``code``: the same value, the name google-genai uses;
- ``response``: a :class:`ScriptedResponse` with ``status_code`` and ``headers``
  (``None`` for a timeout), shaped like the ``response`` of an ``openai.APIStatusError``;
- ``retry_after``: seconds from a ``Retry-After`` header, or ``None``.

A scripted timeout is also a builtin :class:`TimeoutError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = [
    "ScriptExhaustedError",
    "ScriptedProviderError",
    "ScriptedRateLimitError",
    "ScriptedResponse",
    "ScriptedServerError",
    "ScriptedTimeoutError",
    "rate_limit_error",
    "server_error",
    "timeout_error",
]


class ScriptExhaustedError(AssertionError):
    """Raised when a ``ScriptedChatModel`` is called more often than its script allows.

    It is an ``AssertionError``: an unexpected extra model call is a failed expectation.

    Attributes:
        scripted: how many replies the script holds.
        call_index: the 0-based index of the call that found no reply.
        messages: the messages that call sent.
    """

    def __init__(self, *, scripted: int, call_index: int, messages: Sequence[BaseMessage]) -> None:
        last = messages[-1].text if messages else ""
        preview = last if len(last) <= 200 else last[:197] + "..."
        super().__init__(
            f"ScriptedChatModel script exhausted: {scripted} replies were scripted but call "
            f"#{call_index + 1} arrived (last input: {preview!r}). Add replies, or pass "
            "repeat_last=True or cycle=True."
        )
        self.scripted = scripted
        self.call_index = call_index
        self.messages = list(messages)


@dataclass(frozen=True)
class ScriptedResponse:
    """The ``response`` attribute of a scripted provider error (shaped like an HTTP response)."""

    status_code: int
    """The HTTP status code."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Response headers (lower-case names), e.g. ``{"retry-after": "2"}``."""
    text: str = ""
    """The response body."""


class ScriptedProviderError(Exception):
    """Base class of provider-like failures a script can raise.

    Attributes:
        message: the error text.
        status_code: the HTTP status, or ``None`` for a client-side timeout.
        code: same as ``status_code``.
        response: a :class:`ScriptedResponse`, or ``None`` when there was no response.
        retry_after: seconds the provider asked to wait, or ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.code = status_code
        self.retry_after = retry_after
        headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
        self.response = (
            None
            if status_code is None
            else ScriptedResponse(status_code=status_code, headers=headers, text=message)
        )


class ScriptedRateLimitError(ScriptedProviderError):
    """A scripted HTTP 429 "too many requests"."""


class ScriptedServerError(ScriptedProviderError):
    """A scripted HTTP 5xx (or any other status) failure."""


class ScriptedTimeoutError(ScriptedProviderError, TimeoutError):
    """A scripted client-side timeout; also a builtin :class:`TimeoutError`."""


def rate_limit_error(
    message: str = "Rate limit exceeded (scripted 429).", *, retry_after: float | None = None
) -> ScriptedRateLimitError:
    """Build an error that looks like a provider's HTTP 429.

    Args:
        message: the error text.
        retry_after: seconds to put in the ``Retry-After`` header and ``retry_after``.

    Returns:
        An exception with ``status_code == 429``; put it in a script to raise it on that call.

    Example:
        >>> err = rate_limit_error(retry_after=2)
        >>> err.status_code, err.response.status_code, err.response.headers["retry-after"]
        (429, 429, '2')
    """
    return ScriptedRateLimitError(message, status_code=429, retry_after=retry_after)


def server_error(status: int = 503, message: str | None = None) -> ScriptedServerError:
    """Build an error that looks like a provider's HTTP 5xx (default 503).

    Args:
        status: the HTTP status code.
        message: the error text; defaults to one naming the status.

    Returns:
        An exception with ``status_code == status``.

    Example:
        >>> server_error(500).status_code
        500
    """
    text = message if message is not None else f"Server error (scripted {status})."
    return ScriptedServerError(text, status_code=status)


def timeout_error(message: str = "Request timed out (scripted).") -> ScriptedTimeoutError:
    """Build a client-side timeout: a :class:`TimeoutError` with ``status_code = None``.

    Args:
        message: the error text.

    Returns:
        The exception.

    Example:
        >>> isinstance(timeout_error(), TimeoutError), timeout_error().status_code
        (True, None)
    """
    return ScriptedTimeoutError(message, status_code=None)
