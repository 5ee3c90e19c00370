"""The reflection cycle: the Reflector's compression ladder and the synchronous cycle.

:func:`call_reflector` condenses observation groups, escalating until they fit;
:func:`reflect_plan` is the synchronous reflection cycle. The background reflection of
:mod:`~langchain_om._plans.buffer` shares :func:`call_reflector`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from langchain_om._core.dates import iso
from langchain_om._core.line_edits import without_forgotten
from langchain_om._core.observer import parse_observer_output
from langchain_om._core.output_budget import reflector_budget
from langchain_om._core.record import log_text, stable_id
from langchain_om._core.reflector import (
    LadderResult,
    ReflectionLadder,
    apply_reflection,
    build_reflector_messages,
    churn_guard_after,
    compression_start_level,
)
from langchain_om._core.stream_reader import cut_of
from langchain_om._core.types import ObservationGroup, OMRecord
from langchain_om._plans.cycles import Cycle, run_cycle
from langchain_om._plans.effects import Plan, StoreBatch, reply_text
from langchain_om._plans.extract import extract_plan, reflection_extractors
from langchain_om._plans.storage import reflected_ops
from langchain_om._plans.transforms import after_reflection, before_reflection
from langchain_om._plans.types import TurnEnv, TurnInput
from langchain_om.extractors import persist


def call_reflector(
    cycle: Cycle,
    groups: Sequence[ObservationGroup],
    *,
    target: int,
    skip_continuation_hints: bool = False,
) -> Plan[LadderResult]:
    """Condense ``groups`` with the compression ladder (escalating until it fits).

    Each attempt streams under the Reflector's output budget and stops as soon as it loops; a
    stopped reply is judged on the lines it kept (the ladder's checks decide).
    """
    env = cycle.env
    text_in = yield from before_reflection(env, cycle.context(), log_text(groups))
    ladder = ReflectionLadder(
        start_level=compression_start_level(env.model_id("reflector", cycle.tokens)),
        target_tokens=max(1, target),
        input_tokens=cycle.tokens,
        input_text=text_in,
    )
    cfg = env.config
    while (level := ladder.next_level()) is not None:
        prompt = build_reflector_messages(
            observations=text_in,
            level=level,
            instruction=cfg.reflection.instruction,
            instruction_mode=cfg.reflection.instruction_mode,
            observer_instruction=cfg.observation.instruction,
            observer_mode=cfg.observation.instruction_mode,
            hints=cfg.reflector_hints,
            target_tokens=target,
            skip_continuation_hints=skip_continuation_hints,
        )
        result = yield env.model_call(
            "reflector",
            prompt,
            thread_id=cycle.record["thread_id"],
            resource_id=cycle.record["resource_id"],
            trigger=cycle.trigger,
            cycle_id=cycle.cycle_id,
            output_budget=reflector_budget(
                cycle.tokens,
                target_tokens=target,
                sections=0 if skip_continuation_hints else 1,
                setting=cfg.reflection.output_budget,
            ),
        )
        cycle.note(result)
        parsed = parse_observer_output(reply_text(result))
        out = parsed.observations.strip()
        stopped = cut_of(result)
        verdict = ladder.record(
            level,
            parsed,
            env.counter.count_text(out) if out else 0,
            looped=stopped is not None and stopped.get("reason") == "loop",
        )
        if verdict != "fits" and not ladder.done and cycle.trigger != "async-buffer":
            last = ladder.attempts[-1]
            cycle.emit(
                cycle.failed(
                    f"reflection attempt {verdict}; retrying",
                    retrying=True,
                    reason=last.reason or verdict,
                    retention=last.retention,
                )
            )
    best = ladder.result()
    text = yield from after_reflection(env, cycle.context(), best.text)
    if text == best.text:
        return best
    return replace(best, text=text, tokens=env.counter.count_text(text) if text else 0)


def reflect_plan(env: TurnEnv, inp: TurnInput, record: OMRecord) -> Plan[OMRecord]:
    """Condense the whole log into a new generation (compression ladder).

    Raises:
        CycleFailedError: no usable reflection; ``record`` is unchanged.
    """
    groups = record["groups"]
    if not groups:
        return record
    threshold = env.config.reflection.observation_tokens_abs

    def body(cycle: Cycle) -> Plan[tuple[OMRecord, dict[str, Any]]]:
        best = yield from call_reflector(cycle, groups, target=threshold)
        covered = [g["id"] for g in groups]
        text = without_forgotten(record, best.text)
        new = apply_reflection(
            record,
            text=text,
            tokens=best.tokens if text == best.text else env.counter.count_text(text),
            covered_group_ids=covered,
            now=iso(env.now()),
            new_group_id=stable_id(record["record_id"], "ref", record["generation"] + 1, *covered),
            suggested_response=(
                best.output.suggested_response
                if env.config.reflector_hints.suggested_response
                else None
            ),
        )
        new["reflection_suppressed_at_tokens"] = churn_guard_after(
            best.tokens, threshold, new["observation_tokens"]
        )
        extractors = reflection_extractors(env)
        found = yield from extract_plan(
            env, cycle.context(), extractors, best.text, record["extracted"], role="reflector"
        )
        new["extracted"] = persist(extractors, record["extracted"], found.values)
        index = reflected_ops(record, new, vector=env.vector)
        if index:
            yield StoreBatch(index)
        return new, {
            "observation_tokens": new["observation_tokens"],
            "observations": text,
            "suggested_response": best.output.suggested_response,
            "retention": best.retention,
            "extracted_values": found.values,
            "extraction_failures": found.failures,
        }

    cycle = Cycle(env, inp, record, "reflection", record["observation_tokens"], inp.trigger)
    return (yield from run_cycle(cycle, body))
