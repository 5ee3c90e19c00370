"""Line ids of the observation log and the edits the agent's ``memory`` tool makes.

A line's id is derived from its group id and its position in that group, so it is stable until
the group changes (a reflection writes new groups, and new ids). Only observation lines get
ids: ``Date:`` headers and blank lines do not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from langchain_om._core.types import OMRecord

__all__ = ["edit_line", "find_lines", "line_id"]


def line_id(group_id: str, index: int) -> str:
    """``L`` and six hex digits for line ``index`` of group ``group_id``."""
    return "L" + hashlib.sha1(f"{group_id}:{index}".encode()).hexdigest()[:6]


def _is_observation(line: str) -> bool:
    text = line.strip()
    return bool(text) and not text.startswith("Date:")


def find_lines(record: OMRecord, query: str = "", *, limit: int = 20) -> list[dict[str, str]]:
    """Observation lines (``{"id", "text"}``) holding every word of ``query``, newest first."""
    words = [w.lower() for w in query.split()]
    found: list[dict[str, str]] = []
    for group in reversed(record["groups"]):
        lines = group["text"].splitlines()
        for index in range(len(lines) - 1, -1, -1):
            line = lines[index]
            if _is_observation(line) and all(w in line.lower() for w in words):
                found.append({"id": line_id(group["id"], index), "text": line.strip()})
                if len(found) >= limit:
                    return found
    return found


def edit_line(
    record: OMRecord, target: str, text: str | None, count: Callable[[str], int]
) -> OMRecord:
    """``record`` with line ``target`` replaced by ``text`` (``None`` deletes it).

    Raises:
        KeyError: no observation line has the id ``target``.
    """
    groups = list(record["groups"])
    for position, group in enumerate(groups):
        lines = group["text"].splitlines()
        for index, line in enumerate(lines):
            if _is_observation(line) and line_id(group["id"], index) == target:
                if text is None:
                    lines[index] = ""
                else:
                    indent = line[: len(line) - len(line.lstrip())]
                    lines[index] = indent + " ".join(text.split())
                body = "\n".join(lines)
                groups[position] = {**group, "text": body, "tokens": count(body) if body else 0}
                out: OMRecord = dict(record)  # type: ignore[assignment]
                out["groups"] = groups
                out["observation_tokens"] = sum(g["tokens"] for g in groups)
                return out
    raise KeyError(target)
