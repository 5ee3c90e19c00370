"""Schema extractors as a plan step: one structured-output call per extractor, after a cycle.

After the Observer (``observation.extract``) or the Reflector (``reflection.extract``), each
schema extractor gets its instructions, its previous value and the cycle's new observations,
and a structured-output call (``with_structured_output`` on the role's model, through the
engine's retry plan) fills the value. It is validated against the schema, passed to
``on_extracted`` (which may replace or reject it) and returned for the caller to store. One
extractor failing records an extraction failure (reason code ``extraction_failed``) and keeps
the others, the previous value and the observation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_om._core.redact import error_summary, redacted_logger
from langchain_om._core.schemas import StructuredRequest, extraction_messages, validate_value
from langchain_om._plans.effects import Call, Plan
from langchain_om._plans.types import TurnEnv
from langchain_om.extractors import (
    ExtractionResult,
    Extractor,
    bounded,
    check_extractors,
    get_path,
    on_extracted,
)

logger = redacted_logger("langchain_om")

Role = Literal["observer", "reflector"]


def reflection_extractors(env: TurnEnv) -> list[Extractor]:
    """``reflection.extract``, validated (schema extractors only)."""
    return check_extractors(env.config.reflection.extract, option="reflection.extract")


def extract_plan(
    env: TurnEnv,
    ctx: Mapping[str, Any],
    extractors: Sequence[Extractor],
    observations: str,
    extracted: Mapping[str, Any],
    *,
    role: Role,
) -> Plan[ExtractionResult]:
    """Fill every schema extractor of ``extractors`` from ``observations``. Never raises."""
    result = ExtractionResult()
    if not observations.strip():
        return result
    for extractor in extractors:
        if extractor.structured:
            yield from _extract_one(env, ctx, extractor, observations, extracted, role, result)
    return result


def _extract_one(
    env: TurnEnv,
    ctx: Mapping[str, Any],
    extractor: Extractor,
    observations: str,
    extracted: Mapping[str, Any],
    role: Role,
    result: ExtractionResult,
) -> Plan[None]:
    previous = get_path(extracted, extractor.path) if extractor.path else None
    source = "observation" if role == "observer" else "reflection"
    context = {**ctx, "source": source, "previous": previous}
    thread_id = str(ctx.get("thread_id") or "")
    try:
        schema = extractor.schema_for(context)
        messages = extraction_messages(
            name=extractor.name,
            instructions=extractor.text(context),
            previous=previous if extractor.include_previous_extraction else None,
            observations=observations,
        )
        request = StructuredRequest(
            role=role,
            schema=schema,
            messages=messages,
            input_tokens=env.counter.count_messages(messages),
            thread_id=thread_id,
            resource_id=ctx.get("resource_id"),
            cycle_id=ctx.get("cycle_id"),
            slug=extractor.slug,
        )
        reply = yield Call(
            name=f"extract:{extractor.slug}",
            fn=env.structured,
            afn=env.astructured,
            args=(request,),
        )
        value = validate_value(schema, reply)
        value = on_extracted(extractor, previous, value, thread_id=thread_id, schema=schema)
        value = bounded(extractor, value, env.counter.count_text)
    except Exception as exc:
        summary = error_summary(exc)
        logger.warning(
            "extractor %s failed (%s); its previous value is kept", extractor.slug, summary.type
        )
        result.failures.append(
            {"slug": extractor.slug, "error": summary.text(), "reason": "extraction_failed"}
        )
        return
    result.values[extractor.slug] = value
