"""The per-message token-count cache: its entry format, the part keys, and the process memo.

Per-part counts are cached on the message, in
``message.response_metadata["langchain_om"]["tok"]``, as one flat list::

    ["3:tiktoken:o200k_base", 4398046511123, 12, "id=call_1", 3]

The first item names the entry format (:data:`CACHE_VERSION`) and the counting source; then
comes a key and a count per part. A text part's key is an int fingerprint: the text's length
and a CRC-32 of its first and last 32 characters (see :func:`fp`); a tool call's is the
negative int ``~fp`` of its name and arguments. Other keys are strings: short ids and names
verbatim (``"id=…"``, ``"name=…"``), media by kind and a fingerprint of what their estimate
depends on (the provider and the fields the estimate reads), a caller's own estimate as
``"client=<n>"``. Counting **mutates the
message's ``response_metadata`` dict in place** to write this entry. An entry with another
version or source is ignored and overwritten; parts whose key changed are recounted, the
others reused. Malformed metadata is treated as absent and never raises. A cache hit costs a
few dict lookups and one fingerprint of at most 64 characters per text, also on copies
reloaded from a checkpoint (see ``benchmarks/tokens.py``); :func:`read_cache_entry` decodes
an entry for reading.
"""

from __future__ import annotations

import json
import zlib
from typing import TYPE_CHECKING, Any, NamedTuple

from langchain_om._core.media_tokens import client_estimate
from langchain_om._core.types import OM_META_KEY

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = [
    "CACHE_VERSION",
    "MEMO_MAX_ENTRIES",
    "TEXT_MEMOS",
    "MediaBlock",
    "Part",
    "TextMemo",
    "block_client_estimate",
    "block_fingerprint",
    "clear_text_memo",
    "digest",
    "entry_tag",
    "fp",
    "json_text",
    "read_cache_entry",
    "short_part",
    "text_part",
    "tool_call_part",
    "tool_call_text",
]

CACHE_VERSION = 3
"""Version of the cache entry format and of the part accounting; bump to invalidate."""


_crc32 = zlib.crc32
_SAMPLE = 32
"""Characters read from each end of a long text to fingerprint it."""


def fp(text: str) -> int:
    """Fingerprint of a text: its length and a CRC-32 of its first and last 32 characters.

    The key only has to notice that a message's own content changed: messages are not edited
    in place, a changed message almost always changes its length or its ends, and a stale hit
    costs a slightly wrong estimate. Sampling keeps a cache hit O(1) in the text's length,
    which matters for messages reloaded from a checkpoint (new objects, so every text is
    fingerprinted again). An int compares cheaper than a formatted key.
    """
    n = len(text)
    if n > 2 * _SAMPLE:
        text = text[:_SAMPLE] + text[-_SAMPLE:]
    try:
        data = text.encode()  # the default codec call is several times cheaper than with errors=
    except UnicodeEncodeError:  # lone surrogates: same bytes as before, via surrogatepass
        data = text.encode("utf-8", "surrogatepass")
    return (n << 32) | _crc32(data)


def entry_tag(source: str) -> str:
    """First item of a cache entry: the entry format version and the counting source."""
    return f"{CACHE_VERSION}:{source}"


def read_cache_entry(message: BaseMessage) -> dict[str, Any] | None:
    """The token-count cache entry on ``message``, decoded for reading (None if absent).

    Returns ``{"v": version, "src": source, "parts": [{"k": key, "n": count}, ...]}``; a text
    part's key reads ``"text:<fingerprint>"``, a tool call's ``"tool_call:<fingerprint>"``, and
    a caller-supplied estimate has
    ``"s": "client"``. For inspection and tests: counting reads the compact stored form.
    """
    meta = message.response_metadata
    om = meta.get(OM_META_KEY) if isinstance(meta, dict) else None
    entry = om.get("tok") if isinstance(om, dict) else None
    if type(entry) is not list or not entry or not isinstance(entry[0], str):
        return None
    version, _, source = entry[0].partition(":")
    parts: list[dict[str, Any]] = []
    for k, n in zip(entry[1::2], entry[2::2]):  # noqa: B905 - a torn tail is ignored
        if type(k) is int:
            k = f"text:{k}" if k >= 0 else f"tool_call:{~k}"
        item: dict[str, Any] = {"k": k, "n": n}
        if isinstance(k, str) and k.startswith("client="):
            item["s"] = "client"  # a caller's estimate, not ours
        parts.append(item)
    return {"v": int(version) if version.isdigit() else version, "src": source, "parts": parts}


def digest(text: str) -> str:
    """:func:`fp` as a string, for keys that carry a kind prefix."""
    return str(fp(text))


_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


def json_text(value: object) -> str:
    try:
        return _JSON.encode(value)
    except (TypeError, ValueError):  # circular references and the like
        return repr(value)


class MediaBlock(NamedTuple):
    """An image/file block, read (:func:`media_info`) and estimated only on a cache miss."""

    block: dict[str, Any]
    image: bool


# A part: (cache key, payload). The payload is counted only on a cache miss: a str goes to
# the tokenizer, a (name, args) tuple is a tool call, a MediaBlock is estimated from metadata.
# The key of a text part is its int fingerprint (the count depends on the text alone, whatever
# block held it); other keys are "kind:fingerprint" or "kind=value" strings.
# Plain tuples: the cache-hit path builds one per part, and tuples are cheapest.
Part = tuple["int | str", "str | tuple[object, object] | MediaBlock"]


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


def block_fingerprint(block: dict[str, Any], family: str | None, model: str | None) -> str:
    """What a media estimate depends on: the rules in use and the block's fields.

    Payloads (base64 data, data URLs) enter by length and their first and last 32 characters,
    so a cache hit never reads a multi-megabyte attachment.
    """
    out = [str(family), str(model) if family in (None, "openai", "google") else ""]
    _fingerprint(block, out)
    return "\x00".join(out)


def block_client_estimate(block: dict[str, Any]) -> int | None:
    """A caller's ``token_estimate`` on the block (or its ``metadata``/``extras``)."""
    for holder in (block, block.get("metadata"), block.get("extras")):
        if isinstance(holder, dict) and "token_estimate" in holder:
            return client_estimate(holder["token_estimate"])
    return None


def text_part(text: str) -> Part:
    return (fp(text), text)


def short_part(kind: str, text: str) -> Part:
    # Ids and names are short: the text itself is a cheaper key than its hash.
    return (f"{kind}={text}" if len(text) <= 64 else f"{kind}:{digest(text)}", text)


def tool_call_part(name: object, args: object) -> Part:
    # The key fingerprints repr(args), several times cheaper than JSON (built on a miss only);
    # a negative int (~fp) so that it never equals a text part's key.
    return (~fp(repr((name, args))), (name, args))


def tool_call_text(name: object, args: object) -> str:
    args_text = args if isinstance(args, str) else json_text(args)
    return f"{name if isinstance(name, str) else ''} {args_text}"


# ---------------------------------------------------------------------------------------------
# The counter
# ---------------------------------------------------------------------------------------------


MEMO_MAX_ENTRIES = 100_000
"""Most messages a counting source's process memo holds (about 150 bytes each)."""


class TextMemo:
    """Process memo of text messages: message id -> (hash of the text, aux, count).

    ``aux`` is what else the count depends on: a tool result's call id, None for messages
    without tool calls (the only others memoised); the count includes the message overhead.
    The memo answers a recount of a message whose text hashes alike and whose ``aux`` is
    equal, also on a copy reloaded from a checkpoint (same id, equal values), without reading
    the message's cache entry or fingerprinting its parts. The hash is Python's own 64-bit
    string hash over the whole text (computed once per string object), so unlike the entry's
    sampled fingerprint it notices any edit. The memo holds no text; when full it starts
    again (the cache entries on the messages still answer, at the cost of a fingerprint per
    part).
    """

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: dict[str, tuple[int, object, int]] = {}

    def put(self, mid: str, text: str, aux: object, count: int) -> None:
        if len(self.entries) >= MEMO_MAX_ENTRIES:
            self.entries.clear()
        self.entries[mid] = (hash(text), aux, count)


TEXT_MEMOS: dict[str, TextMemo] = {}
"""One memo per cache tag (entry version and counting source)."""


def clear_text_memo() -> None:
    """Forget the process memo (as a new process starts): counts then come from cache entries."""
    TEXT_MEMOS.clear()
