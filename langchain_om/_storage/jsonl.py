"""Reading JSON-lines files whose every line must be a JSON object (replay and eval files)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def json_objects(path: str | Path, error: type[Exception]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, object)`` for each non-blank line of ``path``, ``where`` being ``path:line``.

    Args:
        path: the JSON-lines file.
        error: raised (with ``where`` in its message) for a line that is not valid JSON or not
            a JSON object.
    """
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{where}: not valid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise error(f"{where}: expected a JSON object")
            yield where, row
