"""Pinned thread titles: a title the application gives a thread wins over the Observer's.

``rename_thread`` pins a title in the store (``("langchain_om", "titles", <thread>)``), so it
holds for every front door, graph checkpoints and forks included. Every observation (the
synchronous cycle and the activation of buffered chunks) reads the pin and writes the pinned
title into the record, while the Observer's proposals keep going into the record's
``thread_title`` hint; no ``data-om-thread-update`` is sent for a pinned thread.
``unpin_thread_title`` removes the pin: the next observation with ``observation.thread_title``
on shows the Observer's title again. Status and ``inspect`` show the pinned title at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.store.base import Item

from langchain_om._core.dates import iso
from langchain_om._core.types import OMRecord
from langchain_om._plans.effects import Plan, StoreBatch
from langchain_om._plans.storage import title_pin_get_op, title_pin_put_op
from langchain_om._plans.types import TurnEnv, TurnInput, emit_event
from langchain_om.errors import OMUsageError
from langchain_om.events import ThreadUpdateEvent

__all__ = [
    "MAX_TITLE_CHARS",
    "clean_title",
    "pin_plan",
    "pinned_title",
    "pinned_title_plan",
    "retitled_plan",
    "titled_plan",
    "unpin_plan",
    "with_pin",
]

MAX_TITLE_CHARS = 200
"""The longest title ``rename_thread`` takes."""


def clean_title(title: Any) -> str:
    """``title`` on one line, spaces collapsed.

    Raises:
        OMUsageError: it is not a string, is blank, or is longer than :data:`MAX_TITLE_CHARS`.
    """
    if not isinstance(title, str):
        raise OMUsageError(
            f"A thread title must be a string, got {type(title).__name__}; pass e.g. "
            "rename_thread('t1', 'Trip to Lisbon')."
        )
    text = " ".join(title.split())
    if not text:
        raise OMUsageError(
            "A thread title cannot be blank; to let the Observer title the thread again, call "
            "unpin_thread_title(thread_id)."
        )
    if len(text) > MAX_TITLE_CHARS:
        raise OMUsageError(
            f"A thread title has at most {MAX_TITLE_CHARS} characters, this one "
            f"{len(text)}; shorten it."
        )
    return text


def pinned_title(item: Item | None) -> str | None:
    """The title a pin item holds (``None`` for no item)."""
    value = item.value if item is not None else None
    title = value.get("title") if isinstance(value, dict) else None
    return title if isinstance(title, str) and title else None


def pinned_title_plan(thread_id: str) -> Plan[str | None]:
    """The thread's pinned title (``None`` when it has none)."""
    (item,) = yield StoreBatch([title_pin_get_op(thread_id)])
    return pinned_title(item)


def pin_plan(thread_id: str, title: str, *, now: str) -> Plan[None]:
    """Pin ``title`` (already :func:`clean_title`-ed) as the thread's title."""
    yield StoreBatch([title_pin_put_op(thread_id, title, pinned_at=now)])


def unpin_plan(thread_id: str) -> Plan[bool]:
    """Remove the thread's pinned title; whether it had one."""
    had = (yield from pinned_title_plan(thread_id)) is not None
    if had:
        yield StoreBatch([title_pin_put_op(thread_id, None)])
    return had


def with_pin(record: OMRecord, pinned: str | None) -> OMRecord:
    """``record`` carrying the pinned title (``record`` itself without a pin or when equal)."""
    if pinned is None or record.get("title") == pinned:
        return record
    out: OMRecord = dict(record)  # type: ignore[assignment]
    out["title"] = pinned
    return out


def titled_plan(record: OMRecord) -> Plan[tuple[OMRecord, bool]]:
    """``record`` with its thread's pinned title, and whether the thread has one."""
    pinned = yield from pinned_title_plan(record["thread_id"])
    return with_pin(record, pinned), pinned is not None


def retitled_plan(
    env: TurnEnv,
    inp: TurnInput,
    cycle_id: str,
    before: Mapping[str, str],
    after: Mapping[str, str],
) -> Plan[None]:
    """``data-om-thread-update`` for each thread of a resource given a new title.

    ``before`` and ``after`` are the resource's titles per thread id around one observation
    (synchronous, or the activation of buffered chunks). A thread whose title is pinned gets
    none.
    """
    changed = [t for t, title in after.items() if before.get(t) != title]
    if not changed:
        return
    pins = yield StoreBatch([title_pin_get_op(t) for t in changed])
    for thread_id, pin in zip(changed, pins, strict=True):
        if pinned_title(pin) is None:
            event = ThreadUpdateEvent(
                cycle_id=cycle_id,
                thread_id=thread_id,
                old_title=before.get(thread_id),
                new_title=after[thread_id],
                timestamp=iso(env.now()),
            )
            emit_event(env, inp, event)
