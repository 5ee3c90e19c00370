"""Pure operations on the OM record: create it, append observations, update hints.

Every function returns a new record; inputs are never mutated.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_om._core.group_keys import GROUP_KEYS, resolved
from langchain_om._core.receipts import cycle_receipts
from langchain_om._core.sanitize import sanitize_text
from langchain_om._core.types import RECORD_VERSION, Hints, ObservationGroup, OMRecord
from langchain_om.errors import OMUsageError


def new_id() -> str:
    """A fresh 16-hex id."""
    return uuid.uuid4().hex[:16]


def stable_id(*parts: object) -> str:
    """A 16-hex id derived from ``parts`` (the same inputs always give the same id)."""
    text = "\x1f".join(str(p) for p in parts)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def record_id_for(thread_id: str, resource_id: str | None, scope: str) -> str:
    key = f"resource:{resource_id}" if scope == "resource" else f"thread:{thread_id}"
    return "om_" + hashlib.blake2b(key.encode(), digest_size=8).hexdigest()


def new_record(
    *,
    thread_id: str,
    resource_id: str | None,
    scope: Literal["thread", "resource"] = "thread",
    timezone: str = "UTC",
    now: str,
) -> OMRecord:
    return OMRecord(
        v=RECORD_VERSION,
        record_id=record_id_for(thread_id, resource_id, scope),
        thread_id=thread_id,
        resource_id=resource_id,
        scope=scope,
        generation=0,
        groups=[],
        observation_tokens=0,
        observed_message_count=0,
        last_observed_message_id=None,
        hints={},
        extracted={},
        buffered=[],
        buffered_reflection=None,
        timezone=timezone,
        created_at=now,
        updated_at=now,
        last_activity_at=None,
        last_actor_model=None,
        last_buffered_at_tokens=0,
        reflection_suppressed_at_tokens=None,
        total_tokens_observed=0,
        title=None,
    )


def coerce_record(value: Any, *, copy: bool = True) -> OMRecord | None:
    """Return ``value`` as a record if it looks like one of ours, else ``None``.

    A record as graph state holds it (groups by key) gets its groups back from the cache.
    A whole record is copied (the caller may change its copy), or with ``copy=False``, for
    a caller that only reads it, returned as it is.

    Raises:
        StorageError: ``value`` names groups by key that this process has not read.
    """
    if not isinstance(value, Mapping) or value.get("v") != RECORD_VERSION:
        return None
    if "groups" in value:
        return dict(value) if copy else value  # type: ignore[return-value]
    if isinstance(value.get(GROUP_KEYS), list):
        return resolved(value)  # type: ignore[no-any-return]
    return None


def check_owner(
    owner: str | None, *, thread_id: str, resource_id: str | None, found: bool = True
) -> None:
    """Raise when a call naming ``resource_id`` reaches a thread another resource owns.

    A thread id belongs to the resource (user) whose call first wrote it, ``None`` included.
    A call that names a resource must name that one; a call without a resource id acts for
    the thread's owner (single-user apps and operator tools).

    Args:
        owner: the resource the thread's stored data names.
        thread_id: the thread.
        resource_id: the resource the call names (``None``: not checked).
        found: whether the thread exists at all (a new thread has no owner yet).

    Raises:
        OMUsageError: the thread belongs to another resource; the message names both ids.
    """
    if not found or resource_id is None or owner == resource_id:
        return
    if owner is not None and owner == sanitize_text(resource_id):
        return  # the stored id, with NUL or a lone surrogate replaced on the way into storage
    raise OMUsageError(
        f"Thread {thread_id!r} belongs to resource {owner!r}, not {resource_id!r}: a thread id "
        "is bound to the resource (user) that first wrote it, so users never read or delete "
        "each other's threads. Give each user their own thread ids (for example "
        f"{f'{resource_id}:{thread_id}'!r}), or call with resource_id={owner!r}."
    )


def log_text(groups: Sequence[ObservationGroup]) -> str:
    """The observation log as plain text (groups joined by blank lines)."""
    return "\n\n".join(g["text"] for g in groups if g["text"].strip())


def make_group(
    *,
    text: str,
    tokens: int,
    message_ids: Sequence[str],
    observed_at: str,
    group_id: str | None = None,
    first_seq: int | None = None,
    receipts: list[list[Any]] | None = None,
    summary: str | None = None,
) -> ObservationGroup:
    """A group of one cycle's observations.

    With ``first_seq`` (the archive position of ``message_ids[0]``), its lines get receipts:
    all of them were written from those messages, unless ``receipts`` says line by line.
    """
    ids = [m for m in message_ids if m]
    group = ObservationGroup(
        id=group_id or new_id(),
        kind="observation",
        text=text,
        tokens=tokens,
        range=[ids[0], ids[-1]] if ids else None,
        observed_at=observed_at,
        sources=[],
    )
    if receipts is None and first_seq is not None:
        receipts = cycle_receipts(first_seq, len(message_ids))
    if receipts:
        group["receipts"] = receipts
    if summary and summary.strip():
        group["summary"] = " ".join(summary.split())
    return group


def merge_hints(old: Hints, new: Mapping[str, str | None], *, thread_title: bool) -> Hints:
    """New non-empty hints replace old ones; a title only when titles are enabled."""
    merged: dict[str, str] = {k: str(v) for k, v in old.items()}
    for key in ("current_task", "suggested_response", "thread_title"):
        value = new.get(key)
        if key == "thread_title" and not thread_title:
            continue
        if value and value.strip():
            merged[key] = value.strip()
    return merged  # type: ignore[return-value]


def append_observations(
    record: OMRecord,
    *,
    group: ObservationGroup,
    observed_ids: Sequence[str],
    observed_tokens: int,
    hints: Mapping[str, str | None],
    extracted: Mapping[str, Any],
    thread_title: bool,
    now: str,
) -> OMRecord:
    """Append one group to the log and advance the cursor past ``observed_ids``."""
    out: OMRecord = dict(record)  # type: ignore[assignment]
    groups = list(record["groups"])
    if group["text"].strip():
        groups.append(group)
    out["groups"] = groups
    out["observation_tokens"] = sum(g["tokens"] for g in groups)
    out["observed_message_count"] = record["observed_message_count"] + len(observed_ids)
    if observed_ids:
        out["last_observed_message_id"] = observed_ids[-1]
    out["hints"] = merge_hints(record["hints"], hints, thread_title=thread_title)
    if thread_title and out["hints"].get("thread_title"):
        title = out["hints"]["thread_title"]
        if len(title) >= 3:
            out["title"] = title
    if extracted:
        out["extracted"] = {**record["extracted"], **extracted}
    out["total_tokens_observed"] = record["total_tokens_observed"] + observed_tokens
    out["updated_at"] = now
    return out
