"""Archive mode's cycle: retire the oldest groups into an archive entry, update the catalog.

It takes the place of reflection when ``observation.archive`` is on (see
:mod:`langchain_om._core.archive`). No model is called: the retired groups are stored word
for word, with their receipts and the Observer's labels, in one archive entry (written before
the record that names it is returned), and the record keeps the live tail, the catalog rows
the agent is shown and the newest ids of its archive chain.
"""

from __future__ import annotations

from typing import Any

from langchain_om._core.archive import (
    CHAIN_MAX,
    catalog_rows,
    fit_catalog,
    plan_archive,
)
from langchain_om._core.dates import iso
from langchain_om._core.record import stable_id
from langchain_om._core.types import OMRecord
from langchain_om._plans.effects import Plan, StoreBatch
from langchain_om._plans.storage import obsarchive_put_op
from langchain_om._plans.types import TurnEnv, TurnInput, emit_event
from langchain_om.events import ArchiveEvent

__all__ = ["archive_due", "archive_plan", "archive_state"]


def archive_state(record: OMRecord) -> dict[str, Any]:
    """The record's archive state (empty before its first archive)."""
    state = record.get("archive")
    return dict(state) if isinstance(state, dict) else {}


def archive_due(env: TurnEnv, record: OMRecord) -> bool:
    """Whether the log has reached archive mode's ``after_tokens``."""
    cfg = env.config.observation.archive
    return cfg is not None and record["observation_tokens"] >= cfg.after_tokens


def archive_plan(
    env: TurnEnv, inp: TurnInput, record: OMRecord, *, force: bool = False
) -> Plan[OMRecord]:
    """Retire the oldest groups when the log is at ``after_tokens`` (``force``: now).

    Returns ``record`` unchanged when nothing can retire (below the threshold, or the live
    tail is the whole log).
    """
    cfg = env.config.observation.archive
    assert cfg is not None, "archive_plan runs in archive mode only"
    plan = plan_archive(
        record["groups"],
        after_tokens=0 if force else cfg.after_tokens,
        keep_tokens=cfg.keep_tokens,
    )
    if plan is None:
        return record
    state = archive_state(record)
    chain = [str(i) for i in state.get("chain") or []]
    count = int(state.get("count") or 0)
    generation = record["generation"] + 1
    archive_id = "oma_" + stable_id(
        record["record_id"], record["generation"], *chain[:1], *(g["id"] for g in plan.retired)
    )
    now = iso(env.now())
    retired_tokens = sum(int(g["tokens"]) for g in plan.retired)
    entry = {
        "archive_id": archive_id,
        "thread_id": record["thread_id"],
        "resource_id": record["resource_id"],
        "record_id": record["record_id"],
        "generation": generation,
        "index": count + 1,
        "archived_at": now,
        "previous": chain[: CHAIN_MAX - 1],
        "tokens": retired_tokens,
        "groups": [dict(g) for g in plan.retired],
    }
    # The entry is stored before any record names it (a lost write leaves an unnamed entry).
    yield StoreBatch([obsarchive_put_op(record["thread_id"], entry)])
    earlier = [{k: v for k, v in r.items() if k != "cut"} for r in state.get("rows") or []]
    shown, marker, tokens = fit_catalog(
        [*catalog_rows(archive_id, generation, plan.retired), *earlier],
        older=state.get("hidden"),
        max_tokens=cfg.max_catalog_tokens,
        count=env.counter.count_text,
    )
    new: OMRecord = dict(record)  # type: ignore[assignment]
    new["groups"] = plan.retained
    new["observation_tokens"] = sum(int(g["tokens"]) for g in plan.retained)
    new["generation"] = generation
    new["updated_at"] = now
    new["archive"] = {
        "head": archive_id,
        "count": count + 1,
        "chain": [archive_id, *chain][:CHAIN_MAX],
        "rows": shown,
        "hidden": marker,
        "catalog_tokens": tokens,
    }
    emit_event(
        env,
        inp,
        ArchiveEvent(
            archive_id=archive_id,
            archived_at=now,
            groups_archived=len(plan.retired),
            tokens_archived=retired_tokens,
            observation_tokens=new["observation_tokens"],
            catalog_tokens=tokens,
            archive_count=count + 1,
            generation_count=generation,
            record_id=record["record_id"],
            thread_id=record["thread_id"],
        ),
    )
    return new
