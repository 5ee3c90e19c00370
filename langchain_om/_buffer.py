"""Background buffering and activation plans (SPEC §7, steps 2–4).

* :func:`buffer_plan` — a background Observer call over messages not yet covered by a chunk;
  the chunk is stored (``storage.buffer_ns``) before ``data-om-buffering-end`` announces it.
* :func:`activation_plan` — moves a prefix of stored chunks into the log, with no model call:
  their messages are archived, then leave the window.
* :func:`reflection_buffer_plan` — a background Reflector call over the oldest groups.
* :func:`activate_reflection` — swaps a stored reflection in for the groups it covers.

Background plans never raise: failures are reported through events and hooks, and the
synchronous path takes over at the threshold.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import BaseMessage
from langgraph.store.base import PutOp

from langchain_om._core.record import append_observations, make_group, new_id, stable_id
from langchain_om._core.reflector import apply_reflection, buffered_reflection_target
from langchain_om._core.types import OMRecord
from langchain_om._cycles import (
    Cycle,
    TurnEnv,
    TurnInput,
    _emit,
    call_observer,
    call_reflector,
    iso,
)
from langchain_om._effects import Plan, StoreBatch
from langchain_om.events import (
    ActivationEvent,
    BufferingEndEvent,
    BufferingFailedEvent,
    BufferingStartEvent,
)
from langchain_om.extractors import persist, run_extractors
from langchain_om.storage import buffer_ns, observed_ops, reflected_ops, reflection_ns

BackgroundBody = Callable[[Cycle], Plan[dict[str, Any]]]
"""The work of a background cycle: returns the end event's fields."""


def background_cycle(
    env: TurnEnv,
    inp: TurnInput,
    record: OMRecord,
    *,
    operation: Literal["observation", "reflection"],
    tokens: int,
    body: BackgroundBody,
    cycle_id: str | None = None,
) -> Plan[None]:
    """Run ``body`` with buffering start/end/failed events and hooks. Never raises.

    With ``cycle_id``, the step that scheduled the job has already announced its start (so
    ``data-om-buffering-start`` reaches the turn's stream); otherwise it is announced here.
    """
    cycle = Cycle(env, inp, record, operation, tokens, "async-buffer")
    if cycle_id is not None:
        cycle.cycle_id = cycle_id
    else:
        cycle.emit(buffering_start(env, record, operation, tokens, cycle.cycle_id))
    yield from cycle.hook("start")
    try:
        done = yield from body(cycle)
    except Exception as exc:
        cycle.emit(
            BufferingFailedEvent(
                cycle_id=cycle.cycle_id,
                operation_type=operation,
                failed_at=iso(env.now()),
                duration_ms=cycle.duration_ms,
                tokens_attempted=tokens,
                error=f"{type(exc).__name__}: {exc}",
                record_id=record["record_id"],
                thread_id=record["thread_id"],
            )
        )
        yield from cycle.hook("end", error=exc)
        return
    cycle.emit(
        BufferingEndEvent(
            cycle_id=cycle.cycle_id,
            operation_type=operation,
            completed_at=iso(env.now()),
            duration_ms=cycle.duration_ms,
            tokens_buffered=tokens,
            record_id=record["record_id"],
            thread_id=record["thread_id"],
            **done,
        )
    )
    yield from cycle.hook("end", error=None, observations=done["observations"])


def buffering_start(
    env: TurnEnv,
    record: OMRecord,
    operation: Literal["observation", "reflection"],
    tokens: int,
    cycle_id: str,
) -> BufferingStartEvent:
    """The ``data-om-buffering-start`` event of a background cycle."""
    return BufferingStartEvent(
        cycle_id=cycle_id,
        operation_type=operation,
        started_at=iso(env.now()),
        tokens_to_buffer=tokens,
        record_id=record["record_id"],
        thread_id=record["thread_id"],
    )


def buffer_plan(
    env: TurnEnv,
    inp: TurnInput,
    record: OMRecord,
    messages: Sequence[BaseMessage],
    pending_texts: Sequence[str],
    *,
    cycle_id: str | None = None,
) -> Plan[None]:
    """Observe ``messages`` in the background and store the chunk. Never raises."""
    thread_id = record["thread_id"]
    tokens_in = env.counter.count_messages(messages)

    def body(cycle: Cycle) -> Plan[dict[str, Any]]:
        parsed = yield from call_observer(cycle, messages, pending_texts=pending_texts)
        found = run_extractors(
            env.extractors, parsed.extracted, record["extracted"], thread_id=thread_id
        )
        text = parsed.observations.strip()
        ids = [m.id or "" for m in messages]
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
            "message_tokens": tokens_in,
            "created_at": iso(env.now()),
            "hints": {k: v for k, v in hints if v},
            "extracted": found.values,
        }
        # Persisted before announced.
        yield StoreBatch([PutOp(buffer_ns(thread_id), ids[0], chunk, index=False)])
        return {
            "buffered_tokens": chunk["tokens"],
            "observations": text,
            "extracted_values": found.values,
            "extraction_failures": found.failures,
        }

    yield from background_cycle(
        env, inp, record, operation="observation", tokens=tokens_in, body=body, cycle_id=cycle_id
    )


def activation_plan(
    env: TurnEnv,
    inp: TurnInput,
    record: OMRecord,
    window: list[BaseMessage],
    chunks: Sequence[Mapping[str, Any]],
    *,
    triggered_by: Literal["threshold", "ttl", "provider_change"],
) -> Plan[tuple[OMRecord, list[BaseMessage], list[BaseMessage]]]:
    """Move ``chunks`` (a valid prefix chain) into the log: archive, then leave the window."""
    count = sum(len(c["message_ids"]) for c in chunks)
    batch, rest = window[:count], window[count:]
    now = iso(env.now())
    new = record
    cursor = record["observed_message_count"]
    for chunk in chunks:
        size = len(chunk["message_ids"])
        group = make_group(
            text=str(chunk["text"]),
            tokens=int(chunk["tokens"]),
            message_ids=[str(i) for i in chunk["message_ids"]],
            observed_at=now,
            group_id=stable_id(record["record_id"], "obs", cursor, chunk["message_ids"][0]),
        )
        hints = dict(chunk.get("hints") or {})
        new = append_observations(
            new,
            group=group,
            observed_ids=[str(i) for i in chunk["message_ids"]],
            observed_tokens=int(chunk["message_tokens"]),
            hints={k: hints.get(k) for k in ("current_task", "suggested_response", "thread_title")},
            extracted={},
            thread_title=env.config.observation.thread_title,
            now=now,
        )
        new["extracted"] = persist(env.extractors, new["extracted"], chunk.get("extracted") or {})
        cursor += size
    ops: list[Any] = observed_ops(batch, before=record, after=new, vector=env.vector)
    ops.extend(
        PutOp(buffer_ns(record["thread_id"]), str(c["message_ids"][0]), None) for c in chunks
    )
    yield StoreBatch(ops)
    _emit(
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
            observations="\n\n".join(str(c["text"]) for c in chunks),
            triggered_by=triggered_by,
            previous_model=record.get("last_actor_model"),
            current_model=inp.actor_model,
            record_id=record["record_id"],
            thread_id=record["thread_id"],
        ),
    )
    return new, rest, batch


def reflection_buffer_plan(
    env: TurnEnv,
    inp: TurnInput,
    record: OMRecord,
    group_ids: Sequence[str],
    *,
    cycle_id: str | None = None,
) -> Plan[None]:
    """Reflect the leading groups ``group_ids`` in the background and store it. Never raises."""
    wanted = set(group_ids)
    groups = [g for g in record["groups"] if g["id"] in wanted]
    slice_tokens = sum(g["tokens"] for g in groups)

    def body(cycle: Cycle) -> Plan[dict[str, Any]]:
        target = buffered_reflection_target(slice_tokens)
        best = yield from call_reflector(cycle, groups, target=target, skip_continuation_hints=True)
        value = {
            "id": stable_id(record["record_id"], "bref", *group_ids),
            "text": best.text,
            "tokens": best.tokens,
            "input_tokens": slice_tokens,
            "group_ids": list(group_ids),
            "created_at": iso(env.now()),
        }
        yield StoreBatch([PutOp(reflection_ns(record["thread_id"]), "current", value, index=False)])
        return {"buffered_tokens": best.tokens, "observations": best.text}

    yield from background_cycle(
        env, inp, record, operation="reflection", tokens=slice_tokens, body=body, cycle_id=cycle_id
    )


def reflection_is_valid(record: OMRecord, buffered: Mapping[str, Any] | None) -> bool:
    """A stored reflection applies when its groups are still the log's leading groups."""
    if not buffered:
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
    triggered_by: Literal["threshold", "ttl", "provider_change"],
) -> Plan[OMRecord]:
    """Swap a stored reflection in for the groups it covers (no model call)."""
    ids = [str(i) for i in buffered["group_ids"]]
    new = apply_reflection(
        record,
        text=str(buffered["text"]),
        tokens=int(buffered["tokens"]),
        covered_group_ids=ids,
        now=iso(env.now()),
        new_group_id=stable_id(record["record_id"], "ref", record["generation"] + 1, *ids),
        suggested_response=None,
    )
    new["reflection_suppressed_at_tokens"] = None
    yield StoreBatch(
        [
            PutOp(reflection_ns(record["thread_id"]), "current", None),
            *reflected_ops(record, new, vector=env.vector),
        ]
    )
    _emit(
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
            observations=str(buffered["text"]),
            triggered_by=triggered_by,
            record_id=record["record_id"],
            thread_id=record["thread_id"],
        ),
    )
    return new
