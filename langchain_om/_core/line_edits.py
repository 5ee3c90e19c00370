"""Line ids of the observation log, the edits the agent's ``memory`` tool makes, and their marks.

A line's id is derived from its group id and its position in that group, so it is stable until
the group changes (a reflection writes new groups, and new ids). Only observation lines get
ids: ``Date:`` headers and blank lines do not.

An edit must stick. Background work computed from the log before it (a buffered reflection, a
buffered chunk, one still running) would otherwise bring the old line back when it activates.
So every edit leaves marks in the record:

* ``record["log_edit"]``: an id that changes with every line edit. Buffered work carries the
  mark of the record it was computed from; work with another mark was computed before an edit
  (or on another branch) and is dropped, never activated.
* ``record["working_memory_edit"]``: the same for updates of the working memory; a buffered
  chunk from before one keeps its observations but not its working memory.
* ``record["forgotten"]``: keys of the lines deleted or corrected away (a salted hash of their
  normalised content, not the text), and no line with one of these keys enters the log again:
  :func:`without_forgotten` drops it from every observation and reflection before it is
  appended.

The text a correction writes is held to the Observer's rules: memory markup in it is
neutralised (:mod:`~langchain_om._core.markup`), it stays one list line with the old line's
priority and time, and it is bounded like one (:mod:`~langchain_om._core.bounds`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from langchain_om._core.bounds import line_problem
from langchain_om._core.markup import MEMORY_TAGS, neutralise
from langchain_om._core.types import OMRecord
from langchain_om.errors import OMUsageError

__all__ = [
    "EDIT_TAGS",
    "FORGOTTEN_KEY",
    "LOG_EDIT_KEY",
    "WORKING_MEMORY_EDIT_KEY",
    "edit_line",
    "find_lines",
    "line_id",
    "corrected_line",
    "edit_marks",
    "line_key",
    "same_mark",
    "with_mark",
    "without_forgotten",
]

EDIT_TAGS: tuple[str, ...] = (*MEMORY_TAGS, "working-memory")
"""Section tags neutralised in a correction (the tool adds the extractors' own)."""

LOG_EDIT_KEY = "log_edit"
WORKING_MEMORY_EDIT_KEY = "working_memory_edit"
FORGOTTEN_KEY = "forgotten"

_MARKER = re.compile(r"^\s*(?:(?:[-*+•]|\d{1,3}[.)]|->)\s*)*")
_PRIORITY = re.compile(r"^\s*(?:🔴|🟡|🟢|✅)+\s*")
_TIME = re.compile(r"^\s*\(\d{1,2}:\d{2}\)\s*")
_WORDS = re.compile(r"[^\W_]+")
_PREFIX = re.compile(r"^(\s*(?:[-*+•]\s+)?(?:(?:🔴|🟡|🟢|✅)\s*)?(?:\(\d{1,2}:\d{2}\)\s*)?)")
_LIST_LINE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+\S")


def line_id(group_id: str, index: int) -> str:
    """``L`` and six hex digits for line ``index`` of group ``group_id``."""
    return "L" + hashlib.sha1(f"{group_id}:{index}".encode()).hexdigest()[:6]


def _is_observation(line: str) -> bool:
    text = line.strip()
    return bool(text) and not text.startswith("Date:")


def line_key(record: Mapping[str, Any], line: str) -> str | None:
    """The key a forgotten ``line`` is remembered by (``None`` for headers and blank lines).

    The line's content without its list mark, priority and time, case-folded, as words only:
    the same fact observed again at another time has the same key. It is a hash salted with
    the record's id, so the record keeps no copy of what was forgotten.
    """
    if not _is_observation(line):
        return None
    text = _TIME.sub("", _PRIORITY.sub("", _MARKER.sub("", line.strip(), count=1), count=1))
    words = _WORDS.findall(text.casefold())
    if not words:
        return None
    salted = f"{record.get('record_id', '')}\x1f{' '.join(words)}"
    return hashlib.sha256(salted.encode("utf-8", "surrogatepass")).hexdigest()[:20]


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


def _mark(previous: Any, *parts: object) -> str:
    text = "\x1f".join(str(p) for p in (previous, *parts))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def with_mark(record: OMRecord, key: str, *parts: object) -> OMRecord:
    """``record`` with a new edit mark under ``key`` (derived from the old one and ``parts``)."""
    out: OMRecord = dict(record)  # type: ignore[assignment]
    out[key] = _mark(record.get(key), *parts)  # type: ignore[literal-required]
    return out


def edit_marks(record: Mapping[str, Any], *keys: str) -> dict[str, str]:
    """The marks ``keys`` of ``record`` (those it has), to store with work computed from it."""
    return {key: str(record[key]) for key in keys if record.get(key) is not None}


def same_mark(record: Mapping[str, Any], work: Mapping[str, Any], key: str) -> bool:
    """Whether buffered ``work`` was computed from a record with ``record``'s mark ``key``."""
    return record.get(key) == work.get(key)


def corrected_line(old: str, text: str, tags: Iterable[str]) -> str:
    """The line a correction writes: one line, markup neutralised, a list line.

    Without a list mark of its own the text keeps the old line's mark, priority and time
    (``* 🔴 (09:00) ``), so a correction can never turn into a ``Date:`` header or a section.
    """
    line = neutralise(" ".join(text.split()), tags=tags)  # before the prefix: its own Date:
    if not _LIST_LINE.match(line):
        prefix = _PREFIX.match(old.strip())
        head = prefix.group(1) if prefix and prefix.group(1).strip() else "* "
        line = head + line
    indent = old[: len(old) - len(old.lstrip())]
    return indent + line


def edit_line(
    record: OMRecord,
    target: str,
    text: str | None,
    count: Callable[[str], int],
    *,
    tags: Iterable[str] = EDIT_TAGS,
) -> OMRecord:
    """``record`` with line ``target`` replaced by ``text`` (``None`` deletes it).

    The old line is forgotten: every other line with the same content goes too (blanked, so
    the other lines keep their ids), :func:`without_forgotten` keeps it out of the log from
    now on, and the record gets a new ``log_edit`` mark, so buffered work computed before the
    edit is dropped. A correction is written by :func:`corrected_line` (``tags``: the section
    tags to neutralise in it) and re-asserts its own text should it have been forgotten before.

    Raises:
        KeyError: no observation line has the id ``target``.
        OMUsageError: the corrected line is larger than one observation line may be.
    """
    found = _locate(record, target)
    if found is None:
        raise KeyError(target)
    position, index = found
    old = record["groups"][position]["text"].splitlines()[index]
    new_line = None if text is None else corrected_line(old, text, tags)
    if new_line is not None:
        problem = line_problem(new_line.strip(), count)
        if problem is not None:
            raise OMUsageError(f"The correction was not made: {problem}.")
    old_key = line_key(record, old)
    new_key = line_key(record, new_line) if new_line is not None else None
    groups = list(record["groups"])
    for at, group in enumerate(groups):
        lines = group["text"].splitlines()
        changed = False
        for i, line in enumerate(lines):
            if (at, i) == (position, index):
                lines[i], changed = new_line or "", True
            elif old_key is not None and old_key != new_key and line_key(record, line) == old_key:
                lines[i], changed = "", True
        if changed:
            body = "\n".join(lines)
            groups[at] = {**group, "text": body, "tokens": count(body) if body.strip() else 0}
    forgotten = [k for k in record.get("forgotten") or [] if k != new_key]
    if old_key is not None and old_key != new_key and old_key not in forgotten:
        forgotten.append(old_key)
    out = with_mark(record, LOG_EDIT_KEY, target, text)
    out["groups"] = groups
    out["observation_tokens"] = sum(g["tokens"] for g in groups)
    out["forgotten"] = forgotten
    return out


def _locate(record: OMRecord, target: str) -> tuple[int, int] | None:
    """``(group position, line index)`` of the observation line with id ``target``."""
    for position, group in enumerate(record["groups"]):
        for index, line in enumerate(group["text"].splitlines()):
            if _is_observation(line) and line_id(group["id"], index) == target:
                return position, index
    return None


def without_forgotten(record: Mapping[str, Any], text: str) -> str:
    """``text`` (observations about to enter ``record``'s log) without its forgotten lines.

    A ``Date:`` header left with no line under it goes too. Text is returned unchanged when
    nothing is forgotten or nothing matches.
    """
    keys = set(record.get(FORGOTTEN_KEY) or ())
    if not keys or not text:
        return text
    kept: list[str] = []
    dropped = False
    for line in text.splitlines():
        key = line_key(record, line)
        if key is not None and key in keys:
            dropped = True
            continue
        kept.append(line)
    if not dropped:
        return text
    out: list[str] = []
    for index, line in enumerate(kept):
        if line.strip().startswith("Date:"):
            rest = kept[index + 1 :]
            following = next((r for r in rest if r.strip()), "")
            if not following or following.strip().startswith("Date:"):
                continue
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    while out and not out[0].strip():
        out.pop(0)
    return "\n".join(out)
