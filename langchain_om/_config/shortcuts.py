"""The typed keyword arguments of the constructors: the options set most often, by name.

``ObservationalMemory(...)`` and ``ObservationalMemoryMiddleware(...)`` take ``model``,
``message_tokens``, ``observation_tokens``, ``buffer_tokens``, ``scope`` and ``retrieval`` as
keyword arguments of their own, so an editor shows them and a type checker checks them. They
map onto the full config (:class:`~langchain_om.config.ObservationalMemoryConfig`), which still
takes every other option: ``message_tokens=`` is ``observation={"message_tokens": ...}``.

Giving one of them twice in the same call, as its typed argument and in its group
(``message_tokens=`` and ``observation={"message_tokens": ...}``, camelCase or an
``ObservationConfig`` alike), is an :class:`~langchain_om.errors.OMConfigError` naming both.
Like every keyword option, they override the positional options object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel

from langchain_om._config.parts import ObservationConfig, ReflectionConfig
from langchain_om.errors import OMConfigError

__all__ = ["GROUPED", "BufferTokens", "Threshold", "fold_shortcuts"]

Threshold: TypeAlias = int | tuple[Literal["fraction"], float]
"""Tokens, or ``("fraction", f)`` of the agent model's context window."""

BufferTokens: TypeAlias = int | float | Literal[False]
"""Buffer every this share of the threshold (< 1) or these tokens; ``False``: no buffering."""

GROUPED: dict[str, tuple[str, type[BaseModel]]] = {
    "message_tokens": ("observation", ObservationConfig),
    "buffer_tokens": ("observation", ObservationConfig),
    "observation_tokens": ("reflection", ReflectionConfig),
}
"""Typed arguments that live in an option group: name -> (group, the group's config class)."""


def fold_shortcuts(kwargs: Mapping[str, Any], **typed: Any) -> dict[str, Any]:
    """``kwargs`` with the typed arguments given (not ``None``) folded in as options.

    Top-level ones (``model``, ``scope``, ``retrieval``) become keys of their own; grouped ones
    join their group's dict (``observation=``, ``reflection=``), whose other options stay.

    Raises:
        OMConfigError: a typed argument's option is in its group too (the message names both).
    """
    out = dict(kwargs)
    for name, value in typed.items():
        if value is None:
            continue
        if name not in GROUPED:
            out[name] = value
            continue
        group_name, group_model = GROUPED[name]
        group = out.get(group_name)
        given = _given(group, name, group_model)
        if given is not None:
            raise OMConfigError(
                f"Option {group_name}.{name} is given twice: as {name}={value!r} and as "
                f"{group_name}={{{given!r}: ...}}. Give it once: keep {name}= and drop it from "
                f"{group_name}, or the other way round.",
                option=f"{group_name}.{name}",
            )
        if group is None:
            out[group_name] = {name: value}
        elif isinstance(group, Mapping):
            out[group_name] = {**group, name: value}
        elif isinstance(group, BaseModel):
            explicit = {field: getattr(group, field) for field in group.model_fields_set}
            out[group_name] = {**explicit, name: value}
        # anything else is not an option group: coerce() refuses it, naming the group
    return out


def _given(group: Any, name: str, model: type[BaseModel]) -> str | None:
    """How ``group`` spells option ``name`` when it sets it (snake_case or camelCase)."""
    if isinstance(group, Mapping):
        alias = model.model_fields[name].alias
        return next((key for key in (name, alias) if key is not None and key in group), None)
    if isinstance(group, BaseModel) and name in group.model_fields_set:
        return name
    return None
