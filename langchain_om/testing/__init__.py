"""Offline test helpers: scripted chat models that record what they were sent.

Map of the public API:

- :class:`ScriptedChatModel` answers from a list (text, ``AIMessage`` with tool calls,
  structured data, callables, exceptions to raise).
- :class:`FunctionChatModel` computes each answer with ``function(messages, info)``.
- Both record every call as a :class:`RecordedCall` (``model.calls``, ``model.last_call``,
  ``model.call_count``, ``model.reset()``), support ``bind_tools``, ``with_structured_output``,
  async, streaming, ``delay=`` latency, and report ``usage_metadata``.
- :class:`HashEmbeddings` is a deterministic embedder for vector-search tests.
- :func:`memory_model` acts as a deterministic Observer and Reflector.
- :func:`rate_limit_error`, :func:`server_error`, :func:`timeout_error` build provider-like
  failures with a ``status_code`` attribute, to put in a script.
- ``langchain_om.testing.pytest_plugin`` fails tests that build real provider clients; enable it
  with ``pytest_plugins = ["langchain_om.testing.pytest_plugin"]`` in your root ``conftest.py``.

Example:
    >>> from langchain_core.messages import AIMessage
    >>> from langchain_om.testing import ScriptedChatModel
    >>> call = {"name": "search", "args": {"q": "om"}, "id": "c1"}
    >>> model = ScriptedChatModel(script=[AIMessage("", tool_calls=[call]), "Found it."])
    >>> search = {"name": "search", "parameters": {}}
    >>> model.bind_tools([search]).invoke("find om").tool_calls[0]["args"]
    {'q': 'om'}
    >>> model.last_call.tool_names
    ['search']
"""

from __future__ import annotations

from langchain_om.testing._embeddings import HashEmbeddings
from langchain_om.testing._errors import (
    ScriptedProviderError,
    ScriptedRateLimitError,
    ScriptedResponse,
    ScriptedServerError,
    ScriptedTimeoutError,
    ScriptExhaustedError,
    rate_limit_error,
    server_error,
    timeout_error,
)
from langchain_om.testing._memory import memory_model
from langchain_om.testing._models import FunctionChatModel, ScriptedChatModel, ScriptItem
from langchain_om.testing._replies import RecordedCall, Reply, StructuredOutputSpec

__all__ = [
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
]
