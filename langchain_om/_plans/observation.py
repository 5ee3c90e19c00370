"""The observation cycle: the Observer's input, its judged reply and the synchronous cycle.

:func:`call_observer` asks the Observer and accepts only real observations (a rejected reply is
retried once with a format reminder); :func:`observe_in_parts` splits a batch above every model
tier; :func:`observe_plan` is the synchronous observation cycle. The background buffer of
:mod:`~langchain_om._plans.buffer` shares :func:`call_observer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from langchain_core.messages import BaseMessage

from langchain_om._core.acceptance import (
    ObservationReason,
    instruction_text,
    judge_observation,
    with_format_reminder,
)
from langchain_om._core.dates import iso
from langchain_om._core.invented import drop_invented_tool_lines
from langchain_om._core.line_edits import without_forgotten
from langchain_om._core.observer import (
    ObserverOutput,
    build_observer_messages,
    parse_observer_output,
)
from langchain_om._core.observer_input import format_messages_for_observer
from langchain_om._core.record import (
    append_observations,
    log_text,
    make_group,
    stable_id,
)
from langchain_om._core.truncation import TruncatedObservations, truncate_observations
from langchain_om._core.types import OMRecord
from langchain_om._core.window import split_batch
from langchain_om._plans.cycles import Cycle, logger, run_cycle
from langchain_om._plans.effects import Plan, reply_text
from langchain_om._plans.extract import extract_plan
from langchain_om._plans.storage import observed_plan
from langchain_om._plans.transforms import after_observation, archived_messages, before_observation
from langchain_om._plans.types import TurnEnv, TurnInput
from langchain_om.errors import ModelTierExceededError, ObserverOutputError
from langchain_om.extractors import inline_extractors, persist, prior_values, run_extractors

BUFFERED_MARKER = "--- BUFFERED (pending activation) ---"

LOOP_RETRY_TEMPERATURE = 0.0
"""Sampling temperature of the retry after a looping (degenerate) Observer reply."""


def previous_view(
    env: TurnEnv, record: OMRecord, pending_texts: Sequence[str] = ()
) -> TruncatedObservations | None:
    """The previous observations the Observer is shown (budgeted; buffered chunks last)."""
    text = log_text(record["groups"])
    if pending_texts:
        text = "\n\n".join(t for t in (text, BUFFERED_MARKER, *pending_texts) if t)
    if not text:
        return None
    budget = env.config.observation.previous_observer_tokens
    return truncate_observations(
        text, None if budget is False else int(budget), env.counter.count_text
    )


def observer_message_budget(env: TurnEnv) -> int:
    """Tokens one message may take in the Observer's input (longer ones keep head and tail).

    The Observer is meant to read about ``block_after`` tokens at a time; a message larger
    than that is shown cut in the middle (the raw message stays whole in the archive).
    """
    obs = env.config.observation
    return max(obs.message_tokens_abs, obs.block_after_tokens)


def call_observer(
    cycle: Cycle,
    batch: Sequence[BaseMessage],
    *,
    pending_texts: Sequence[str] = (),
    message_max_tokens: int | None = None,
) -> Plan[ObserverOutput]:
    """Ask the Observer about ``batch`` and accept only real observations.

    A rejected reply (:func:`~langchain_om._core.acceptance.judge_observation`) is retried once
    with a format reminder (a looping one also at a lower temperature), then the cycle fails.

    Raises:
        ObserverOutputError: both replies were rejected; ``reason`` holds the reason code.
    """
    env, record = cycle.env, cycle.record
    cfg = env.config
    batch = cycle.seen = yield from before_observation(env, cycle.context(), batch)
    if not batch:  # the hook withheld everything: observed, without a model call
        return ObserverOutput("", None, None, None, {}, degenerate=False, raw="")
    extractors = inline_extractors(env.extractors)
    history = format_messages_for_observer(
        batch,
        timezone=record["timezone"],
        tool_result_max_tokens=cfg.observation.tool_result_max_tokens,
        count=env.counter.count_text,
        now=env.now(),
        observe_attachments=cfg.observation.observe_attachments,
        extra_tags=[e.slug for e in extractors],
        message_max_tokens=message_max_tokens or observer_message_budget(env),
    )
    context = {**cycle.context(), "source": "observation"}
    prompt = build_observer_messages(
        history=history,
        previous=previous_view(env, record, pending_texts),
        prior_hints={
            **{k: str(v) for k, v in record["hints"].items()},
            **prior_values(extractors, record["extracted"]),
        },
        instruction=cfg.observation.instruction,
        thread_title=cfg.observation.thread_title,
        extractors=[(e.slug, e.text(context)) for e in extractors],
    )
    instructions = instruction_text(prompt)
    send: list[BaseMessage] = list(prompt)
    temperature: float | None = None
    reason: ObservationReason | None = None
    detail, raw = "", ""
    for attempt in range(2):
        result = yield env.model_call(
            "observer",
            send,
            thread_id=record["thread_id"],
            resource_id=record["resource_id"],
            trigger=cycle.trigger,
            cycle_id=cycle.cycle_id,
            temperature=temperature,
        )
        cycle.note(result)
        parsed = parse_observer_output(
            reply_text(result), extractor_slugs=[e.slug for e in extractors], source=history.text
        )
        verdict = judge_observation(
            parsed,
            input_tokens=cycle.tokens,
            observation_tokens=cfg.reflection.observation_tokens_abs,
            count=env.counter.count_text,
            instructions=instructions,
            source=history.text,
        )
        if verdict.accepted:
            accepted = replace(parsed, observations=verdict.observations)
            kept = _without_invented_tools(accepted, batch)
            text = yield from after_observation(env, cycle.context(), kept.observations)
            return replace(kept, observations=text)
        reason, detail, raw = verdict.reason or "unparseable", verdict.detail, parsed.raw
        if attempt == 0:
            if cycle.trigger != "async-buffer":
                cycle.emit(
                    cycle.failed(
                        f"Observer reply rejected ({reason}: {detail}); retrying",
                        retrying=True,
                        reason=reason,
                    )
                )
            send = with_format_reminder(prompt, reason)
            if reason == "degenerate":
                temperature = LOOP_RETRY_TEMPERATURE
    raise ObserverOutputError(
        f"The Observer's reply was rejected twice ({reason}: {detail}); nothing was observed.",
        raw=raw,
        reason=reason,
    )


PART_MARGIN = 0.8
"""Share of a tier's room a part aims for (the rendered input is larger than its messages)."""

MAX_SPLIT_DEPTH = 4
"""How often a part that still does not fit is split again (with a smaller budget)."""


def observe_in_parts(
    cycle: Cycle,
    batch: Sequence[BaseMessage],
    *,
    message_max_tokens: int | None = None,
    depth: int = 0,
) -> Plan[ObserverOutput]:
    """:func:`call_observer` on ``batch``; above every model tier, on parts that fit one.

    When the Observer's input is larger than the largest ``ModelByInputTokens`` tier, the
    batch is split at safe cut points (:func:`~langchain_om._core.window.split_batch`) into
    parts aiming at :data:`PART_MARGIN` of the room the tier leaves, each observed in turn (a
    part that still does not fit is split again, a single message is cut in the middle); the
    observations are joined in order and the hints of the last part win.

    Raises:
        ModelTierExceededError: even the prompt without messages is above the largest tier.
        ObserverOutputError: a part's replies were rejected.
    """
    counter = cycle.env.counter
    try:
        return (yield from call_observer(cycle, batch, message_max_tokens=message_max_tokens))
    except ModelTierExceededError as exc:
        overhead = max(0, exc.input_tokens - counter.count_messages(batch))
        budget = int((exc.largest_tier - overhead) * PART_MARGIN)
        if budget < 64 or not batch or depth >= MAX_SPLIT_DEPTH:
            raise
    ends = split_batch(batch, [counter.count_messages([m]) for m in batch], budget)
    outputs: list[ObserverOutput] = []
    start = 0
    for end in ends:
        part, start = batch[start:end], end
        clip = budget // 2 if len(ends) == 1 or len(part) == 1 else message_max_tokens
        outputs.append(
            (yield from observe_in_parts(cycle, part, message_max_tokens=clip, depth=depth + 1))
        )
    return _joined(outputs)


def _joined(outputs: Sequence[ObserverOutput]) -> ObserverOutput:
    """The outputs of consecutive parts as one (observations in order, the last hints)."""
    extracted: dict[str, str] = {}
    for out in outputs:
        extracted.update(out.extracted)
    return replace(
        outputs[-1],
        observations="\n".join(o.observations.strip() for o in outputs if o.observations.strip()),
        extracted=extracted,
        raw="\n\n".join(o.raw for o in outputs),
    )


def _without_invented_tools(parsed: ObserverOutput, batch: Sequence[BaseMessage]) -> ObserverOutput:
    """``parsed`` without lines about tool calls no message of ``batch`` contains (logged)."""
    out, dropped = drop_invented_tool_lines(parsed, batch)
    if dropped:
        logger.warning(
            "The Observer reported %d tool call(s) that no observed message contains; "
            "those lines were dropped",
            dropped,
        )
    return out


def observe_plan(
    env: TurnEnv, inp: TurnInput, record: OMRecord, batch: list[BaseMessage]
) -> Plan[OMRecord]:
    """Observe ``batch``: call the Observer, archive the messages, append the observations.

    Raises:
        CycleFailedError: the Observer failed; ``record`` is unchanged and nothing was archived.
    """
    cfg = env.config

    def body(cycle: Cycle) -> Plan[tuple[OMRecord, dict[str, Any]]]:
        parsed = yield from observe_in_parts(cycle, batch)
        found = run_extractors(
            env.extractors,
            parsed.extracted,
            record["extracted"],
            thread_id=record["thread_id"],
            count=env.counter.count_text,
        )
        now = iso(env.now())
        text = without_forgotten(record, parsed.observations.strip())
        ctx, extracted = cycle.context(), record["extracted"]
        found.merge(
            (yield from extract_plan(env, ctx, env.extractors, text, extracted, role="observer"))
        )
        ids = [m.id or "" for m in batch]
        group = make_group(
            text=text,
            tokens=env.counter.count_text(text) if text else 0,
            message_ids=ids,
            observed_at=now,
            group_id=stable_id(
                record["record_id"], "obs", record["observed_message_count"], ids[0]
            ),
        )
        new = append_observations(
            record,
            group=group,
            observed_ids=ids,
            observed_tokens=cycle.tokens,
            hints={
                "current_task": parsed.current_task,
                "suggested_response": parsed.suggested_response,
                "thread_title": parsed.thread_title,
            },
            extracted={},
            thread_title=cfg.observation.thread_title,
            now=now,
        )
        new["extracted"] = persist(env.extractors, record["extracted"], found.values)
        # Archive first: the messages leave the window only after they are stored.
        kept = yield from archived_messages(env, cycle.context(), batch, cycle.seen)
        new = yield from observed_plan(kept, before=record, after=new, vector=env.vector)
        return new, {
            "observation_tokens": group["tokens"],
            "observations": text,
            "current_task": parsed.current_task,
            "suggested_response": parsed.suggested_response,
            "extracted_values": found.values,
            "extraction_failures": found.failures,
        }

    cycle = Cycle(env, inp, record, "observation", env.counter.count_messages(batch), inp.trigger)
    return (yield from run_cycle(cycle, body))
