"""Ready-made transform hooks: a PII redactor for ``hooks.before_observation``.

``before_observation(messages, ctx)`` sees every batch before the Observer does and returns
the messages it may see. :func:`redact_messages` is such a hook: it masks email addresses,
phone numbers and (checksum-valid) card numbers in message text, tool-call arguments and tool
results, so they reach neither the Observer's prompt nor the observations. With
``hooks.archive_transformed=True`` the archive keeps the redacted messages too.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_om.transforms import redact_messages
    >>> redact_messages([HumanMessage("I'm jane@example.com", id="m1")], {})[0].content
    "I'm [email]"
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from langchain_om._core.redact import PII_MASKS, redact_pii

__all__ = ["PII_MASKS", "redact_messages", "redact_pii", "redactor"]


def _redact_value(value: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: _redact_value(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_value(v, redact) for v in value]
    return value


def _redact_content(content: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(content, str):
        return redact(content)
    parts: list[Any] = []
    for part in content:
        if isinstance(part, Mapping) and isinstance(part.get("text"), str):
            parts.append({**part, "text": redact(part["text"])})
        else:
            parts.append(part if not isinstance(part, str) else redact(part))
    return parts


def redactor(
    redact: Callable[[str], str] = redact_pii,
) -> Callable[[Sequence[BaseMessage], Mapping[str, Any]], list[BaseMessage]]:
    """A ``before_observation`` hook applying ``redact`` to every text of every message.

    Args:
        redact: ``text -> text``; :func:`redact_pii` by default (emails, phones, cards).

    Returns:
        A hook returning redacted copies (same ids); the agent's own messages are unchanged.
    """

    def hook(messages: Sequence[BaseMessage], ctx: Mapping[str, Any]) -> list[BaseMessage]:
        out: list[BaseMessage] = []
        for message in messages:
            update: dict[str, Any] = {"content": _redact_content(message.content, redact)}
            calls = getattr(message, "tool_calls", None)
            if calls:
                update["tool_calls"] = [
                    {**c, "args": _redact_value(c.get("args", {}), redact)} for c in calls
                ]
            out.append(message.model_copy(update=update))
        return out

    return hook


redact_messages = redactor()
"""The default PII redactor: ``hooks={"before_observation": redact_messages}``."""
