"""What memory needs to know about the agent's own model (the *actor*).

Front doors hand the engine the agent's chat model (or its ``"provider/model"`` id); the engine
reads from it, once per model, what the counting and threshold rules depend on:

* its ``provider/model`` id — image and file estimates, the ``"auto"`` prompt-cache TTL and
  provider-change activation;
* its LangChain profile's ``max_input_tokens`` — fractional thresholds such as
  ``("fraction", 0.4)``;
* the OpenAI ``prompt_cache_retention`` it is called with (``model_kwargs`` or a bound
  argument) — the ``"auto"`` TTL.

:class:`ActorEnvs` keeps one plan environment per agent model: the counter bound to its image
and file rules, the config with fractional thresholds resolved against its context window, and
its prompt-cache retention.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.language_models import BaseChatModel

from langchain_om._core.record import coerce_record
from langchain_om._core.types import OMRecord
from langchain_om._engine.providers import ModelMemo, model_id
from langchain_om._plans.types import TurnEnv
from langchain_om.errors import OMConfigError

__all__ = ["ActorEnvs", "ActorModel", "describe_actor"]


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
    if isinstance(model, BaseChatModel):  # not wrapped: its own fields say it all
        return _ACTORS.get(model, _describe_model)
    return _describe_model(model)


_ACTORS: ModelMemo[ActorModel] = ModelMemo()


def _describe_model(model: object) -> ActorModel:
    inner, bound = _unwrap(model)
    if not isinstance(inner, BaseChatModel):
        raise OMConfigError(
            f"actor_model must be the agent's chat model or a 'provider/model' string, got "
            f"{type(model).__name__}",
            option="actor_model",
        )
    extra = getattr(inner, "model_kwargs", None)
    retention = bound.get("prompt_cache_retention")
    if retention is None and isinstance(extra, Mapping):
        retention = extra.get("prompt_cache_retention")
    return ActorModel(
        model_id=model_id(inner),
        max_input_tokens=_max_input_tokens(inner),
        prompt_cache_retention=retention if isinstance(retention, str) else None,
    )


class ActorEnvs:
    """The plan environment of each agent model a memory has seen.

    Args:
        base: the environment without an agent model (the engine's config and counter).
        default: the engine-level ``actor_model=`` (a chat model, an id or None).
    """

    def __init__(self, base: TurnEnv, default: object = None) -> None:
        self._base = base
        self._actors: dict[str, ActorModel] = {}
        self._envs: dict[ActorModel | None, TurnEnv] = {}
        self.default = self.remember(default)

    def remember(self, model: object) -> ActorModel | None:
        """The actor for ``model``; an id seen before as a model object keeps its profile."""
        actor = describe_actor(model)
        if actor is None:
            return None
        known = self._actors.get(actor.model_id)
        if known is not None and actor == ActorModel(actor.model_id):
            return known
        self._actors[actor.model_id] = actor
        return actor

    def resolve(self, model: object, record: OMRecord | dict[str, Any] | None) -> ActorModel | None:
        """The actor of a step: ``model``, else the default, else the thread's last model."""
        actor = self.remember(model) or self.default
        if actor is None:
            last = coerce_record(record, copy=False)
            name = last.get("last_actor_model") if last else None
            if isinstance(name, str) and name:
                actor = self._actors.get(name) or describe_actor(name)
        return actor

    @property
    def needs_actor_model(self) -> bool:
        """Whether steps need the agent's model to resolve fractional thresholds."""
        return self._base.config.uses_fractions and self.default is None

    def env_for(self, actor: ActorModel | None) -> TurnEnv:
        """The plan environment for the agent's model: its counting rules and thresholds.

        Raises:
            OMConfigError: a threshold is a fraction and no agent model is known, or its
                profile lacks ``max_input_tokens``.
        """
        env = self._envs.get(actor)
        if env is None:
            config = self._base.config
            if config.uses_fractions:
                if actor is None:
                    raise OMConfigError(
                        "Fractional thresholds are a share of the agent model's context window, "
                        "and no agent model is known here. Pass actor_model=<the agent's chat "
                        "model> to ObservationalMemory (or to step(), the graph nodes, the "
                        "history adapter or the run config), or use absolute token counts.",
                        option="actor_model",
                    )
                config = config.for_context_window(
                    actor.max_input_tokens, model=repr(actor.model_id)
                )
            env = replace(
                self._base,
                config=config,
                counter=self._base.counter.for_model(actor.model_id if actor else None),
                cache_retention=actor.prompt_cache_retention if actor else None,
            )
            self._envs[actor] = env
        return env

    def record_env(self, record: OMRecord | None) -> TurnEnv:
        """The environment of the agent's model that last answered in ``record``'s thread."""
        last = record.get("last_actor_model") if record else None
        actor = self._actors.get(last) if isinstance(last, str) else None
        return self.env_for(actor or self.default)
