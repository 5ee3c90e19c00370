"""Archive branches: checkpoint forks and time travel never overwrite each other's messages.

A thread's archive is a sequence of observed messages. When a graph checkpoint is forked (or an
old checkpoint resumed), its record's cursor is behind what the thread already archived, so
its next observed messages would land in slots another branch holds. Each record therefore
names its branch path: ``[[branch, first_seq], …]``, oldest first; sequence number ``seq`` lives
on the last segment whose ``first_seq <= seq``. The root branch is ``""`` and keeps the archive
keys used before branches existed, so old records and archives read as they are.

A record that observes into slots holding other messages (a different id) starts a new branch
at its cursor; its ancestors' segments stay shared, read-only, below the fork point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "ROOT_BRANCH",
    "Segments",
    "branch_at",
    "branch_key",
    "fork",
    "segments_of",
    "split_key",
]

ROOT_BRANCH = ""
Segments = list[tuple[str, int]]
"""``[(branch, first_seq), …]``: the branch path of a record, oldest first."""


def segments_of(record: Mapping[str, Any] | None) -> Segments:
    """The branch path a record names (the root branch when it names none or garbage)."""
    raw = record.get("branches") if isinstance(record, Mapping) else None
    out: Segments = []
    if isinstance(raw, list):
        for entry in raw:
            if (
                isinstance(entry, (list, tuple))
                and len(entry) == 2
                and isinstance(entry[0], str)
                and isinstance(entry[1], int)
                and entry[1] >= 0
                and (not out or entry[1] >= out[-1][1])
            ):
                out.append((entry[0], entry[1]))
    if not out or out[0] != (ROOT_BRANCH, 0):
        return [(ROOT_BRANCH, 0)]
    return out


def branch_at(segments: Sequence[tuple[str, int]], seq: int) -> str:
    """The branch holding sequence number ``seq`` on this path."""
    owner = ROOT_BRANCH
    for branch, first in segments:
        if first <= seq:
            owner = branch
    return owner


def fork(segments: Sequence[tuple[str, int]], branch: str, at_seq: int) -> Segments:
    """The path of a new ``branch`` forked from ``segments`` at ``at_seq``."""
    kept = [(b, s) for b, s in segments if s < at_seq] or [(ROOT_BRANCH, 0)]
    return [*kept, (branch, at_seq)]


def branch_key(branch: str, key: str) -> str:
    """A store key on ``branch`` (the root branch keeps the plain key)."""
    return key if branch == ROOT_BRANCH else f"{branch}:{key}"


def split_key(key: str) -> tuple[str, str]:
    """``(branch, key)`` from a :func:`branch_key` whose plain key has no ``:``."""
    branch, sep, rest = key.rpartition(":")
    return (branch, rest) if sep else (ROOT_BRANCH, key)
