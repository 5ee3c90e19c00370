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

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["has_unstorable", "restore_text", "sanitize_text", "sanitize_value"]

_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
_MARKER = re.compile(r"⟦U\+(0000|D[89A-F][0-9A-F]{2})⟧")


def has_unstorable(text: str) -> bool:
    """Whether ``text`` holds a NUL or a lone surrogate."""
    if "\x00" in text:
        return True
    try:  # UTF-8 encodes every code point but the surrogates (far faster than the pattern)
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


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
    if not isinstance(value, str) and _clean_json(value):
        return value, False
    return _sanitize(value)


def _clean_json(value: Any) -> bool:
    """Whether ``value`` is JSON text can hold as it is (one C pass instead of a walk).

    Its JSON has every string of it (keys too): a NUL shows as ``\\u0000`` (or a text that
    spells that out, which the walk then checks), a lone surrogate as itself. ``False`` for
    anything JSON cannot encode: the walk decides.
    """
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return "\\u0000" not in text and not has_unstorable(text)


def _sanitize(value: Any) -> tuple[Any, bool]:
    if isinstance(value, str):
        clean = sanitize_text(value)
        return clean, clean is not value
    if isinstance(value, Mapping):
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new_key, key_changed = _sanitize(key) if isinstance(key, str) else (key, False)
            new_item, item_changed = _sanitize(item)
            changed = changed or key_changed or item_changed
            out[new_key] = new_item
        return (out, True) if changed else (value, False)
    if isinstance(value, list | tuple):
        items = [_sanitize(item) for item in value]
        if not any(changed for _, changed in items):
            return value, False
        rebuilt = [item for item, _ in items]
        return (tuple(rebuilt) if isinstance(value, tuple) else rebuilt), True
    return value, False
