"""Ids of every shape, each with its own label as an id too, and the checks the label tests run.

A thread or resource id is stored under a namespace label (:mod:`langchain_om._core.labels`).
:func:`label_ids` gives random ids and, for each, the id that *is* its label (``a.b`` and
``~a~2Eb``, ``alice@example.com`` and ``~alice@example~2Ecom``); :func:`check_no_takeover`
stores one item per id under its label, opens every id (the legacy-label migration each first
access runs) and checks that every item is still where it was: no id's data moved to another.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Op, PutOp

from langchain_om._core.labels import encode_label
from langchain_om._core.sanitize import sanitize_text
from langchain_om._plans.effects import Executor, Plan, StoreBatch, run_sync
from langchain_om._plans.storage import migrate_legacy_plan, state_ns, threads_ns

_PIECES = [
    *string.ascii_letters,
    *string.digits,
    ".",
    ".",
    "~",
    "~",
    "@",
    "/",
    " ",
    "-",
    "_",
    "%",
    "é",
    "東",
    "🦜",
    "\x00",
    "\x1f",
    "\ud83d",
]


def _random_id(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.1:
        return f"user{rng.randrange(10**6)}@example.com"
    if kind < 0.2:  # hex-looking escapes, as an encoded label would hold
        return "~" + "".join(rng.choice(["~2E", "~7E", "~00", "a", "b", "."]) for _ in range(4))
    if kind < 0.22:
        return "x" * rng.randrange(1_400, 1_600)  # around the label size limit
    return "".join(rng.choice(_PIECES) for _ in range(rng.randrange(1, 16)))


def label_ids(count: int = 10_000, *, seed: int = 0) -> list[str]:
    """At least ``count`` distinct ids: random ones, and the label of each of them as an id.

    (The labels' own labels are not added: for an id starting with ``~`` that never ends.)
    """
    rng = random.Random(seed)
    fixed = ["a.b", "alice@example.com", "~a~2Eb", "~alice@example~2Ecom", "~", "~~", "_", "."]
    ids: dict[str, None] = dict.fromkeys(fixed)
    for value in fixed:
        ids.setdefault(encode_label(value))
    while len(ids) < count:
        value = _random_id(rng)
        ids.setdefault(value)
        ids.setdefault(encode_label(value))
    return list(ids)


def check_labels_injective(ids: Sequence[str]) -> None:
    """No two distinct ids share a label."""
    seen: dict[str, str] = {}
    for value in ids:
        label = encode_label(value)
        other = seen.setdefault(label, value)
        assert other == value, f"{other!r} and {value!r} share the label {label!r}"


def check_no_takeover(store: BaseStore, ids: Sequence[str], *, batch: int = 500) -> None:
    """Store an item for each id, open every id, and find every item where it was.

    Items go through the executor, as memory's own writes do (NUL and lone surrogates become
    markers, which SQLite and PostgreSQL can hold).
    """
    executor = Executor(store=store, call_model=_no_model, acall_model=_ano_model)
    puts = [
        op
        for value in ids
        for op in (
            PutOp(state_ns(value), "current", {"record": {"thread_id": value}}, index=False),
            PutOp(threads_ns(value), value, {"thread_id": value}, index=False),
        )
    ]
    for start in range(0, len(puts), batch):
        run_sync(_batch(puts[start : start + batch]), executor)
    for value in ids:  # what the first access of a thread (and its resource) runs
        run_sync(migrate_legacy_plan(value, value), executor)
    for start in range(0, len(ids), batch):
        chunk = ids[start : start + batch]
        gets = [GetOp(state_ns(v), "current") for v in chunk]
        gets += [GetOp(threads_ns(v), v) for v in chunk]
        found = run_sync(_batch(gets), executor)
        states, entries = found[: len(chunk)], found[len(chunk) :]
        for value, state, entry in zip(chunk, states, entries, strict=True):
            stored = sanitize_text(value)
            assert state is not None, f"{value!r}: its data was moved away"
            owner = state.value["record"]["thread_id"]
            assert owner == stored, f"{value!r} holds the data of {owner!r}"
            assert entry is not None and entry.value["thread_id"] == stored, value


def remove_items(store: BaseStore, ids: Sequence[str], *, batch: int = 500) -> None:
    """Delete what :func:`check_no_takeover` stored (a shared database keeps it otherwise)."""
    executor = Executor(store=store, call_model=_no_model, acall_model=_ano_model)
    deletes = [
        op
        for value in ids
        for op in (PutOp(state_ns(value), "current", None), PutOp(threads_ns(value), value, None))
    ]
    for start in range(0, len(deletes), batch):
        run_sync(_batch(deletes[start : start + batch]), executor)


def _batch(ops: Sequence[Op]) -> Plan[list[Any]]:
    return (yield StoreBatch(ops))  # type: ignore[no-any-return]


def _no_model(effect: object) -> object:
    raise AssertionError("no model call")


async def _ano_model(effect: object) -> object:
    raise AssertionError("no model call")
