"""Token counters over a LangChain ``token_counter`` callable, and ``token_counter=`` parsing.

:class:`CallableTokenCounter` counts with any ``Callable[[list[BaseMessage]], int]`` (such as
``count_tokens_approximately`` or ``model.get_num_tokens_from_messages``) and caches per-message
counts on the message like the built-in :class:`~langchain_om._core.tokens.TokenCounter`;
:func:`as_token_counter` turns a ``token_counter=`` argument into a counter.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, cast

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately

from langchain_om._core.tokens import TokenCounter, digest, get_default_counter
from langchain_om._core.types import OM_META_KEY
from langchain_om.errors import OMConfigError

__all__ = ["CallableTokenCounter", "MessageCounter", "as_token_counter"]

MessageCounter = Callable[[list[BaseMessage]], int]
"""A LangChain ``token_counter``, e.g. ``count_tokens_approximately`` or
``model.get_num_tokens_from_messages``."""


def _callable_name(fn: Callable[..., Any]) -> str:
    """A stable name for a counting function (the cache source of its counts)."""
    if isinstance(fn, functools.partial):
        args = ",".join(f"{k}={v!r}" for k, v in sorted(fn.keywords.items()))
        return f"{_callable_name(fn.func)}({args})"
    owner = getattr(fn, "__self__", None)
    name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__name__)}"
    if owner is not None and not isinstance(owner, type):
        model = next(
            (
                v
                for a in ("model_name", "model", "model_id")
                if isinstance(v := getattr(owner, a, None), str)
            ),
            "",
        )
        name += f"[{model}]"
    return name


class CallableTokenCounter(TokenCounter):
    """A :class:`TokenCounter` that counts with a LangChain ``token_counter`` callable.

    With ``per_message=True`` (the default) each message is counted alone, as
    ``fn([message]) - fn([])``, and that count is cached on the message like the built-in
    counter's, so unchanged messages are never recounted; a conversation is ``fn([])`` plus its
    messages. That is exact for counters that add up per message (``count_tokens_approximately``
    rounds once per call, so the sum can exceed one whole-list call by under a token per
    message). Pass ``per_message=False`` for a counter that is not additive: every count then
    calls ``fn`` on the whole list, uncached. Text is counted as ``fn([HumanMessage(text)])``
    minus the count of an empty ``HumanMessage``.

    Args:
        fn: ``Callable[[list[BaseMessage]], int]``.
        per_message: Count and cache per message (see above).
        name: Cache source name; by default built from the function (and its model for a bound
            method such as ``model.get_num_tokens_from_messages``). Counts cached under one
            name are reused by any counter with that name.
    """

    def __init__(
        self, fn: MessageCounter, *, per_message: bool = True, name: str | None = None
    ) -> None:
        super().__init__(source="heuristic")
        self.fn = fn
        self.per_message = per_message
        self.name = name or _callable_name(fn)
        self._source = f"callable:{self.name}"
        self._empty_list: int | None = None
        self._empty_text: int | None = None

    def __repr__(self) -> str:
        return f"CallableTokenCounter({self.name!r}, per_message={self.per_message})"

    def for_model(self, model_id: str | None) -> TokenCounter:
        """The callable decides how media count: the same counter for every model."""
        return self

    def _call(self, messages: list[BaseMessage]) -> int:
        self.encode_calls += 1
        n = self.fn(messages)
        if isinstance(n, bool) or not isinstance(n, int | float) or n < 0:
            raise OMConfigError(
                f"token_counter {self.name} returned {n!r} instead of a token count; pass a "
                "function that takes a list of messages and returns an int",
                option="token_counter",
            )
        return math.ceil(n)

    def _baseline(self) -> int:
        if self._empty_list is None:
            self._empty_list = self._call([])
        return self._empty_list

    def count_text(self, text: str) -> int:
        """Tokens of ``text``: a user message holding it, minus an empty user message."""
        if not text:
            return 0
        if self._empty_text is None:
            self._empty_text = self._call([HumanMessage("")])
        return max(0, self._call([HumanMessage(text)]) - self._empty_text)

    def count_message(self, message: BaseMessage) -> int:
        """``fn([message]) - fn([])``, cached on the message while its content is unchanged."""
        parts, n_calls = self._parts(message)
        key = "msg:" + digest(
            f"{type(message).__name__}|{n_calls}|" + "|".join(str(p[0]) for p in parts)
        )
        tag = self._tag or self._resolve_tag()
        metadata: object = message.response_metadata
        om = metadata.get(OM_META_KEY) if isinstance(metadata, dict) else None
        entry = om.get("tok") if isinstance(om, dict) else None
        if (
            type(entry) is list
            and len(entry) == 3
            and entry[0] == tag
            and entry[1] == key
            and type(n := entry[2]) is int
            and n >= 0
        ):
            return n
        n = max(0, self._call([message]) - self._baseline())
        if isinstance(metadata, dict):
            if not isinstance(om, dict):
                om = {}
                metadata[OM_META_KEY] = om
            om["tok"] = [tag, key, n]
        return n

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        """Count a conversation (0 if empty)."""
        if not messages:
            return 0
        if not self.per_message:
            return self._call(list(messages))
        return self._baseline() + sum(self.count_message(m) for m in messages)


def as_token_counter(value: object) -> TokenCounter:
    """The counter for a ``token_counter=`` argument.

    Args:
        value: None (the process-wide counter), a :class:`TokenCounter`, ``"approximate"``
            (LangChain's ``count_tokens_approximately``) or any
            ``Callable[[list[BaseMessage]], int]``.

    Raises:
        OMConfigError: ``value`` is none of these.
    """
    if value is None:
        return get_default_counter()
    if isinstance(value, TokenCounter):
        return value
    if value == "approximate":
        return CallableTokenCounter(count_tokens_approximately, name="approximate")
    if callable(value):
        return CallableTokenCounter(cast("MessageCounter", value))
    raise OMConfigError(
        f"token_counter must be a TokenCounter, 'approximate' or a function taking a list of "
        f"messages and returning an int, got {value!r}",
        option="token_counter",
    )
