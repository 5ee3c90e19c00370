"""The observation cycle: the Observer's input, its judged reply and the synchronous cycle.

:func:`call_observer` asks the Observer and accepts only real observations (a rejected reply is
retried once with a format reminder); :func:`observe_in_parts` splits a batch above every model
tier; :func:`observe_plan` is the synchronous observation cycle. The background buffer of
:mod:`~langchain_om._plans.buffer` shares :func:`call_observer`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from langchain_om._core.acceptance import (
    ObservationReason,
    instruction_text,
    judge_observation,
    with_format_reminder,
)
from langchain_om._core.dates import iso
from langchain_om._core.grounding import Sources
from langchain_om._core.invented import drop_invented_tool_lines
from langchain_om._core.line_edits import without_forgotten
from langchain_om._core.message_ids import window_ids
from langchain_om._core.observer import (
    ObserverOutput,
    build_observer_messages,
    parse_observer_output,
    without_hints,
)
from langchain_om._core.observer_input import format_messages_for_observer
from langchain_om._core.output_budget import observer_budget
from langchain_om._core.receipts import parts_receipts
from langchain_om._core.record import (
    append_observations,
    log_text,
    make_group,
    stable_id,
)
from langchain_om._core.stream_reader import cut_of
from langchain_om._core.truncation import TruncatedObservations, truncate_observations
from langchain_om._core.types import OMRecord
from langchain_om._core.window import split_batch
from langchain_om._plans.cycles import Cycle, logger, run_cycle
from langchain_om._plans.effects import Plan, reply_text
from langchain_om._plans.extract import extract_plan
from langchain_om._plans.storage import observed_plan
from langchain_om._plans.titles import titled_plan
from langchain_om._plans.transforms import after_observation, archived_messages, before_observation
from langchain_om._plans.types import TurnEnv, TurnInput
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import ModelTierExceededError, ObserverOutputError
from langchain_om.extractors import (
    ARCHIVE_SUMMARY_SLUG,
    inline_extractors,
    persist,
    prior_values,
    run_extractors,
)

BUFFERED_MARKER = "--- BUFFERED (pending activation) ---"

LOOP_RETRY_TEMPERATURE = 0.0
"""Sampling temperature of the retry after a looping (degenerate) Observer reply."""


def previous_view(
    env: TurnEnv, record: OMRecord, pending_texts: Sequence[str] = (), *, hidden: bool = False
) -> TruncatedObservations | None:
    """The previous observations the Observer is shown (budgeted; buffered chunks last).

    ``hidden`` shows none of them (only how many there are): the Observer's input must fit
    the largest model tier.
    """
    text = log_text(record["groups"])
    if pending_texts:
        text = "\n\n".join(t for t in (text, BUFFERED_MARKER, *pending_texts) if t)
    if not text:
        return None
    budget = 0 if hidden else env.config.observation.previous_observer_tokens
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


def _source_text(message: BaseMessage) -> str:
    """The text a line of observations may be grounded in: text, reasoning and tool calls."""
    parts = [str(message.text)]
    content = message.content if isinstance(message.content, list) else []
    for block in content:
        if isinstance(block, dict) and block.get("type") in ("reasoning", "thinking"):
            parts.append(str(block.get("reasoning") or block.get("thinking") or ""))
    if isinstance(message, AIMessage):
        parts.extend(
            f"{c['name']} {json.dumps(c['args'], default=str)}" for c in message.tool_calls
        )
    return "\n".join(p for p in parts if p)


def _covered_in(batch: Sequence[BaseMessage], seen: Sequence[BaseMessage], covered: int) -> int:
    """How many leading messages of ``batch`` the first ``covered`` messages ``seen`` reach.

    ``seen`` is ``batch`` after the memory tool's messages and the ``before_observation``
    hook; a message is found by identity, else by id. ``-1`` when the last covered message is
    not in ``batch`` (a hook that rewrote the messages): nothing can be said to be covered.
    """
    if covered <= 0:
        return 0
    if covered >= len(seen):
        return len(batch)
    last = seen[covered - 1]
    for index, message in enumerate(batch):
        if message is last or (last.id is not None and message.id == last.id):
            return index + 1
    return -1


def _sections(cfg: ObservationalMemoryConfig, extractors: int) -> int:
    """Sections besides the observations an Observer call asks for."""
    return 2 + int(cfg.observation.thread_title) + extractors


def call_observer(
    cycle: Cycle,
    batch: Sequence[BaseMessage],
    *,
    pending_texts: Sequence[str] = (),
    message_max_tokens: int | None = None,
    hide_previous: bool = False,
) -> Plan[ObserverOutput]:
    """Ask the Observer about ``batch`` and accept only real observations.

    The reply streams under an output budget and is stopped as soon as it loops
    (:mod:`~langchain_om._core.loop_cut`); a stopped reply keeps the grounded lines written
    before the loop, which cover the messages up to the last one they are drawn from
    (``covered``). A rejected reply (:func:`~langchain_om._core.acceptance.judge_observation`)
    is retried once with a format reminder (a looping one also at a lower temperature), then
    the cycle fails; a reply that only re-emitted the log it was shown is retried without it.
    ``hide_previous`` leaves the previous observations out of the prompt (see
    :func:`previous_view`), as does a small Observer model (it copies them back instead of
    observing; ``TurnEnv.observer_hides_previous``).

    Raises:
        ObserverOutputError: both replies were rejected; ``reason`` holds the reason code.
    """
    env, record = cycle.env, cycle.record
    cfg = env.config
    seen = cycle.seen = yield from before_observation(env, cycle.context(), batch)
    if not seen:  # the hook withheld everything: observed, without a model call
        return ObserverOutput("", None, None, None, {}, degenerate=False, raw="")
    extractors = inline_extractors(env.extractors)
    tokens = env.counter.count_messages(seen)
    history = format_messages_for_observer(
        seen,
        timezone=record["timezone"],
        tool_result_max_tokens=cfg.observation.tool_result_max_tokens,
        count=env.counter.count_text,
        now=env.now(),
        observe_attachments=env.attachment_policy(tokens),
        extra_tags=[e.slug for e in extractors],
        message_max_tokens=message_max_tokens or observer_message_budget(env),
    )
    context = {**cycle.context(), "source": "observation"}
    hidden = hide_previous or env.observer_hides_previous(tokens)

    def prompt_for(hidden: bool) -> list[BaseMessage]:
        return build_observer_messages(
            history=history,
            previous=previous_view(env, record, pending_texts, hidden=hidden),
            prior_hints={
                **{k: str(v) for k, v in record["hints"].items()},
                **prior_values(extractors, record["extracted"]),
            },
            instruction=cfg.observation.instruction,
            instruction_mode=cfg.observation.instruction_mode,
            hints=cfg.observer_hints,
            thread_title=cfg.observation.thread_title,
            extractors=[(e.slug, e.text(context)) for e in extractors],
        )

    prompt = prompt_for(hidden)
    instructions = instruction_text(prompt)
    sources = Sources([_source_text(m) for m in seen])
    # Lines about forwarded images and files cannot be checked against text: a complete
    # reply is then not filtered by grounding (a cut one still is, strictly).
    loose = None if history.attachments else sources
    log = "\n".join([log_text(record["groups"]), *pending_texts])
    budget = observer_budget(
        tokens,
        sections=_sections(cfg, len(extractors)),
        setting=cfg.observation.output_budget,
    )
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
            output_budget=budget,
            source=history.text,
        )
        cycle.note(result)
        stopped = cut_of(result)
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
            sources=sources if stopped else loose,
            log=log,
            cut=str(stopped["reason"]) if stopped else None,
        )
        covered = None if verdict.covered is None else _covered_in(batch, seen, verdict.covered)
        if verdict.accepted and covered != -1:
            cycle.outcome = "salvaged" if verdict.salvaged else "accepted"
            accepted = replace(
                without_hints(parsed, cfg.observer_hints),
                observations=verdict.observations,
                covered=covered,
            )
            kept = _without_invented_tools(accepted, batch)
            text = yield from after_observation(env, cycle.context(), kept.observations)
            return replace(kept, observations=text)
        if verdict.accepted:  # salvaged lines whose messages a hook rewrote: nothing to cover
            reason, detail = "ungrounded", "the salvaged lines cover messages a hook rewrote"
        else:
            reason, detail = verdict.reason or "unparseable", verdict.detail
        raw = parsed.raw
        if attempt == 0:
            if cycle.trigger != "async-buffer":
                cycle.emit(
                    cycle.failed(
                        f"Observer reply rejected ({reason}: {detail}); retrying",
                        retrying=True,
                        reason=reason,
                    )
                )
            if reason == "echo" and verdict.repeated and not hidden:
                # The reply copied the log it was shown: the retry shows none of it.
                hidden, prompt = True, prompt_for(True)
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

MIN_PART_TOKENS = 64
"""The least room for messages a tier must leave beside the prompt for a split to be tried."""


def observe_in_parts(
    cycle: Cycle,
    batch: Sequence[BaseMessage],
    *,
    pending_texts: Sequence[str] = (),
    message_max_tokens: int | None = None,
    depth: int = 0,
    hide_previous: bool = False,
) -> Plan[ObserverOutput]:
    """:func:`call_observer` on ``batch``, in parts when it is too large for one call.

    A batch above the role's part size (``observation.part_tokens``: small models read
    better in short parts) is observed in parts of about that size. When the Observer's input
    is larger than the largest ``ModelByInputTokens`` tier, the batch is split at safe cut
    points (:func:`~langchain_om._core.window.split_batch`) into parts aiming at
    :data:`PART_MARGIN` of the room the tier leaves (a part that still does not fit is split
    again, a single message is cut in the middle). When the previous observations leave no
    room (less than :data:`MIN_PART_TOKENS`), the prompt is sent without them
    (:func:`previous_view` with ``hidden``) before anything is split. Parts are observed in
    turn and joined in order, the hints of the last part winning. A part that covers only
    some of its messages, or fails after earlier parts succeeded, ends the cycle: the joined
    output covers the messages up to there.

    Raises:
        ModelTierExceededError: even the prompt without messages or previous observations is
            above the largest tier (the turn goes on without observing; see
            :func:`~langchain_om._plans.turn.turn_plan`).
        ObserverOutputError: the first part's replies were rejected.
    """
    counter = cycle.env.counter
    sizes = [counter.count_messages([m]) for m in batch]
    part = cycle.env.observer_part_tokens(sum(sizes))
    if depth == 0 and part is not None and sum(sizes) > part and len(batch) > 1:
        ends = split_batch(batch, sizes, part)
        return (
            yield from _observe_parts(
                cycle, batch, ends, None, hide_previous=hide_previous, pending_texts=pending_texts
            )
        )
    try:
        return (
            yield from call_observer(
                cycle,
                batch,
                pending_texts=pending_texts,
                message_max_tokens=message_max_tokens,
                hide_previous=hide_previous,
            )
        )
    except ModelTierExceededError as exc:
        overhead = max(0, exc.input_tokens - counter.count_messages(batch))
        budget = int((exc.largest_tier - overhead) * PART_MARGIN)
        if budget < MIN_PART_TOKENS and not hide_previous and cycle.record["groups"]:
            hide_previous = True  # the previous observations take the room: show none
            budget = 0
        elif budget < MIN_PART_TOKENS or not batch or depth >= MAX_SPLIT_DEPTH:
            raise
    if budget < MIN_PART_TOKENS:  # try the whole batch again, with the lighter prompt
        return (
            yield from observe_in_parts(
                cycle,
                batch,
                pending_texts=pending_texts,
                message_max_tokens=message_max_tokens,
                depth=depth + 1,
                hide_previous=True,
            )
        )
    ends = split_batch(batch, sizes, budget)
    clip = budget // 2 if len(ends) == 1 else message_max_tokens
    return (
        yield from _observe_parts(
            cycle,
            batch,
            ends,
            clip,
            depth=depth,
            budget=budget,
            hide_previous=hide_previous,
            pending_texts=pending_texts,
        )
    )


def _observe_parts(
    cycle: Cycle,
    batch: Sequence[BaseMessage],
    ends: Sequence[int],
    clip: int | None,
    *,
    depth: int = 0,
    budget: int | None = None,
    hide_previous: bool = False,
    pending_texts: Sequence[str] = (),
) -> Plan[ObserverOutput]:
    """Observe the parts of ``batch`` ending at ``ends`` in order (:func:`observe_in_parts`)."""
    outputs: list[ObserverOutput] = []
    start = 0
    for end in ends:
        part = batch[start:end]
        part_clip = budget // 2 if budget is not None and len(part) == 1 else clip
        try:
            out = yield from observe_in_parts(
                cycle,
                part,
                pending_texts=pending_texts,
                message_max_tokens=part_clip,
                depth=depth + 1,
                hide_previous=hide_previous,
            )
        except ObserverOutputError:
            if not outputs:
                raise
            break  # the parts before it stand; the rest stays in the window
        covered = len(part) if out.covered is None else out.covered
        outputs.append(replace(out, covered=start + covered))
        start = end
        if covered < len(part):
            break
    ends_seen = [o.covered or 0 for o in outputs]
    sizes = [end - begin for begin, end in zip([0, *ends_seen], ends_seen, strict=False)]
    joined = _joined(outputs, sizes)
    done = ends_seen[-1] if outputs else 0
    return replace(joined, covered=None if done == len(batch) else done)


def _joined(outputs: Sequence[ObserverOutput], sizes: Sequence[int]) -> ObserverOutput:
    """The outputs of consecutive parts as one (observations in order, the last hints)."""
    extracted: dict[str, str] = {}
    for out in outputs:
        extracted.update(out.extracted)
    return replace(
        outputs[-1],
        observations="\n".join(o.observations.strip() for o in outputs if o.observations.strip()),
        extracted=extracted,
        raw="\n\n".join(o.raw for o in outputs),
        parts=tuple(
            p for o, size in zip(outputs, sizes, strict=True) for p in _part_sizes(o, size)
        ),
    )


def _part_sizes(out: ObserverOutput, messages: int) -> tuple[tuple[int, int], ...]:
    """``(lines, messages)`` of one part's output (its own parts when it was split again)."""
    if out.parts:
        return out.parts
    text = out.observations.strip()
    return ((len(text.splitlines()) if text else 0, messages),)


def _part_receipts(first_seq: int, parsed: ObserverOutput, text: str) -> list[list[Any]] | None:
    """Line-by-line receipts of a batch observed in parts (``None``: one cycle wrote it all)."""
    if len(parsed.parts) < 2 or sum(lines for lines, _ in parsed.parts) != len(text.splitlines()):
        return None
    return parts_receipts(first_seq, parsed.parts)


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

    A salvaged reply (cut short, see :func:`call_observer`) observes only the leading messages
    its lines cover: the record's cursor says how many (the rest stay in the window).

    Raises:
        CycleFailedError: the Observer failed; ``record`` is unchanged and nothing was archived.
    """
    cfg = env.config

    def body(cycle: Cycle) -> Plan[tuple[OMRecord, dict[str, Any]]]:
        parsed = yield from observe_in_parts(cycle, batch)
        taken = batch if parsed.covered is None else batch[: parsed.covered]
        if not taken:
            raise ObserverOutputError(
                "The Observer's salvaged lines cover no message; nothing was observed.",
                raw=parsed.raw,
                reason="ungrounded",
            )
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
        ids = window_ids(taken)
        group = make_group(
            text=text,
            tokens=env.counter.count_text(text) if text else 0,
            message_ids=ids,
            observed_at=now,
            group_id=stable_id(
                record["record_id"], "obs", record["observed_message_count"], ids[0]
            ),
            first_seq=record["observed_message_count"],
            receipts=_part_receipts(record["observed_message_count"], parsed, text),
            summary=found.values.get(ARCHIVE_SUMMARY_SLUG),
        )
        new = append_observations(
            record,
            group=group,
            observed_ids=ids,
            observed_tokens=env.counter.count_messages(taken),
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
        new, cycle.title_pinned = yield from titled_plan(new)
        # Archive first: the messages leave the window only after they are stored.
        seen = cycle.seen if parsed.covered is None else None
        kept = yield from archived_messages(env, cycle.context(), taken, seen)
        new = yield from observed_plan(kept, before=record, after=new, vector=env.vector)
        return new, {
            "observation_tokens": group["tokens"],
            "observations": text,
            "current_task": parsed.current_task,
            "suggested_response": parsed.suggested_response,
            "extracted_values": found.values,
            "extraction_failures": found.failures,
            "outcome": cycle.outcome,
            "covered_messages": len(taken),
        }

    cycle = Cycle(env, inp, record, "observation", env.counter.count_messages(batch), inp.trigger)
    return (yield from run_cycle(cycle, body))
