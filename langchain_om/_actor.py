"""What memory needs to know about the agent's own model (the *actor*).

Front doors hand the engine the agent's chat model (or its ``"provider/model"`` id); the engine
reads from it, once per model, what the counting and threshold rules depend on:

* its ``provider/model`` id — image and file estimates, the ``"auto"`` prompt-cache TTL and
  provider-change activation;
* its LangChain profile's ``max_input_tokens`` — fractional thresholds such as
  ``("fraction", 0.4)``;
* the OpenAI ``prompt_cache_retention`` it is called with (``model_kwargs`` or a bound
  argument) — the ``"auto"`` TTL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel

from langchain_om.errors import OMConfigError

__all__ = ["ActorModel", "describe_actor"]


@dataclass(frozen=True)
class ActorModel:
    """The agent's model as memory sees it."""

    model_id: str
    """``"provider/model"``."""
    max_input_tokens: int | None = None
    """Context window from the model's LangChain profile, if it has one."""
    prompt_cache_retention: str | None = None
    """OpenAI prompt-cache retention the model is called with (``"24h"``, ``"in_memory"``)."""


def _unwrap(model: Any) -> tuple[Any, Mapping[str, Any]]:
    """The chat model inside ``model.bind(...)`` wrappers, and the bound call arguments."""
    kwargs: dict[str, Any] = {}
    for _ in range(8):
        bound = getattr(model, "bound", None)
        if bound is None or not isinstance(getattr(model, "kwargs", None), Mapping):
            break
        kwargs = {**model.kwargs, **kwargs}
        model = bound
    return model, kwargs


def _max_input_tokens(model: Any) -> int | None:
    profile = getattr(model, "profile", None)
    value = profile.get("max_input_tokens") if isinstance(profile, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def describe_actor(model: object) -> ActorModel | None:
    """Read an :class:`ActorModel` from a chat model, a ``"provider/model"`` string or None.

    Raises:
        OMConfigError: ``model`` is neither.
    """
    if model is None or isinstance(model, ActorModel):
        return model
    if isinstance(model, str):
        return ActorModel(model_id=model) if model.strip() else None
    inner, bound = _unwrap(model)
    if not isinstance(inner, BaseChatModel):
        raise OMConfigError(
            f"actor_model must be the agent's chat model or a 'provider/model' string, got "
            f"{type(model).__name__}",
            option="actor_model",
        )
    from langchain_om.models import model_id

    extra = getattr(inner, "model_kwargs", None)
    retention = bound.get("prompt_cache_retention")
    if retention is None and isinstance(extra, Mapping):
        retention = extra.get("prompt_cache_retention")
    return ActorModel(
        model_id=model_id(inner),
        max_input_tokens=_max_input_tokens(inner),
        prompt_cache_retention=retention if isinstance(retention, str) else None,
    )
