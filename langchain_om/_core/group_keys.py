"""Observation groups named by content key: how graph state holds the log.

A record in graph state replaces its ``groups`` by ``group_keys`` (one content key per group,
in order); the groups are written to the store once each. Groups read or written are kept in
a bounded in-process cache by key, so resolving a record is dict lookups unless this process
has not seen a group (then the store is read; see ``_plans/graph_state.py``).

Keys hash every field of a group, so a changed group is a new key and an old checkpoint's
keys still name what it saw. Groups are never edited in place anywhere in the package.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_om._core.types import ObservationGroup
from langchain_om.errors import StorageError

__all__ = [
    "GROUP_KEYS",
    "cached",
    "group_key",
    "remember",
    "resolved",
    "stored_record",
]

GROUP_KEYS = "group_keys"
"""Field of a record in graph state: its observation groups' content keys, in order (the
record there has no ``groups``)."""

CACHE_MAX = 20_000
"""Groups (and group objects' keys) kept in the cache, least recently used dropped first."""

_groups: OrderedDict[str, ObservationGroup] = OrderedDict()
_keys: OrderedDict[int, tuple[ObservationGroup, str]] = OrderedDict()
"""``id(group)`` → (group, its key): a group object is hashed once (the group is held, so
its id is not reused while it is here)."""


def group_key(group: ObservationGroup) -> str:
    """The content key of ``group``: a hash of all its fields (16 hex digits, per thread)."""
    memo = _keys.get(id(group))
    if memo is not None and memo[0] is group:
        return memo[1]
    data = json.dumps(group, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    key = hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    _keys[id(group)] = (group, key)
    if len(_keys) > CACHE_MAX:
        _keys.popitem(last=False)
    return key


def remember(key: str, group: ObservationGroup) -> None:
    """Keep ``group`` (stored or read under ``key``) in the cache."""
    _groups[key] = group
    _groups.move_to_end(key)
    if len(_groups) > CACHE_MAX:
        _groups.popitem(last=False)


def cached(keys: Iterable[str]) -> dict[str, ObservationGroup]:
    """The cached groups among ``keys`` (by key)."""
    return {k: _groups[k] for k in keys if k in _groups}


def stored_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` as graph state holds it: ``groups`` replaced by ``group_keys``.

    The groups are remembered in the cache (the caller stores the new ones).
    """
    keys = []
    for group in record.get("groups") or []:
        key = group_key(group)
        remember(key, group)
        keys.append(key)
    body = {k: v for k, v in record.items() if k != "groups"}
    body[GROUP_KEYS] = keys
    return body


def resolved(body: Mapping[str, Any], groups: Mapping[str, ObservationGroup] | None = None) -> Any:
    """The record ``body`` (stored form) with its groups back, from ``groups`` or the cache.

    Raises:
        StorageError: a group is neither given nor cached.
    """
    keys: list[str] = body[GROUP_KEYS]
    found = dict(groups) if groups is not None else {}
    found.update(cached(k for k in keys if k not in found))
    if len(found) < len(set(keys)):
        raise StorageError(
            "this record names its observation groups by key and they have not been read "
            "from the store yet: read the graph state with memory.read_state(state) (or "
            "memory.status(thread_id=...)) instead of using state['om_record'] directly"
        )
    record = {k: v for k, v in body.items() if k != GROUP_KEYS}
    record["groups"] = [found[k] for k in keys]
    return record
