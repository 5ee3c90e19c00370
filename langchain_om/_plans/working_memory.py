"""The working memory: reading it from a record and writing the application's updates.

The working memory is the value of the :class:`~langchain_om.extractors.WorkingMemoryExtractor`
in the record (``record["extracted"]["working-memory"]`` by default), so it follows the
memory's scope. :func:`working_memory_text` renders it for the agent's context;
:func:`update_working_memory_plan` replaces it in a stored (standalone) thread, and
:func:`resource_working_memory_plan` in the shared record of a resource (resource scope).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_om._core.bounds import value_problem, value_text
from langchain_om._core.line_edits import WORKING_MEMORY_EDIT_KEY, with_mark
from langchain_om._core.resource import with_extracted
from langchain_om._core.schemas import validate_value
from langchain_om._core.types import OMRecord
from langchain_om._plans.effects import Plan, StoreBatch
from langchain_om._plans.resource import ResourcePlan, commit_plan, load_resource_plan
from langchain_om._plans.standalone import ThreadState, load_plan
from langchain_om._plans.storage import state_put_op
from langchain_om._plans.types import TurnEnv
from langchain_om.errors import OMUsageError
from langchain_om.extractors import (
    Extractor,
    WorkingMemoryExtractor,
    get_path,
    set_path,
    working_memory_extractor,
)


def require_working_memory(extractors: Sequence[Extractor]) -> WorkingMemoryExtractor:
    """The working-memory extractor, or a clear error when none is configured.

    Raises:
        OMUsageError: no ``WorkingMemoryExtractor`` and ``manage_working_memory`` is off.
    """
    found = working_memory_extractor(extractors)
    if found is None or found.path is None:
        raise OMUsageError(
            "This memory keeps no working memory: set observation.manage_working_memory=True "
            "or add a WorkingMemoryExtractor (with a key path) to observation.extract."
        )
    return found


def working_memory_value(extractors: Sequence[Extractor], record: Mapping[str, Any]) -> Any:
    """The working memory kept in ``record`` (``None`` when empty or not configured)."""
    found = working_memory_extractor(extractors)
    if found is None or found.path is None:
        return None
    return get_path(record.get("extracted") or {}, found.path)


def working_memory_text(extractors: Sequence[Extractor], record: Mapping[str, Any]) -> str | None:
    """The working memory as the text of its context block (JSON for a typed one)."""
    value = working_memory_value(extractors, record)
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value.strip() or None
    return json.dumps(value, ensure_ascii=False, indent=2)


def with_working_memory(
    extractors: Sequence[Extractor],
    record: OMRecord,
    value: Any,
    count: Callable[[str], int],
) -> OMRecord:
    """``record`` with its working memory replaced by ``value`` (validated when typed).

    The record gets a new ``working_memory_edit`` mark, so a buffered chunk computed before
    this update never brings the old document back (its observations still count).

    Raises:
        OMUsageError: no working memory is configured, ``value`` does not fit its schema, or
            it is larger than a working memory may be
            (:data:`~langchain_om._core.bounds.MAX_VALUE_TOKENS` tokens).
    """
    found = require_working_memory(extractors)
    if found.structured:
        try:
            value = validate_value(found.schema, value)
        except ValueError as exc:
            raise OMUsageError(f"the working memory does not fit its schema: {exc}") from None
    elif not isinstance(value, str):
        raise OMUsageError(
            f"the working memory is a text document; pass a str, got {type(value).__name__}."
        )
    problem = value_problem(value, count, what="the working memory")
    if problem is not None:
        raise OMUsageError(f"{problem}; keep it to the facts that matter.")
    assert found.path is not None
    out = with_mark(record, WORKING_MEMORY_EDIT_KEY, value_text(value))
    out["extracted"] = set_path(record["extracted"], found.path, value)
    return out


def update_working_memory_plan(
    env: TurnEnv, thread_id: str, resource_id: str | None, value: Any
) -> Plan[ThreadState]:
    """Replace a stored thread's working memory (its window and log unchanged)."""
    state = yield from load_plan(env, thread_id, resource_id)
    state.record = with_working_memory(env.extractors, state.record, value, env.counter.count_text)
    yield StoreBatch([state_put_op(thread_id, state.record, state.window)])
    return state


def resource_working_memory_plan(
    env: TurnEnv,
    thread_id: str,
    resource_id: str | None,
    value: Any,
    record: OMRecord | None = None,
) -> ResourcePlan[ThreadState]:
    """Replace the working memory of the thread's resource (shared by all its threads).

    ``record`` is the thread's record from a graph's or agent's state (else the stored
    thread's is read); the returned state's record shows the new value.

    Raises:
        OMUsageError: no working memory is configured, ``value`` does not fit it, the thread
            belongs to another resource, or no resource is known.
    """
    state = yield from load_plan(env, thread_id, resource_id)
    if record is not None:
        state = ThreadState(record, state.window, state.status, title_pinned=state.title_pinned)
    owner = resource_id or state.record["resource_id"]
    if not owner:
        raise OMUsageError(
            "scope='resource' keeps the working memory per resource: pass resource_id=..."
        )
    shared, _ = yield from load_resource_plan(owner)
    seen = dict(state.record)
    seen["extracted"] = dict(shared["extracted"])
    updated = with_working_memory(
        env.extractors,
        seen,  # type: ignore[arg-type]
        value,
        env.counter.count_text,
    )
    changes = {k: v for k, v in updated["extracted"].items() if shared["extracted"].get(k) != v}
    yield from commit_plan(owner, shared, lambda latest: (with_extracted(latest, changes), True))
    state.record = updated
    return state
