"""Extractors in resource scope: one set of extracted values per resource.

The values live in the resource's shared record (``extracted``), beside its log, so every
thread of the user reads the same working memory and typed values. They are filled the way
thread scope fills them (:mod:`langchain_om.extractors`, :mod:`langchain_om._plans.extract`),
from the resource's own new observations only:

- inline extractors (``observation.extract`` text extractors, the working memory) are
  sections of each batch's Observer reply (:func:`batch_values`); when a cycle has several
  batches, the last batch's value of a slug wins;
- schema extractors run once per cycle on the observations of all its batches
  (:func:`cycle_delta_plan`), and ``reflection.extract`` once per reflection
  (:func:`reflection_changes_plan`);
- an update of the working memory by the application (``update_working_memory``) is
  committed to the shared record with compare-and-set
  (:func:`~langchain_om._plans.working_memory.resource_working_memory_plan`).

Only what changed is committed (:func:`changed_values`): a slug another writer changed
meanwhile keeps that writer's value unless this cycle changed it too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_om._core.resource import ResourceDelta, ResourceRecord, log_text, merge_sections
from langchain_om._plans.effects import Plan
from langchain_om._plans.extract import extract_plan, reflection_extractors
from langchain_om._plans.types import TurnEnv
from langchain_om.extractors import (
    ExtractionResult,
    Extractor,
    inline_extractors,
    persist,
    prior_values,
    run_extractors,
)

__all__ = [
    "batch_values",
    "changed_values",
    "cycle_delta_plan",
    "observer_sections",
    "reflection_changes_plan",
]


def observer_sections(
    env: TurnEnv, ctx: Mapping[str, Any], record: ResourceRecord
) -> tuple[list[Extractor], list[tuple[str, str]], dict[str, str]]:
    """What a batch's Observer call asks of the inline extractors.

    Returns the inline extractors, their ``(slug, instructions)`` sections, and the
    resource's prior values to show the Observer.
    """
    inline = inline_extractors(env.extractors)
    context = {**ctx, "source": "observation"}
    sections = [(e.slug, e.text(context)) for e in inline]
    return inline, sections, prior_values(inline, record["extracted"])


def batch_values(
    env: TurnEnv, raw: Mapping[str, str], record: ResourceRecord, thread_ids: Sequence[str]
) -> ExtractionResult:
    """The inline extractors' values a batch's reply gave (``on_extracted`` applied)."""
    return run_extractors(
        env.extractors,
        raw,
        record["extracted"],
        thread_id=thread_ids[0],
        count=env.counter.count_text,
    )


def changed_values(
    extractors: Sequence[Extractor], extracted: Mapping[str, Any], values: Mapping[str, Any]
) -> dict[str, Any]:
    """The top-level entries of ``extracted`` that storing ``values`` changes."""
    stored = persist(extractors, extracted, values)
    return {k: v for k, v in stored.items() if extracted.get(k) != v}


def cycle_delta_plan(
    env: TurnEnv,
    ctx: Mapping[str, Any],
    record: ResourceRecord,
    delta: ResourceDelta,
    found: ExtractionResult,
) -> Plan[ResourceDelta]:
    """``delta`` carrying the extracted values of its cycle (what changed).

    The batches' inline values are in ``found``; the schema extractors run here on the
    cycle's new observations, and their values and failures are added to ``found``.
    """
    if not env.extractors:
        return delta
    text = log_text(merge_sections([], delta.sections)) if delta.sections else ""
    found.merge(
        (
            yield from extract_plan(
                env, ctx, env.extractors, text, record["extracted"], role="observer"
            )
        )
    )
    return replace(
        delta, extracted=changed_values(env.extractors, record["extracted"], found.values)
    )


def reflection_changes_plan(
    env: TurnEnv,
    ctx: Mapping[str, Any],
    record: ResourceRecord,
    text: str,
    found: ExtractionResult,
) -> Plan[dict[str, Any]]:
    """The values ``reflection.extract`` fills from the condensed log ``text`` (what changed)."""
    extractors = reflection_extractors(env)
    if not extractors:
        return {}
    found.merge(
        (yield from extract_plan(env, ctx, extractors, text, record["extracted"], role="reflector"))
    )
    return changed_values(extractors, record["extracted"], found.values)
