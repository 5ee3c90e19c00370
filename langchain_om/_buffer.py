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

import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import BaseMessage
from langgraph.store.base import PutOp

from langchain_om._core.observer import (
    build_observer_messages,
    format_messages_for_observer,
    parse_observer_output,
)
from langchain_om._core.record import (
    append_observations,
    log_text,
    make_group,
    new_id,
    stable_id,
)
from langchain_om._core.reflector import (
    ReflectionLadder,
    apply_reflection,
    buffered_reflection_target,
    build_reflector_messages,
    compression_start_level,
)
from langchain_om._core.truncation import truncate_observations
from langchain_om._core.types import OMRecord
from langchain_om._cycles import (
    TurnEnv,
    TurnInput,
    _emit,
    _hook,
    _hook_payload,
    _text,
    _usage,
    iso,
)
from langchain_om._effects import ModelCall, Plan, StoreBatch
from langchain_om.errors import ObserverOutputError
from langchain_om.events import (
    ActivationEvent,
    BufferingEndEvent,
    BufferingFailedEvent,
    BufferingStartEvent,
)
from langchain_om.storage import buffer_ns, observed_ops, reflected_ops, reflection_ns

BUFFERED_MARKER = "--- BUFFERED (pending activation) ---"


def _previous(env: TurnEnv, record: OMRecord, pending_texts: Sequence[str]) -> Any:
    text = log_text(record["groups"])
    if pending_texts:
        text = "\n\n".join([t for t in (text, BUFFERED_MARKER, *pending_texts) if t])
    if not text:
        return None
    budget = env.config.observation.previous_observer_tokens
    return truncate_observations(
        text, None if budget is False else int(budget), env.counter.count_text
    )


def buffer_plan(
    env: TurnEnv,
    inp: TurnInput,
    record: OMRecord,
    messages: Sequence[BaseMessage],
    pending_texts: Sequence[str],
) -> Plan[None]:
    """Observe ``messages`` in the background and store the chunk. Never raises."""
    cfg = env.config
    cycle_id = new_id()
    started = time.monotonic()
    tokens_in = env.counter.count_messages(messages)
    thread_id = record["thread_id"]
    _emit(
        env,
        inp,
        BufferingStartEvent(
            cycle_id=cycle_id,
            operation_type="observation",
            started_at=iso(env.now()),
            tokens_to_buffer=tokens_in,
            record_id=record["record_id"],
            thread_id=thread_id,
        ),
    )
    payload = _hook_payload(inp, "async-buffer", cycle_id=cycle_id)
    yield from _hook(env, "on_observation_start", payload)
    usage = meta = None
    try:
        history = format_messages_for_observer(
            messages,
            timezone=record["timezone"],
            tool_result_max_tokens=cfg.observation.tool_result_max_tokens,
            count=env.counter.count_text,
            now=env.now(),
            observe_attachments=cfg.observation.observe_attachments,
        )
        prompt = build_observer_messages(
            history=history,
            previous=_previous(env, record, pending_texts),
            prior_hints={k: str(v) for k, v in record["hints"].items()},
            instruction=cfg.observation.instruction,
            thread_title=cfg.observation.thread_title,
        )
        parsed = None
        for _ in range(2):
            result = yield ModelCall(
                role="observer",
                messages=prompt,
                input_tokens=env.counter.count_messages(prompt),
                thread_id=thread_id,
                resource_id=record["resource_id"],
            )
            usage, meta = _usage(result)
            parsed = parse_observer_output(_text(result))
            if not parsed.degenerate:
                break
        assert parsed is not None
        if parsed.degenerate:
            raise ObserverOutputError("degenerate Observer output twice", raw=parsed.raw)
        text = parsed.observations.strip()
        ids = [m.id or "" for m in messages]
        chunk = {
            "id": stable_id(record["record_id"], "chunk", ids[0], ids[-1]),
            "text": text,
            "tokens": env.counter.count_text(text) if text else 0,
            "message_ids": ids,
            "message_tokens": tokens_in,
            "created_at": iso(env.now()),
            "hints": {
                k: v
                for k, v in (
                    ("current_task", parsed.current_task),
                    ("suggested_response", parsed.suggested_response),
                    ("thread_title", parsed.thread_title),
                )
                if v
            },
        }
        # Persisted before announced.
        yield StoreBatch([PutOp(buffer_ns(thread_id), ids[0], chunk, index=False)])
    except Exception as exc:
        _emit(
            env,
            inp,
            BufferingFailedEvent(
                cycle_id=cycle_id,
                operation_type="observation",
                failed_at=iso(env.now()),
                duration_ms=int((time.monotonic() - started) * 1000),
                tokens_attempted=tokens_in,
                error=f"{type(exc).__name__}: {exc}",
                record_id=record["record_id"],
                thread_id=thread_id,
            ),
        )
        yield from _hook(
            env,
            "on_observation_end",
            {**payload, "error": exc, "usage": usage, "provider_metadata": meta},
        )
        return
    _emit(
        env,
        inp,
        BufferingEndEvent(
            cycle_id=cycle_id,
            operation_type="observation",
            completed_at=iso(env.now()),
            duration_ms=int((time.monotonic() - started) * 1000),
            tokens_buffered=tokens_in,
            buffered_tokens=chunk["tokens"],
            observations=text,
            extracted_values=dict(parsed.extracted),
            record_id=record["record_id"],
            thread_id=thread_id,
        ),
    )
    yield from _hook(
        env,
        "on_observation_end",
        {**payload, "error": None, "usage": usage, "provider_metadata": meta, "observations": text},
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
    env: TurnEnv, inp: TurnInput, record: OMRecord, group_ids: Sequence[str]
) -> Plan[None]:
    """Reflect the leading groups ``group_ids`` in the background and store it. Never raises."""
    cfg = env.config
    groups = [g for g in record["groups"] if g["id"] in set(group_ids)]
    slice_tokens = sum(g["tokens"] for g in groups)
    cycle_id = new_id()
    started = time.monotonic()
    thread_id = record["thread_id"]
    _emit(
        env,
        inp,
        BufferingStartEvent(
            cycle_id=cycle_id,
            operation_type="reflection",
            started_at=iso(env.now()),
            tokens_to_buffer=slice_tokens,
            record_id=record["record_id"],
            thread_id=thread_id,
        ),
    )
    payload = _hook_payload(inp, "async-buffer", cycle_id=cycle_id)
    yield from _hook(env, "on_reflection_start", payload)
    try:
        target = buffered_reflection_target(slice_tokens)
        ladder = ReflectionLadder(
            start_level=compression_start_level(env.model_id("reflector", slice_tokens)),
            target_tokens=max(1, target),
            input_tokens=slice_tokens,
        )
        text_in = log_text(groups)
        while (level := ladder.next_level()) is not None:
            prompt = build_reflector_messages(
                observations=text_in,
                level=level,
                instruction=cfg.reflection.instruction,
                target_tokens=target,
                skip_continuation_hints=True,
            )
            result = yield ModelCall(
                role="reflector",
                messages=prompt,
                input_tokens=env.counter.count_messages(prompt),
                thread_id=thread_id,
                resource_id=record["resource_id"],
            )
            parsed = parse_observer_output(_text(result))
            out = parsed.observations.strip()
            ladder.record(level, parsed, env.counter.count_text(out) if out else 0)
        best = ladder.result()
        value = {
            "id": stable_id(record["record_id"], "bref", *group_ids),
            "text": best.text,
            "tokens": best.tokens,
            "input_tokens": slice_tokens,
            "group_ids": list(group_ids),
            "created_at": iso(env.now()),
        }
        yield StoreBatch([PutOp(reflection_ns(thread_id), "current", value, index=False)])
    except Exception as exc:
        _emit(
            env,
            inp,
            BufferingFailedEvent(
                cycle_id=cycle_id,
                operation_type="reflection",
                failed_at=iso(env.now()),
                duration_ms=int((time.monotonic() - started) * 1000),
                tokens_attempted=slice_tokens,
                error=f"{type(exc).__name__}: {exc}",
                record_id=record["record_id"],
                thread_id=thread_id,
            ),
        )
        yield from _hook(env, "on_reflection_end", {**payload, "error": exc})
        return
    _emit(
        env,
        inp,
        BufferingEndEvent(
            cycle_id=cycle_id,
            operation_type="reflection",
            completed_at=iso(env.now()),
            duration_ms=int((time.monotonic() - started) * 1000),
            tokens_buffered=slice_tokens,
            buffered_tokens=best.tokens,
            observations=best.text,
            record_id=record["record_id"],
            thread_id=thread_id,
        ),
    )
    yield from _hook(env, "on_reflection_end", {**payload, "error": None})


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
