"""Resource scope as plans: observe a resource's threads together, commit with compare-and-set.

The shared record of a resource lives in the store (see :mod:`langchain_om._plans.storage`)
with a version. A commit is compare-and-set: the plan yields :class:`CompareAndSet` with the
version it read; the handler writes only if the stored version is still that one, else it
returns the latest record and the plan re-applies its delta to it
(:func:`~langchain_om._core.resource.apply_delta`) and tries again. The Observer is never
called again on a conflict, and a message another writer observed first is not applied twice.

LangGraph's ``BaseStore`` has no compare-and-set (``put`` is an upsert, so version-keyed
"immutable" entries do not help: two writers of version n+1 both succeed). The compare and
the write are made atomic by the lock the engine already has for threads, held on the key
``resource:<resource_id>`` for the read-compare-write only (never around a model call):
a PostgreSQL advisory lock, an SQLite ``BEGIN IMMEDIATE`` on a lock file, or a process lock.

:class:`Gather` runs plans concurrently: the batches of threads are observed in parallel
(worker threads for sync callers, tasks for async ones) by :class:`ResourceHandler`, which
drives each sub-plan with the same :func:`~langchain_om._plans.effects.run_sync` /
:func:`~langchain_om._plans.effects.run_async` pair as everything else.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage

from langchain_om._core.dates import iso, message_time
from langchain_om._core.observer import (
    build_observer_messages,
    parse_observer_output,
    without_hints,
)
from langchain_om._core.observer_input import FormattedHistory, format_messages_for_observer
from langchain_om._core.output_budget import observer_budget, reflector_budget
from langchain_om._core.record import new_id
from langchain_om._core.reflector import build_reflector_messages, compression_start_level
from langchain_om._core.resource import (
    ResourceDelta,
    ResourceRecord,
    Section,
    ThreadPending,
    apply_delta,
    apply_reflection,
    coerce_resource_record,
    log_text,
    observed_ids,
    plan_batches,
    sections_text,
    split_threads,
    thread_label,
    thread_titles,
)
from langchain_om._core.resource_chunks import prune_chunks
from langchain_om._core.stream_reader import cut_of
from langchain_om._core.truncation import truncate_observations
from langchain_om._plans.effects import (
    Effect,
    Executor,
    Plan,
    StoreBatch,
    reply_text,
    run_async,
    run_sync,
)
from langchain_om._plans.resource_extract import (
    batch_values,
    cycle_delta_plan,
    observer_sections,
    reflection_changes_plan,
)
from langchain_om._plans.storage import (
    pending_list_op,
    pending_put_op,
    resource_record_get_op,
    resource_record_put_op,
    unpack_pending,
)
from langchain_om._plans.transforms import (
    after_observation,
    after_reflection,
    before_observation,
    before_reflection,
)
from langchain_om._plans.types import TurnEnv
from langchain_om.errors import ObserverOutputError, ReflectorOutputError
from langchain_om.extractors import ExtractionResult
from langchain_om.locks import ThreadLock, hold_async

T = TypeVar("T")

__all__ = [
    "CompareAndSet",
    "Gather",
    "ResourceEffect",
    "ResourceHandler",
    "ResourcePlan",
    "commit_plan",
    "load_resource_plan",
    "observe_resource_plan",
    "observe_threads_plan",
    "reflect_resource_plan",
    "resource_lock_key",
    "save_pending_plan",
    "thread_context",
    "threads_delta_plan",
]

MAX_COMMIT_ATTEMPTS = 50
"""Compare-and-set attempts before giving up (each conflict means another writer won)."""

MULTI_THREAD_NOTE = (
    "The new messages come from {n} different conversation threads of the same user, each in "
    'a <thread id="..."> block. Observe each thread separately: inside <observations>, write '
    'one <thread id="..."> block per thread, with the same id, holding that thread\'s '
    "dated observation lines, and close it with </thread>."
)


# -- effects and their handler ---------------------------------------------------------------


@dataclass(frozen=True)
class Gather:
    """Run ``plans`` concurrently; the result is the list of their results, in order."""

    plans: Sequence[Generator[Any, Any, Any]]


@dataclass(frozen=True)
class CompareAndSet:
    """Write ``value`` as ``resource_id``'s record if its stored version is ``expected``.

    The result is ``None`` when written, else the latest stored record (nothing written).
    """

    resource_id: str
    expected: int
    value: ResourceRecord


ResourceEffect = Effect | Gather | CompareAndSet
"""What a resource plan yields: memory's effects, plus gathers and compare-and-sets."""
ResourcePlan = Generator[ResourceEffect, Any, T]


def resource_lock_key(resource_id: str) -> str:
    """The lock key of a resource's record (a namespace of its own beside thread ids)."""
    return f"resource:{resource_id}"


class ResourceHandler(Executor):
    """Memory's executor, which also carries out :class:`Gather` and :class:`CompareAndSet`.

    Args:
        lock: the lock that makes a compare-and-set atomic across the writers that share the
            store (the engine's thread lock), held on :func:`resource_lock_key`.
        **kwargs: as for :class:`~langchain_om._plans.effects.Executor`.
    """

    def __init__(self, *, lock: ThreadLock, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lock = lock

    def execute(self, effect: ResourceEffect) -> Any:
        """Carry out ``effect`` with blocking I/O (sub-plans of a gather on worker threads)."""
        if isinstance(effect, Gather):
            if len(effect.plans) <= 1:
                return [run_sync(p, self) for p in effect.plans]
            with concurrent.futures.ThreadPoolExecutor(len(effect.plans)) as pool:
                futures = [pool.submit(run_sync, p, self) for p in effect.plans]
                return [f.result() for f in futures]
        if isinstance(effect, CompareAndSet):
            with self.lock.hold(resource_lock_key(effect.resource_id)):
                [item] = self.store.batch([resource_record_get_op(effect.resource_id)])
                latest = _latest(effect, item)
                if latest is None:
                    self.store.batch([resource_record_put_op(effect.resource_id, effect.value)])
                return latest
        return super().execute(effect)

    async def aexecute(self, effect: ResourceEffect) -> Any:
        """Async twin of :meth:`execute` (sub-plans of a gather as tasks)."""
        if isinstance(effect, Gather):
            return list(await asyncio.gather(*(run_async(p, self) for p in effect.plans)))
        if isinstance(effect, CompareAndSet):
            async with hold_async(self.lock, resource_lock_key(effect.resource_id)):
                [item] = await self.store.abatch([resource_record_get_op(effect.resource_id)])
                latest = _latest(effect, item)
                if latest is None:
                    await self.store.abatch(
                        [resource_record_put_op(effect.resource_id, effect.value)]
                    )
                return latest
        return await super().aexecute(effect)


def _latest(effect: CompareAndSet, item: Any) -> ResourceRecord | None:
    """The stored record when its version is not ``effect.expected`` (a conflict), else None."""
    stored = coerce_resource_record(item.value if item is not None else None, effect.resource_id)
    return None if stored["version"] == effect.expected else stored


# -- plans -------------------------------------------------------------------------------------


def load_resource_plan(
    resource_id: str,
) -> Plan[tuple[ResourceRecord, dict[str, list[BaseMessage]]]]:
    """The resource's record and every thread's stored unobserved messages."""
    item, pending = yield StoreBatch(
        [resource_record_get_op(resource_id), pending_list_op(resource_id)]
    )
    record = coerce_resource_record(item.value if item is not None else None, resource_id)
    return record, unpack_pending(pending)


def save_pending_plan(
    env: TurnEnv, resource_id: str, thread_id: str, window: Sequence[BaseMessage]
) -> Plan[None]:
    """Store a thread's unobserved messages, so other threads' steps can observe them."""
    tokens = env.counter.count_messages(window) if window else 0
    yield StoreBatch([pending_put_op(resource_id, thread_id, window, tokens)])


def commit_plan(
    resource_id: str,
    base: ResourceRecord,
    change: ResourceDelta | Callable[[ResourceRecord], tuple[ResourceRecord, bool]],
) -> ResourcePlan[ResourceRecord]:
    """Apply ``change`` to the stored record with compare-and-set, retrying on conflict.

    Args:
        resource_id: the resource.
        base: the record as read before the change was computed.
        change: an observation's delta, or a function giving ``(new record, changed)`` for the
            latest record (a reflection).

    Returns:
        The record as stored after the commit (the latest one, unchanged, when the change no
        longer applies: every thread of a delta observed by another writer, or the log
        reflected by another writer already).
    """
    apply = (lambda r: _observed(r, change)) if isinstance(change, ResourceDelta) else change
    latest = base
    for _ in range(MAX_COMMIT_ATTEMPTS):
        new, changed = apply(latest)
        if not changed:
            return latest
        conflict = yield CompareAndSet(resource_id, latest["version"], new)
        if conflict is None:
            return new
        latest = conflict
    raise RuntimeError(
        f"resource {resource_id!r}: {MAX_COMMIT_ATTEMPTS} compare-and-set conflicts in a row"
    )


def _observed(latest: ResourceRecord, delta: ResourceDelta) -> tuple[ResourceRecord, bool]:
    """``latest`` with an observation applied; the buffered chunks it overtook are pruned."""
    new, changed = apply_delta(latest, delta)
    if changed and new["chunks"]:
        new = ResourceRecord(**{**new, "chunks": prune_chunks(new)})
    return new, changed


TITLES_NOTE = (
    'In <thread-title>, write one line per thread: <thread id="...">its title</thread>, with '
    "the same ids; keep a thread's current title unless its topic has really changed."
)
CURRENT_TITLES = "The threads' current titles: {titles}."


def _titles_note(record: ResourceRecord, labels: Mapping[str, str]) -> str:
    """How a batch of several threads is titled, with their current titles."""
    current = [
        f'<thread id="{label}">{record["titles"][tid]}</thread>'
        for tid, label in labels.items()
        if record["titles"].get(tid)
    ]
    if not current:
        return TITLES_NOTE
    return TITLES_NOTE + " " + CURRENT_TITLES.format(titles=", ".join(current))


REFLECTION_NOTE = (
    'The observations are grouped in <thread id="..."> blocks, one per conversation thread of '
    "the same user. Keep that grouping: inside <observations>, write one block per thread, "
    "with the same id, and close each with </thread>."
)


def reflect_resource_plan(
    env: TurnEnv,
    resource_id: str,
    record: ResourceRecord,
    *,
    thread_id: str,
    cycle_id: str | None = None,
    ctx: Mapping[str, Any] | None = None,
    extraction: ExtractionResult | None = None,
) -> ResourcePlan[ResourceRecord]:
    """Condense the shared log into a new generation (one Reflector call), commit it.

    ``hooks.before_reflection`` is given the shared log (its ``<thread id>`` blocks) and may
    change what the Reflector reads; ``hooks.after_reflection`` is given the condensed log,
    and may change or veto it (``ctx`` is the transform hooks' context). ``reflection.extract``
    fills the resource's values from the condensed log (``extraction`` collects them).
    """
    cfg = env.config.reflection
    ctx = ctx if ctx is not None else _hook_context(resource_id, thread_id)
    text = yield from before_reflection(env, ctx, log_text(record["sections"]))
    instruction = "\n\n".join(t for t in (cfg.instruction, REFLECTION_NOTE) if t)
    prompt = build_reflector_messages(
        observations=text,
        level=compression_start_level(env.model_id("reflector", env.counter.count_text(text))),
        instruction=instruction,
        instruction_mode=cfg.instruction_mode,
        observer_instruction=env.config.observation.instruction,
        observer_mode=env.config.observation.instruction_mode,
        target_tokens=max(1, cfg.observation_tokens_abs // 2),
        skip_continuation_hints=True,
    )
    target = max(1, cfg.observation_tokens_abs // 2)
    result = yield env.model_call(
        "reflector",
        prompt,
        thread_id=thread_id,
        resource_id=resource_id,
        trigger="turn-sync",
        cycle_id=cycle_id,
        output_budget=reflector_budget(
            env.counter.count_text(text),
            target_tokens=target,
            sections=0,
            setting=cfg.output_budget,
        ),
    )
    if cut_of(result) is not None:
        raise ReflectorOutputError("The Reflector's reply was cut short.", raw=reply_text(result))
    parsed = parse_observer_output(reply_text(result))
    labels = list(dict.fromkeys(s["thread"] for s in record["sections"]))
    kept = yield from after_reflection(env, ctx, parsed.observations)
    condensed = split_threads(kept, labels)
    if not condensed:
        raise ReflectorOutputError("The Reflector returned no observations.", raw=parsed.raw)
    found = extraction if extraction is not None else ExtractionResult()
    values = yield from reflection_changes_plan(env, ctx, record, kept, found)
    return (
        yield from commit_plan(
            resource_id,
            record,
            lambda latest: apply_reflection(latest, record, condensed, values),
        )
    )


def _unobserved(
    record: ResourceRecord, windows: Mapping[str, Sequence[BaseMessage]]
) -> dict[str, list[BaseMessage]]:
    seen = observed_ids(record)
    out: dict[str, list[BaseMessage]] = {}
    for tid, messages in windows.items():
        rest = [m for m in messages if m.id and m.id not in seen.get(tid, set())]
        if rest:
            out[tid] = rest
    return out


def _oldest(messages: Sequence[BaseMessage]) -> str:
    times = [t for t in (message_time(m) for m in messages) if t is not None]
    return iso(min(times)) if times else ""


def observe_resource_plan(
    env: TurnEnv,
    resource_id: str,
    *,
    current: tuple[str, Sequence[BaseMessage]] | None = None,
    threshold: int = 0,
    ctx: Mapping[str, Any] | None = None,
) -> ResourcePlan[ResourceRecord]:
    """Observe the unobserved messages of the resource's threads, batched, in parallel.

    Args:
        env: the engine's environment.
        resource_id: the resource.
        current: ``(thread_id, window)`` of the thread whose step this is; its live window
            replaces what the store holds for it.
        threshold: take threads largest first until their tokens reach it (0: all).
        ctx: the transform hooks' context (the step's cycle).

    Returns:
        The record as committed.
    """
    record, windows = yield from load_resource_plan(resource_id)
    if current is not None:
        windows[current[0]] = list(current[1])
    return (
        yield from observe_threads_plan(
            env, resource_id, record, windows, threshold=threshold, ctx=ctx
        )
    )


def observe_threads_plan(
    env: TurnEnv,
    resource_id: str,
    record: ResourceRecord,
    windows: Mapping[str, Sequence[BaseMessage]],
    *,
    threshold: int = 0,
    cycle_id: str | None = None,
    ctx: Mapping[str, Any] | None = None,
    extraction: ExtractionResult | None = None,
) -> ResourcePlan[ResourceRecord]:
    """Observe ``windows`` (per thread, minus what ``record`` counts as observed), commit.

    Threads are batched by ``observation.max_tokens_per_batch`` and the batches observed in
    parallel (:func:`threads_delta_plan`); their answers are committed together with
    compare-and-set. ``cycle_id`` names the cycle the Observer calls belong to (traced, and
    counted once by a spend budget).
    """
    delta = yield from threads_delta_plan(
        env,
        resource_id,
        record,
        windows,
        threshold=threshold,
        cycle_id=cycle_id,
        ctx=ctx,
        extraction=extraction,
    )
    if delta is None:
        return record
    return (yield from commit_plan(resource_id, record, delta))


def threads_delta_plan(
    env: TurnEnv,
    resource_id: str,
    record: ResourceRecord,
    windows: Mapping[str, Sequence[BaseMessage]],
    *,
    threshold: int = 0,
    trigger: str = "turn-sync",
    cycle_id: str | None = None,
    ctx: Mapping[str, Any] | None = None,
    extraction: ExtractionResult | None = None,
) -> ResourcePlan[ResourceDelta | None]:
    """What observing ``windows`` adds, not committed (``None``: nothing to observe).

    Threads are batched as for :func:`observe_threads_plan`; ``record`` gives the previous
    observations and hints the Observer reads, and the messages it counts as observed. The
    transform hooks run per thread (``ctx``, the step's cycle context, with that thread's
    id): a thread's messages and observations are never shown to a hook call about another
    thread. The resource's extracted values are filled from the cycle's observations (see
    :mod:`~langchain_om._plans.resource_extract`); ``extraction`` collects them and the
    extractors that failed.
    """
    ctx = ctx if ctx is not None else _hook_context(resource_id, None)
    todo = _unobserved(record, windows)
    pending = [
        ThreadPending(tid, env.counter.count_messages(msgs), _oldest(msgs))
        for tid, msgs in todo.items()
    ]
    batches = plan_batches(
        pending,
        threshold=threshold,
        max_tokens_per_batch=env.config.observation.max_tokens_per_batch,
    )
    if not batches:
        return None
    plans = [
        _observe_batch(
            env,
            resource_id,
            record,
            {t.thread_id: todo[t.thread_id] for t in batch},
            ctx,
            trigger=trigger,
            cycle_id=cycle_id,
        )
        for batch in batches
    ]
    results: list[tuple[ResourceDelta, ExtractionResult]] = yield Gather(plans)
    found = extraction if extraction is not None else ExtractionResult()
    for _, values in results:
        found.merge(values)
    joined = _joined([delta for delta, _ in results])
    return (
        yield from cycle_delta_plan(
            env, thread_context(ctx, list(joined.observed)), record, joined, found
        )
    )


def _joined(deltas: Sequence[ResourceDelta]) -> ResourceDelta:
    """The batches' deltas as one (committed together)."""
    observed: dict[str, Sequence[str]] = {}
    labels: dict[str, str] = {}
    sections: list[Section] = []
    hints: dict[str, str] = {}
    titles: dict[str, str] = {}
    for delta in deltas:
        observed.update(delta.observed)
        labels.update(delta.labels)
        sections.extend(delta.sections)
        hints.update(delta.hints)
        titles.update(delta.titles)
    return ResourceDelta(new_id(), observed, sections, labels, hints, titles=titles)


def _history(
    env: TurnEnv,
    threads: Mapping[str, Sequence[BaseMessage]],
    labels: Mapping[str, str],
    extra_tags: Sequence[str] = (),
) -> FormattedHistory:
    cfg = env.config.observation
    parts: list[str] = []
    attachments: list[dict[str, Any]] = []
    ids: list[str] = []
    policy = env.attachment_policy(sum(env.counter.count_messages(m) for m in threads.values()))
    for tid, messages in threads.items():
        formatted = format_messages_for_observer(
            messages,
            timezone=env.timezone,
            tool_result_max_tokens=cfg.tool_result_max_tokens,
            count=env.counter.count_text,
            now=env.now(),
            observe_attachments=policy,
            extra_tags=list(extra_tags),
        )
        parts.append(f'<thread id="{labels[tid]}">\n{formatted.text}\n</thread>')
        attachments.extend(formatted.attachments)
        ids.extend(formatted.message_ids)
    return FormattedHistory(text="\n\n".join(parts), attachments=attachments, message_ids=ids)


def _hook_context(resource_id: str, thread_id: str | None) -> dict[str, Any]:
    """The transform hooks' context when no step's cycle gave one."""
    return {"thread_id": thread_id, "resource_id": resource_id, "trigger": "manual"}


def thread_context(ctx: Mapping[str, Any], thread_ids: Sequence[str]) -> dict[str, Any]:
    """``ctx`` for a hook call about ``thread_ids`` (the first is its ``thread_id``)."""
    return {**ctx, "thread_id": thread_ids[0], "thread_ids": list(thread_ids)}


def _shown(
    env: TurnEnv, ctx: Mapping[str, Any], threads: Mapping[str, Sequence[BaseMessage]]
) -> Plan[dict[str, list[BaseMessage]]]:
    """Per thread, the messages the Observer may see (``hooks.before_observation``).

    The hook is called once per thread; a thread it withheld whole is left out.
    """
    shown: dict[str, list[BaseMessage]] = {}
    for tid, messages in threads.items():
        seen = yield from before_observation(env, thread_context(ctx, [tid]), messages)
        if seen:
            shown[tid] = seen
    return shown


def _kept(
    env: TurnEnv,
    ctx: Mapping[str, Any],
    sections: Sequence[Section],
    labels: Mapping[str, str],
) -> Plan[list[Section]]:
    """``sections`` through ``hooks.after_observation``, one call per thread.

    Each call gets one thread's lines as thread scope's text; a vetoed thread keeps no lines.
    Lines the Observer wrote outside every thread block are passed in one call naming all the
    batch's threads.
    """
    by_label = {label: tid for tid, label in labels.items()}
    out: list[Section] = []
    for label in dict.fromkeys(s.thread for s in sections):
        own = [s for s in sections if s.thread == label]
        tids = [by_label[part] for part in label.split(",") if part in by_label] or list(labels)
        text = yield from after_observation(env, thread_context(ctx, tids), sections_text(own))
        out.extend(split_threads(text, [label]) if text.strip() else [])
    return out


def _observe_batch(
    env: TurnEnv,
    resource_id: str,
    record: ResourceRecord,
    batch: Mapping[str, Sequence[BaseMessage]],
    ctx: Mapping[str, Any],
    *,
    trigger: str = "turn-sync",
    cycle_id: str | None = None,
) -> Plan[tuple[ResourceDelta, ExtractionResult]]:
    """One Observer call for a batch of threads.

    Returns its answer split by thread and date, and the values of its inline extractors.
    """
    cfg = env.config
    obscure = cfg.effective_obscure_thread_ids
    labels = {tid: thread_label(tid, obscure=obscure) for tid in batch}
    observed = {tid: [m.id for m in msgs if m.id] for tid, msgs in batch.items()}
    threads = yield from _shown(env, ctx, batch)
    if not threads:  # the hook withheld everything: observed, without a model call
        return ResourceDelta(new_id(), observed, [], labels), ExtractionResult()
    inline, extractor_sections, prior_extracted = observer_sections(
        env, thread_context(ctx, list(threads)), record
    )
    budget = cfg.observation.previous_observer_tokens
    previous_text = log_text(record["sections"])
    previous = (
        truncate_observations(
            previous_text, None if budget is False else int(budget), env.counter.count_text
        )
        if previous_text
        else None
    )
    titled = cfg.observation.thread_title
    shown_labels = {tid: labels[tid] for tid in threads}
    notes: list[str | None] = [cfg.observation.instruction]
    prior: dict[str, str] = {**record["hints"], **prior_extracted}
    if len(threads) > 1:
        notes.append(MULTI_THREAD_NOTE.format(n=len(threads)))
        notes.append(_titles_note(record, shown_labels) if titled else None)
    elif titled and record["titles"].get(next(iter(threads))):
        prior["thread_title"] = record["titles"][next(iter(threads))]
    instruction = "\n\n".join(t for t in notes if t) or None
    history = _history(env, threads, labels, [e.slug for e in inline])
    prompt = build_observer_messages(
        history=history,
        previous=previous,
        prior_hints=prior,
        instruction=instruction,
        instruction_mode=cfg.observation.instruction_mode,
        hints=cfg.observer_hints,
        thread_title=titled,
        extractors=extractor_sections,
    )
    batch_tokens = sum(env.counter.count_messages(m) for m in threads.values())
    result = yield env.model_call(
        "observer",
        prompt,
        thread_id=next(iter(threads)),
        resource_id=resource_id,
        trigger=trigger,
        cycle_id=cycle_id,
        output_budget=observer_budget(
            batch_tokens,
            sections=2 + int(titled) + len(inline),
            setting=cfg.observation.output_budget,
        ),
        source=history.text,
    )
    stopped = cut_of(result)
    if stopped is not None:
        # A shared log commits every thread of the batch at once: a reply cut short (a loop,
        # or past its budget) is not salvaged here, so no thread's messages leave unobserved.
        raise ObserverOutputError(
            f"The Observer's reply was stopped ({stopped['reason']}); nothing was observed.",
            raw=reply_text(result),
            reason="degenerate" if stopped["reason"] == "loop" else "oversized",
        )
    parsed = without_hints(
        parse_observer_output(reply_text(result), extractor_slugs=[e.slug for e in inline]),
        cfg.observer_hints,
    )
    hints = {
        k: v
        for k, v in (
            ("current_task", parsed.current_task),
            ("suggested_response", parsed.suggested_response),
        )
        if v
    }
    sections = split_threads(parsed.observations, [labels[t] for t in threads])
    delta = ResourceDelta(
        delta_id=new_id(),
        observed=observed,
        sections=(yield from _kept(env, ctx, sections, shown_labels)),
        labels=labels,
        hints=hints,
        titles=thread_titles(parsed.raw, shown_labels) if titled else {},
    )
    return delta, batch_values(env, parsed.extracted, record, list(threads))
