"""Background buffering and activation plans: work done ahead of the threshold, used later.

* :func:`buffer_plan` — a background Observer call over messages not yet covered by a chunk;
  the chunk is stored before ``data-om-buffering-end`` announces it.
* :func:`activation_plan` — moves a prefix of stored chunks into the log, with no model call:
  their messages are archived, then leave the window.
* :func:`reflection_buffer_plan` — a background Reflector call over the oldest groups.
* :func:`activate_reflection` — swaps a stored reflection in for the groups it covers.

Background plans never raise: failures are reported through events and hooks, and the
synchronous path takes over at the threshold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, cast

from langchain_core.messages import BaseMessage

from langchain_om._core.backoff import BackoffState, decide_attempt, record_failure
from langchain_om._core.dates import iso
from langchain_om._core.line_edits import (
    LOG_EDIT_KEY,
    WORKING_MEMORY_EDIT_KEY,
    edit_marks,
    same_mark,
    without_forgotten,
)
from langchain_om._core.message_ids import window_ids
from langchain_om._core.record import append_observations, make_group, new_id, stable_id
from langchain_om._core.reflector import apply_reflection, buffered_reflection_target
from langchain_om._core.types import OMRecord
from langchain_om._plans.cycles import Cycle, buffering_start, failure_reason, run_cycle
from langchain_om._plans.damping import retry_after_of
from langchain_om._plans.effects import Plan, StoreBatch
from langchain_om._plans.extract import extract_plan, reflection_extractors
from langchain_om._plans.observation import observe_in_parts
from langchain_om._plans.reflection import call_reflector
from langchain_om._plans.storage import (
    buffer_backoff_put_op,
    chunk_delete_ops,
    chunk_put_op,
    observed_plan,
    reflected_ops,
    reflection_delete_op,
    reflection_put_op,
)
from langchain_om._plans.titles import titled_plan
from langchain_om._plans.transforms import archived_messages
from langchain_om._plans.types import ActivationTrigger, TurnEnv, TurnInput, emit_event
from langchain_om.errors import ObserverOutputError
from langchain_om.events import ActivationEvent
from langchain_om.extractors import (
    ARCHIVE_SUMMARY_SLUG,
    persist,
    run_extractors,
    working_memory_extractor,
)


def announce_buffering(
    env: TurnEnv,
    inp: TurnInput,
    record: OMRecord,
    operation: Literal["observation", "reflection"],
    tokens: int,
    thread_ids: Sequence[str] = (),
) -> str:
    """Emit ``data-om-buffering-start`` for a job about to be scheduled; return its cycle id.

    The step that schedules a job announces it, so the event reaches the turn's stream.
    ``thread_ids``: the threads it buffers (resource scope).
    """
    cycle = Cycle(env, inp, record, operation, tokens, "async-buffer")
    cycle.emit(buffering_start(cycle, thread_ids))
    return cycle.cycle_id


def background_cycle(
    env: TurnEnv,
    inp: TurnInput,
    record: OMRecord,
    operation: Literal["observation", "reflection"],
    tokens: int,
    cycle_id: str | None,
) -> Cycle:
    """The cycle of a background job (announced already when ``cycle_id`` is given)."""
    cycle = Cycle(env, inp, record, operation, tokens, "async-buffer")
    if cycle_id is not None:
        cycle.cycle_id, cycle.announced = cycle_id, True
    return cycle


def buffer_plan(
    env: TurnEnv,
    inp: TurnInput,
    record: OMRecord,
    messages: Sequence[BaseMessage],
    pending_texts: Sequence[str],
    *,
    cycle_id: str | None = None,
    failed_before: BackoffState | None = None,
) -> Plan[None]:
    """Observe ``messages`` in the background and store the chunk. Never raises.

    A failure stores the thread's buffering backoff (``failed_before`` plus this failure), so
    later turns wait out the delay before they buffer again; a stored chunk clears it.
    """
    thread_id = record["thread_id"]
    tokens_in = env.counter.count_messages(messages)

    def body(cycle: Cycle) -> Plan[tuple[OMRecord, dict[str, Any]]]:
        try:
            parsed = yield from observe_in_parts(cycle, messages, pending_texts=pending_texts)
        except Exception as exc:
            yield StoreBatch(
                [buffer_backoff_put_op(thread_id, failed_backoff(env, failed_before, exc))]
            )
            raise
        found = run_extractors(
            env.extractors,
            parsed.extracted,
            record["extracted"],
            thread_id=thread_id,
            count=env.counter.count_text,
        )
        text = parsed.observations.strip()
        ctx, extracted = cycle.context(), record["extracted"]
        found.merge(
            (yield from extract_plan(env, ctx, env.extractors, text, extracted, role="observer"))
        )
        taken = messages if parsed.covered is None else messages[: parsed.covered]
        if not taken:
            raise ObserverOutputError(
                "The Observer's salvaged lines cover no message.",
                raw=parsed.raw,
                reason="ungrounded",
            )
        ids = window_ids(taken)
        hints = (
            ("current_task", parsed.current_task),
            ("suggested_response", parsed.suggested_response),
            ("thread_title", parsed.thread_title),
        )
        chunk = {
            "id": stable_id(record["record_id"], "chunk", ids[0], ids[-1]),
            "text": text,
            "tokens": env.counter.count_text(text) if text else 0,
            "message_ids": ids,
            "message_tokens": tokens_in if taken is messages else env.counter.count_messages(taken),
            "created_at": iso(env.now()),
            "hints": {k: v for k, v in hints if v},
            "extracted": found.values,
            **edit_marks(record, LOG_EDIT_KEY, WORKING_MEMORY_EDIT_KEY),
        }
        # Persisted before announced.
        cleared = [buffer_backoff_put_op(thread_id, None)] if failed_before else []
        yield StoreBatch([chunk_put_op(thread_id, chunk), *cleared])
        return record, {
            "buffered_tokens": chunk["tokens"],
            "observations": text,
            "extracted_values": found.values,
            "extraction_failures": found.failures,
            "outcome": cycle.outcome,
            "covered_messages": len(ids),
        }

    cycle = background_cycle(env, inp, record, "observation", tokens_in, cycle_id)
    yield from run_cycle(cycle, body)


def failed_backoff(env: TurnEnv, before: BackoffState | None, exc: BaseException) -> BackoffState:
    """The backoff state after a failed background cycle (``Retry-After`` honoured)."""
    now = env.now()
    return record_failure(
        before, now=now, reason=failure_reason(exc), retry_after=retry_after_of(exc, now=now)
    )


def backing_off(failed: BackoffState | None, now: datetime) -> bool:
    """Whether a failed background job's delay has not passed yet (then no new one)."""
    return decide_attempt(failed, now=now, tokens=0, block_after=1).action != "attempt"


def activation_plan(
    env: TurnEnv,
    inp: TurnInput,
    record: OMRecord,
    window: list[BaseMessage],
    chunks: Sequence[Mapping[str, Any]],
    *,
    triggered_by: ActivationTrigger,
) -> Plan[tuple[OMRecord, list[BaseMessage], list[BaseMessage]]]:
    """Move ``chunks`` (a valid prefix chain) into the log: archive, then leave the window."""
    count = sum(len(c["message_ids"]) for c in chunks)
    batch, rest = window[:count], window[count:]
    now = iso(env.now())
    new, _ = yield from titled_plan(_with_chunks(env, record, chunks, now))
    ctx = {
        "thread_id": inp.thread_id,
        "resource_id": inp.resource_id,
        "trigger": triggered_by,
        "operation": "activation",
        "actor_model": inp.actor_model,
        "memory": env.memory,
        "configurable": dict(inp.configurable or {}),
    }
    kept = yield from archived_messages(env, ctx, batch)
    new = yield from observed_plan(
        kept,
        before=record,
        after=new,
        vector=env.vector,
        extra=chunk_delete_ops(record["thread_id"], chunks),
    )
    emit_event(
        env,
        inp,
        ActivationEvent(
            cycle_id=new_id(),
            operation_type="observation",
            activated_at=now,
            chunks_activated=len(chunks),
            tokens_activated=sum(int(c["message_tokens"]) for c in chunks),
            observation_tokens=new["observation_tokens"],
            messages_activated=count,
            generation_count=new["generation"],
            observations="\n\n".join(without_forgotten(record, str(c["text"])) for c in chunks),
            triggered_by=triggered_by,
            previous_model=record.get("last_actor_model"),
            current_model=inp.actor_model,
            record_id=record["record_id"],
            thread_id=record["thread_id"],
        ),
    )
    return new, rest, batch


def _with_chunks(
    env: TurnEnv, record: OMRecord, chunks: Sequence[Mapping[str, Any]], now: str
) -> OMRecord:
    """``record`` with the observations of ``chunks`` appended, in order.

    Edits made since a chunk was computed are re-applied: forgotten lines stay out, and a
    chunk from before a working-memory update keeps its observations but not its working
    memory (the update wins).
    """
    new = record
    cursor = record["observed_message_count"]
    memory = working_memory_extractor(env.extractors)
    for chunk in chunks:
        ids = [str(i) for i in chunk["message_ids"]]
        text = str(chunk["text"])
        kept = without_forgotten(record, text)
        extracted = dict(chunk.get("extracted") or {})
        if memory is not None and not same_mark(record, chunk, WORKING_MEMORY_EDIT_KEY):
            extracted.pop(memory.slug, None)
        group = make_group(
            text=kept,
            tokens=int(chunk["tokens"]) if kept == text else env.counter.count_text(kept),
            message_ids=ids,
            observed_at=now,
            group_id=stable_id(record["record_id"], "obs", cursor, chunk["message_ids"][0]),
            first_seq=cursor,
            summary=(chunk.get("extracted") or {}).get(ARCHIVE_SUMMARY_SLUG),
        )
        hints = dict(chunk.get("hints") or {})
        new = append_observations(
            new,
            group=group,
            observed_ids=ids,
            observed_tokens=int(chunk["message_tokens"]),
            hints={k: hints.get(k) for k in ("current_task", "suggested_response", "thread_title")},
            extracted={},
            thread_title=env.config.observation.thread_title,
            now=now,
        )
        new["extracted"] = persist(env.extractors, new["extracted"], extracted)
        cursor += len(ids)
    return new


def reflection_buffer_plan(
    env: TurnEnv,
    inp: TurnInput,
    record: OMRecord,
    group_ids: Sequence[str],
    *,
    cycle_id: str | None = None,
    failed_before: BackoffState | None = None,
) -> Plan[None]:
    """Reflect the leading groups ``group_ids`` in the background and store it. Never raises.

    A failure is stored in the reflection's place as a marker (:func:`reflection_failure`)
    carrying the backoff state (``failed_before`` plus this failure), so later turns wait
    before they start another background reflection instead of retrying at every turn.
    """
    wanted = set(group_ids)
    groups = [g for g in record["groups"] if g["id"] in wanted]
    slice_tokens = sum(g["tokens"] for g in groups)

    def body(cycle: Cycle) -> Plan[tuple[OMRecord, dict[str, Any]]]:
        target = buffered_reflection_target(slice_tokens)
        try:
            best = yield from call_reflector(
                cycle, groups, target=target, skip_continuation_hints=True
            )
        except Exception as exc:
            marker = {
                FAILED_KEY: dict(failed_backoff(env, failed_before, exc)),
                "group_ids": list(group_ids),
            }
            yield StoreBatch([reflection_put_op(record["thread_id"], marker)])
            raise
        found = yield from extract_plan(
            env,
            cycle.context(),
            reflection_extractors(env),
            best.text,
            record["extracted"],
            role="reflector",
        )
        value = {
            "id": stable_id(record["record_id"], "bref", *group_ids),
            "text": best.text,
            "tokens": best.tokens,
            "input_tokens": slice_tokens,
            "group_ids": list(group_ids),
            "created_at": iso(env.now()),
            "extracted": found.values,
            **edit_marks(record, LOG_EDIT_KEY),
        }
        yield StoreBatch([reflection_put_op(record["thread_id"], value)])
        return record, {
            "buffered_tokens": best.tokens,
            "observations": best.text,
            "retention": best.retention,
            "extracted_values": found.values,
            "extraction_failures": found.failures,
        }

    cycle = background_cycle(env, inp, record, "reflection", slice_tokens, cycle_id)
    yield from run_cycle(cycle, body)


FAILED_KEY = "failed"
"""Key of a stored background-reflection failure marker (its value: the backoff state)."""


def reflection_failure(stored: Mapping[str, Any] | None) -> BackoffState | None:
    """The backoff state of a stored failure marker, or ``None`` for a real reflection."""
    state = stored.get(FAILED_KEY) if stored else None
    return cast(BackoffState, state) if isinstance(state, Mapping) else None


def reflection_is_valid(record: OMRecord, buffered: Mapping[str, Any] | None) -> bool:
    """A stored reflection applies when its groups are still the log's leading groups.

    It must also have been computed after the log's last line edit: one computed before
    (stored then, or still running when the edit landed) holds the old lines.
    """
    if not buffered or reflection_failure(buffered) is not None:
        return False
    if not same_mark(record, buffered, LOG_EDIT_KEY):
        return False
    ids = [str(i) for i in buffered.get("group_ids") or []]
    leading = [g["id"] for g in record["groups"][: len(ids)]]
    return bool(ids) and leading == ids


def activate_reflection(
    env: TurnEnv,
    inp: TurnInput,
    record: OMRecord,
    buffered: Mapping[str, Any],
    *,
    triggered_by: ActivationTrigger,
) -> Plan[OMRecord]:
    """Swap a stored reflection in for the groups it covers (no model call)."""
    ids = [str(i) for i in buffered["group_ids"]]
    text = without_forgotten(record, str(buffered["text"]))
    new = apply_reflection(
        record,
        text=text,
        tokens=int(buffered["tokens"])
        if text == buffered["text"]
        else env.counter.count_text(text),
        covered_group_ids=ids,
        now=iso(env.now()),
        new_group_id=stable_id(record["record_id"], "ref", record["generation"] + 1, *ids),
        suggested_response=None,
    )
    new["reflection_suppressed_at_tokens"] = None
    extracted = buffered.get("extracted") or {}
    new["extracted"] = persist(reflection_extractors(env), new["extracted"], extracted)
    yield StoreBatch(
        [
            reflection_delete_op(record["thread_id"]),
            *reflected_ops(record, new, vector=env.vector),
        ]
    )
    emit_event(
        env,
        inp,
        ActivationEvent(
            cycle_id=new_id(),
            operation_type="reflection",
            activated_at=iso(env.now()),
            chunks_activated=1,
            tokens_activated=int(buffered["tokens"]),
            observation_tokens=new["observation_tokens"],
            messages_activated=0,
            generation_count=new["generation"],
            observations=text,
            triggered_by=triggered_by,
            record_id=record["record_id"],
            thread_id=record["thread_id"],
        ),
    )
    return new
