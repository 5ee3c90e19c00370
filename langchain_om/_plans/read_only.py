"""The step of a ``read_only`` memory: show the thread's memory, change nothing.

Nothing is observed, reflected, buffered or written. The record shown is the one the step was
given (an agent's or graph's state), or — when that state has none yet, or holds an earlier
copy of it — the thread's record in the store (written by standalone calls or the history
adapter), so a second agent can read a user's memory in a fresh thread state and sees it grow.
"""

from __future__ import annotations

from langchain_om._core.record import check_owner, coerce_record
from langchain_om._core.types import OMRecord
from langchain_om._plans.effects import Plan, StoreBatch
from langchain_om._plans.storage import state_get_op, unpack_state
from langchain_om._plans.types import TurnInput, TurnOutcome

__all__ = ["read_only_plan"]


def read_only_plan(inp: TurnInput, out: TurnOutcome) -> Plan[TurnOutcome]:
    """``out`` showing the stored record when the step's own record is missing or a copy of it.

    Raises:
        OMUsageError: the stored thread belongs to another resource than ``inp.resource_id``.
    """
    stored = yield from _stored_record(inp.thread_id)
    if stored is None:
        return out
    given = inp.record
    if given is not None and given["record_id"] != stored["record_id"]:
        return out  # the state's own memory (an agent-written thread)
    check_owner(stored["resource_id"], thread_id=inp.thread_id, resource_id=inp.resource_id)
    out.record = stored
    return out


def _stored_record(thread_id: str) -> Plan[OMRecord | None]:
    (item,) = yield StoreBatch([state_get_op(thread_id)])
    data, _ = unpack_state(item)
    return coerce_record(data)
