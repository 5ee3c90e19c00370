"""Thread and resource ids as store namespace labels, the same on every LangGraph store.

LangGraph stores join a namespace's labels with ``.``, so a label may not contain ``.`` and
must not be empty; NUL is rejected too (PostgreSQL text cannot hold it), and a lone surrogate
cannot be written as UTF-8 by SQLite or PostgreSQL. Email addresses (``ana@acme.eu``) and
domains are ordinary ids, so ids are encoded into labels:

* an id that is already a valid label, does not start with ``~`` and fits in
  :data:`MAX_LABEL_BYTES` is its own label, so data stored before this encoding existed stays
  where it is;
* any other id becomes ``~`` followed by the id with ``.``, ``~``, NUL (and other C0 controls)
  written as ``~XX`` (two hex digits) and lone surrogates as ``~uXXXX``. Decoding reverses it
  exactly;
* an id whose encoded form would exceed :data:`MAX_LABEL_BYTES` (PostgreSQL indexes
  namespaces in B-trees whose rows are limited to about 2.7 kB) becomes ``~~h`` and the
  SHA-256 of the id: stable and collision-free in practice, but not reversible, so the id
  itself must be kept in the stored value (:func:`decode_label` returns ``None``).

``/``, spaces and non-surrogate unicode are valid in labels and are kept as they are.

The encoding is injective: plain labels never start with ``~``, every encoded one does, and
escapes decode exactly, so no two ids share a label. Data stored under an id's pre-encoding
label (:func:`legacy_label`) is moved on first access, except from a label that is another
id's label today (:func:`is_current_label`).
"""

from __future__ import annotations

import hashlib
import re

__all__ = [
    "ESCAPE",
    "MAX_LABEL_BYTES",
    "decode_label",
    "encode_label",
    "is_current_label",
    "is_valid_label",
    "legacy_label",
]

ESCAPE = "~"
"""Prefix of an encoded label, and the escape character inside it."""

MAX_LABEL_BYTES = 1_500
"""Longest label (UTF-8 bytes) written; longer encodings use the digest form."""

_DIGEST = ESCAPE * 2 + "h"
"""Escapes are ``~`` + two hex digits or ``u``, so an encoding never starts with ``~~h``."""
_NEEDS_ESCAPE = re.compile(r"[.~\x00-\x1f\ud800-\udfff]")
_ESCAPED = re.compile(r"~(?:u([0-9A-F]{4})|([0-9A-F]{2}))")


def is_valid_label(label: str) -> bool:
    """Whether every LangGraph store accepts ``label`` in a namespace."""
    return (
        bool(label)
        and "." not in label
        and "\x00" not in label
        and re.search(r"[\ud800-\udfff]", label) is None
    )


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _escape(char: str) -> str:
    code = ord(char)
    return f"~u{code:04X}" if code > 0xFF else f"~{code:02X}"


def encode_label(value: str) -> str:
    """The namespace label of a thread or resource id (see the module docstring).

    Raises:
        TypeError: ``value`` is not a string.
    """
    if type(value) is str:  # every store op names its thread: the labels are memoised
        label = _LABELS.get(value)
        if label is None:
            label = _encode(value)
            if len(_LABELS) >= _LABELS_MAX:
                _LABELS.clear()
            _LABELS[value] = label
        return label
    if not isinstance(value, str):
        raise TypeError(f"ids must be strings, got {type(value).__name__}")
    return _encode(value)


_LABELS: dict[str, str] = {}
_LABELS_MAX = 4096


def _encode(value: str) -> str:
    if (
        is_valid_label(value)
        and not value.startswith(ESCAPE)
        and _utf8_len(value) <= MAX_LABEL_BYTES
    ):
        return value
    encoded = ESCAPE + _NEEDS_ESCAPE.sub(lambda m: _escape(m.group(0)), value)
    if _utf8_len(encoded) <= MAX_LABEL_BYTES:
        return encoded
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return _DIGEST + digest


def decode_label(label: str) -> str | None:
    """The id a label was encoded from; ``None`` for the digest form of a very long id."""
    if not label.startswith(ESCAPE):
        return label
    if label.startswith(_DIGEST):
        return None

    def unescape(match: re.Match[str]) -> str:
        return chr(int(match.group(1) or match.group(2), 16))

    return _ESCAPED.sub(unescape, label[1:])


_DIGEST_LABEL = re.compile(r"~~h[0-9a-f]{64}")


def is_current_label(label: str) -> bool:
    """Whether some id is stored under ``label`` today (its encoding is exactly ``label``)."""
    if label.startswith(_DIGEST):
        return _DIGEST_LABEL.fullmatch(label) is not None  # the digest of an unknown long id
    decoded = decode_label(label)
    return decoded is not None and _encode(decoded) == label


def legacy_label(value: str) -> str | None:
    """The label this id was stored under before ids were encoded, if it differs.

    Before encoding, an id was used as its own label; stores accepted it when it was a valid
    label. Such an id now encodes differently only when it starts with ``~`` (or is very
    long): read its data under this label too, and move it. Never when that old label is
    another id's label today (``~a~2Eb`` is where ``a.b`` lives): what is stored there is
    that id's, so a thread named like another's label can never take its data over.
    """
    current = encode_label(value)
    if value != current and is_valid_label(value) and not is_current_label(value):
        return value
    return None
