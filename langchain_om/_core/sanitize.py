"""Text that every store can hold: NUL and lone surrogates replaced by a visible marker.

PostgreSQL's JSONB and text reject ``\\u0000``; SQLite and PostgreSQL cannot encode a lone
surrogate (half of a UTF-16 pair, e.g. from a cut emoji) as UTF-8. Such characters are
replaced on the way into storage by a marker that says what stood there, ``⟦U+0000⟧`` or
``⟦U+D83D⟧``, so the stored text keeps the position and the code point of every replaced
character and reads honestly to the models.

:func:`restore_text` turns markers back into the characters. This is exact unless the original
text already contained marker-shaped text (``⟦U+0000⟧`` written out literally), which is then
restored to the character as well; no real text is known to do that.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["has_unstorable", "restore_text", "sanitize_text", "sanitize_value"]

_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
_MARKER = re.compile(r"⟦U\+(0000|D[89A-F][0-9A-F]{2})⟧")


def has_unstorable(text: str) -> bool:
    """Whether ``text`` holds a NUL or a lone surrogate."""
    return _UNSTORABLE.search(text) is not None


def sanitize_text(text: str) -> str:
    """``text`` with every NUL and lone surrogate replaced by its ``⟦U+XXXX⟧`` marker.

    A surrogate *pair* in a Python string (text decoded with ``surrogatepass``) is joined into
    the character it encodes instead of being marked.
    """
    if not has_unstorable(text):
        return text
    try:  # a well-formed pair that arrived as two code units
        text = text.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        pass
    return _UNSTORABLE.sub(lambda m: f"⟦U+{ord(m.group(0)):04X}⟧", text)


def restore_text(text: str) -> str:
    """Undo :func:`sanitize_text` (see the module docstring for the one ambiguity)."""
    return _MARKER.sub(lambda m: chr(int(m.group(1), 16)), text)


def sanitize_value(value: Any) -> tuple[Any, bool]:
    """A JSON-like value with every string in it sanitised (keys too), and whether any changed.

    Dicts, lists and tuples are rebuilt only when something in them changed; other values
    are returned as they are.
    """
    if isinstance(value, str):
        clean = sanitize_text(value)
        return clean, clean is not value
    if isinstance(value, Mapping):
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new_key, key_changed = sanitize_value(key) if isinstance(key, str) else (key, False)
            new_item, item_changed = sanitize_value(item)
            changed = changed or key_changed or item_changed
            out[new_key] = new_item
        return (out, True) if changed else (value, False)
    if isinstance(value, list | tuple):
        items = [sanitize_value(item) for item in value]
        if not any(changed for _, changed in items):
            return value, False
        rebuilt = [item for item, _ in items]
        return (tuple(rebuilt) if isinstance(value, tuple) else rebuilt), True
    return value, False
