"""Schema extractors: which schemas they take, their prompt, and validating their values.

An extractor with a ``schema`` is filled by a structured-output call after the Observer (or
the Reflector): the model gets the extractor's instructions, its previous value and the new
observations, and answers in the schema. The value kept is plain JSON (a dict), so records
stay serialisable: a pydantic model is dumped with ``model_dump(mode="json")``, a TypedDict is
validated by pydantic, a JSON schema is checked for its object shape, required keys and
property types.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, TypeAdapter, ValidationError
from typing_extensions import is_typeddict

__all__ = [
    "SchemaKind",
    "StructuredRequest",
    "extraction_messages",
    "schema_kind",
    "schema_problem",
    "schema_title",
    "validate_value",
]

SchemaKind = Literal["pydantic", "typeddict", "json"]


@dataclass(frozen=True)
class StructuredRequest:
    """One structured-output call of a schema extractor."""

    role: Literal["observer", "reflector"]
    schema: Any
    messages: Sequence[BaseMessage]
    input_tokens: int
    thread_id: str
    resource_id: str | None
    cycle_id: str | None
    slug: str


def schema_kind(schema: Any) -> SchemaKind | None:
    """The kind of ``schema``, or ``None`` when it is not one an extractor takes."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return "pydantic"
    if is_typeddict(schema):
        return "typeddict"
    if isinstance(schema, Mapping) and (
        schema.get("type") == "object" or isinstance(schema.get("properties"), Mapping)
    ):
        return "json"
    return None


def schema_problem(schema: Any) -> str | None:
    """Why an extractor cannot use ``schema`` (``None`` when it can)."""
    kind = schema_kind(schema)
    if kind is None:
        return (
            "schema must be a pydantic model class, a TypedDict or a JSON-schema dict with "
            f"type 'object', got {schema!r}"
        )
    if kind == "typeddict":
        try:
            TypeAdapter(schema)
        except Exception as exc:  # pydantic refuses typing.TypedDict before Python 3.12
            return f"pydantic cannot validate {schema_title(schema)}: {exc}".split("\n")[0]
    return None


def schema_title(schema: Any) -> str:
    """A short name of ``schema`` for prompts and errors."""
    if isinstance(schema, Mapping):
        return str(schema.get("title") or "value")
    return str(getattr(schema, "__name__", "value"))


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def _json_type_ok(value: Any, expected: Any) -> bool:
    names = expected if isinstance(expected, list) else [expected]
    for name in names:
        kinds = _JSON_TYPES.get(str(name))
        if kinds is None:
            return True  # a type this checker does not know: accept
        if isinstance(value, bool) and name in ("integer", "number"):
            continue
        if isinstance(value, kinds):
            return True
    return False


def _check_json(schema: Mapping[str, Any], value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    missing = [k for k in schema.get("required", ()) if k not in value]
    if missing:
        raise ValueError(f"missing required field(s): {', '.join(missing)}")
    properties = schema.get("properties") or {}
    for key, spec in properties.items():
        if key in value and isinstance(spec, Mapping) and "type" in spec:
            if not _json_type_ok(value[key], spec["type"]):
                raise ValueError(f"field {key!r} should be {spec['type']}")
    if schema.get("additionalProperties") is False:
        extra = [k for k in value if k not in properties]
        if extra:
            raise ValueError(f"unexpected field(s): {', '.join(map(str, extra))}")
    return json.loads(json.dumps(dict(value), default=str))  # type: ignore[no-any-return]


def validate_value(schema: Any, value: Any) -> dict[str, Any]:
    """``value`` validated against ``schema``, as a JSON-serialisable dict.

    Raises:
        ValueError: the value does not fit the schema (the message says why).
    """
    kind = schema_kind(schema)
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    try:
        if kind == "pydantic":
            return schema.model_validate(value).model_dump(mode="json")  # type: ignore[no-any-return]
        if kind == "typeddict":
            adapter: TypeAdapter[Any] = TypeAdapter(schema)
            return adapter.dump_python(adapter.validate_python(value), mode="json")  # type: ignore[no-any-return]
    except ValidationError as exc:
        errors = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise ValueError(errors) from None
    if kind == "json":
        return _check_json(schema, value)
    raise ValueError(f"unsupported schema {schema!r}")


_SYSTEM = """You keep one structured value up to date from a conversation's observation log.

Value: {name}
What it holds: {instructions}

Start from the previous value (when there is one) and change only what the new observations \
state: add new facts, correct facts the user changed, keep everything else as it was. Use \
null or an empty list for what nobody has said yet. Never invent values. Answer in the \
requested schema only."""


def extraction_messages(
    *, name: str, instructions: str, previous: Any, observations: str
) -> list[BaseMessage]:
    """The prompt of a schema extractor's structured-output call."""
    before = json.dumps(previous, ensure_ascii=False, indent=2) if previous is not None else "none"
    return [
        SystemMessage(_SYSTEM.format(name=name, instructions=instructions.strip())),
        HumanMessage(
            f"## Previous value\n\n{before}\n\n## New observations\n\n{observations.strip()}"
        ),
    ]
