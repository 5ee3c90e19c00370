"""Validated options of Observational Memory.

``ObservationalMemoryConfig`` holds everything a user can tune; ``ObservationConfig``,
``ReflectionConfig``, ``RetrievalConfig``, ``ModelSettings``, ``SpendConfig``,
``CadenceConfig`` and ``Hooks`` are its parts. All are
frozen pydantic models that accept snake_case names and Mastra's camelCase keys
(``messageTokens``, ``bufferTokens``, ...), so a Mastra config can be pasted as is.

Every problem is reported at construction as :class:`~langchain_om.errors.OMConfigError`, whose
``option`` is the dotted snake_case path of the bad option (``"observation.buffer_tokens"``;
for an unknown key, the key as written) and whose message says how to fix it. The option
groups are defined in :mod:`langchain_om._config.parts` and the validation helpers in
:mod:`langchain_om._config.rules`; this module holds the top-level config, the rules that span
groups, and the public names of all of them.

Derived values (absolute token thresholds, inherited settings, the effective models) are
read-only properties, so the rest of the package never recomputes them::

    config = ObservationalMemoryConfig.coerce({"observation": {"messageTokens": 20_000}})
    config.observation.buffer_interval_tokens  # 4000
    config.buffering_enabled  # True
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    StrictBool,
    model_validator,
)

from langchain_om._config.parts import (
    CadenceConfig,
    ContinuationHints,
    Hooks,
    IdleAfter,
    MemoryScope,
    ModelSettings,
    ModelSpec,
    ObservationConfig,
    OptionGroup,
    ReflectionConfig,
    RetrievalConfig,
    SpendConfig,
    parse_duration,
)
from langchain_om._config.rules import (
    InvalidOption,
    brief,
    canonical_keys,
    nested_model,
    numeric_rule,
    preamble_rule,
    resolve_fraction,
    sub_config,
    to_config_error,
)
from langchain_om._core.acceptance import OBSERVATION_CAP_FACTOR, observation_limit
from langchain_om._core.observer_prompts import HintSwitch
from langchain_om._engine.providers import DEFAULT_MODEL
from langchain_om.errors import OMConfigError

__all__ = [
    "CadenceConfig",
    "ContinuationHints",
    "DEFAULT_MODEL",
    "Hooks",
    "ModelSettings",
    "ObservationConfig",
    "ObservationalMemoryConfig",
    "ReflectionConfig",
    "RetrievalConfig",
    "SpendConfig",
    "parse_duration",
]


_HONEST_COMPRESSION = 3
"""Messages shrink at least about this much into observations (typically 3-10x): the size
cap of one observation (:func:`~langchain_om._core.acceptance.observation_limit`) must let
this compression of a full batch through."""


def _caller_stacklevel() -> int:
    """``stacklevel`` of the first frame outside langchain_om and pydantic, for warnings."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and str(frame.f_globals.get("__name__")).startswith(
        ("langchain_om", "pydantic")
    ):
        frame, level = frame.f_back, level + 1
    return level


class ObservationalMemoryConfig(OptionGroup):
    """All options of Observational Memory.

    Build it with :meth:`coerce` (``None``, ``True``, ``False``, a dict with snake_case or
    Mastra camelCase keys, or a config, plus keyword overrides) or with keyword arguments.

    Example:
        ```python
        config = ObservationalMemoryConfig.coerce(
            {"observation": {"messageTokens": 20_000, "bufferTokens": False}}
        )
        assert config.observation.message_tokens == 20_000
        assert not config.buffering_enabled
        ```
    """

    enabled: StrictBool = True
    """Only an explicit False disables OM."""
    model: ModelSpec = None
    """Model of both the Observer and the Reflector; None or 'default' means DEFAULT_MODEL.
    Cannot be combined with observation.model or reflection.model."""
    scope: MemoryScope = "thread"
    """'thread' keeps one observation log per thread; 'resource' shares one across all threads
    of a resource (experimental; async buffering only with observation.buffer_tokens set)."""
    activate_after_idle: IdleAfter = None
    """Idle time (ms, '5m', 'auto') after which buffered observations activate below the
    threshold; None or False = off. Reflection does not inherit it."""
    activate_on_provider_change: StrictBool = False
    """Activate buffered observations when the actor model changes; reflection does not inherit."""
    share_token_budget: StrictBool = False
    """Messages and observations share message_tokens + observation_tokens; needs
    observation.buffer_tokens=False."""
    temporal_markers: StrictBool = False
    """Insert a time-gap reminder before a user message sent 10 minutes or more after the last."""
    retrieval: Annotated[
        RetrievalConfig | None,
        BeforeValidator(lambda v: None if v is None or v is False else sub_config(v)),
    ] = None
    """Retrieval and the recall tool: True, a dict or a RetrievalConfig turn it on; None or
    False (stored as None) keep it off. Off by default in thread scope, on in resource scope."""
    hooks: Annotated[Hooks, BeforeValidator(sub_config)] = Field(default_factory=Hooks)
    """Callbacks around observation and reflection cycles."""
    observation: Annotated[ObservationConfig, BeforeValidator(sub_config)] = Field(
        default_factory=ObservationConfig
    )
    """Observer options."""
    reflection: Annotated[ReflectionConfig, BeforeValidator(sub_config)] = Field(
        default_factory=ReflectionConfig
    )
    """Reflector options."""
    obscure_thread_ids: StrictBool | None = None
    """Hash thread ids before they enter observation text; None = only in resource scope."""
    spend: Annotated[SpendConfig, BeforeValidator(sub_config)] = Field(default_factory=SpendConfig)
    """A budget of memory's own model calls per rolling hour or day (tokens, cycles): off
    unless a limit is set."""
    cadence: Annotated[CadenceConfig, BeforeValidator(sub_config)] = Field(
        default_factory=CadenceConfig
    )
    """How often turns may observe: every_n_turns, or only at session end."""

    # --- presentation and modes (user control) -------------------------------------------
    read_only: StrictBool = False
    """Show the memory context but change nothing: no observation, reflection, buffering or
    archive write (for replaying a thread, evaluation, or a second agent reading a memory)."""
    keep_last_messages: Annotated[
        int,
        numeric_rule(
            "a whole number of messages, 0 or more",
            "Use e.g. 4 to always keep the last four messages in the window; 0 turns it off.",
            lambda x: x >= 0,
            whole=True,
        ),
    ] = 0
    """The N most recent messages always stay in the window, whatever observation or activation
    removes (0 = no floor)."""
    memory_tool: StrictBool = False
    """Give the agent a ``memory`` tool to find, correct and delete observation lines and to
    update the working memory (its edits are never observed)."""
    preamble: Annotated[str | None, BeforeValidator(preamble_rule)] = None
    """A template replacing the built-in guidance of the memory context, with the placeholders
    {observations}, {hints}, {current_date} and {default_preamble}; None = the built-in."""

    @model_validator(mode="before")
    @classmethod
    def _resource_recall_by_default(cls, data: Any) -> Any:
        """Resource scope: recall is on unless ``retrieval`` is given (False keeps it off)."""
        if (
            isinstance(data, Mapping)
            and data.get("scope") == "resource"
            and "retrieval" not in data
        ):
            return {**data, "retrieval": True}
        return data

    @model_validator(mode="after")
    def _check_combinations(self) -> Self:
        for role in ("observation", "reflection"):
            if self.model is not None and getattr(self, role).model is not None:
                raise InvalidOption(
                    f"cannot be combined with {role}.model",
                    "Set one shared model at the top level, or drop the top-level model and set "
                    "observation.model and reflection.model.",
                    option="model",
                )
        observe_at = self.observation.message_tokens
        reflect_at = self.reflection.observation_tokens
        # Fractions of the agent's context window are checked once resolved to tokens.
        if isinstance(observe_at, int) and isinstance(reflect_at, int):
            batch = observe_at
            largest = observation_limit(batch, reflect_at)
            if largest * _HONEST_COMPRESSION < batch:
                least = math.ceil(batch / (_HONEST_COMPRESSION * OBSERVATION_CAP_FACTOR))
                raise InvalidOption(
                    f"is {reflect_at} tokens: one observation may then hold at most {largest} "
                    f"tokens, less than an honest {_HONEST_COMPRESSION}x compression of a full "
                    f"batch of observation.message_tokens ({batch} tokens), so "
                    "realistic observations would be rejected as oversized",
                    f"Raise reflection.observation_tokens to at least {least}, or lower "
                    "observation.message_tokens.",
                    option="reflection.observation_tokens",
                )
        reflection_set = sorted(self.reflection.model_fields_set)
        if self.observation.archive is not None and reflection_set:
            raise InvalidOption(
                f"replaces reflection, but reflection.{reflection_set[0]} is set too",
                "Archive mode retires old groups instead of reflecting them: drop the "
                "reflection options, or turn observation.archive off.",
                option="observation.archive",
            )
        thread = self.scope == "thread"
        if not thread and self.spend.per == "thread":
            raise InvalidOption(
                "is 'thread' in resource scope, where one cycle observes all of a resource's "
                "threads at once, so its cost belongs to no single thread",
                "Leave spend.per out (resource scope budgets per resource), or use scope='thread'.",
                option="spend.per",
            )
        buffers = self.observation.buffer_tokens is not False and (
            self.scope == "thread" or self._buffers_in_resource_scope
        )
        if self.share_token_budget and buffers:
            raise InvalidOption(
                "needs async buffering off",
                "Set observation.buffer_tokens=False, or share_token_budget=False.",
                option="share_token_budget",
            )
        ignored = [] if self.scope == "thread" else self._ignored_buffering_options()
        if ignored:
            warnings.warn(
                f"Async buffering in resource scope {self._resource_buffering_note}; ignoring "
                f"{', '.join(ignored)}. Remove them or use scope='thread'.",
                UserWarning,
                stacklevel=_caller_stacklevel(),
            )
        return self

    @property
    def _buffers_in_resource_scope(self) -> bool:
        """Resource scope buffers when ``observation.buffer_tokens`` is given (not False)."""
        observation = self.observation
        return "buffer_tokens" in observation.model_fields_set and (
            observation.buffer_tokens is not False
        )

    @property
    def _resource_buffering_note(self) -> str:
        if self._buffers_in_resource_scope:
            return "buffers observations only (the shared log is reflected synchronously)"
        return "is off unless observation.buffer_tokens is set"

    def _ignored_buffering_options(self) -> list[str]:
        """Resource scope: the buffering options set explicitly that change nothing."""
        observation, explicit = self.observation, self.observation.model_fields_set
        found: list[str] = []
        if "buffer_tokens" in explicit and observation.buffer_tokens is False:
            return found  # the user turned buffering off already
        if not self._buffers_in_resource_scope:
            names = ["buffer_activation", "block_after"]
            names += ["buffer_on_idle"] if observation.buffer_on_idle else []
            found = [f"observation.{name}" for name in names if name in explicit]
        if "buffer_activation" in self.reflection.model_fields_set:
            found.append("reflection.buffer_activation")
        return found

    @classmethod
    def coerce(cls, value: Any = None, /, **kwargs: Any) -> ObservationalMemoryConfig:
        """Build a config from any accepted form.

        Args:
            value: ``None`` or ``True`` (defaults), ``False`` (``enabled=False``), a dict
                (snake_case or camelCase keys), or an existing config.
            **kwargs: options that override ``value``; a dict given for a nested config is
                merged into that config's explicitly set options instead of replacing them.

        Returns:
            The validated config (``value`` itself when it is a config and nothing overrides it).

        Raises:
            OMConfigError: an option is unknown or invalid; ``.option`` is its dotted path.
        """
        if isinstance(value, ObservationalMemoryConfig) and not kwargs:
            return value
        if value is None or isinstance(value, bool):
            value = {} if value in (None, True) else {"enabled": False}
        elif not isinstance(value, ObservationalMemoryConfig | Mapping):
            raise OMConfigError(
                f"Invalid observational memory options {brief(value)}: pass None, True, False, "
                "a dict of options or an ObservationalMemoryConfig.",
                option=None,
            )
        if kwargs:
            try:
                value = _merge(cls, value, kwargs)
            except InvalidOption as invalid:
                raise to_config_error(invalid) from None
        return cls.model_validate(value)

    @property
    def buffering_enabled(self) -> bool:
        """Whether async buffering of observations runs.

        It does when memory is enabled, not read-only and ``observation.buffer_tokens`` is not
        False; in resource scope only when ``observation.buffer_tokens`` is given.
        """
        buffer_tokens = self.observation.buffer_tokens
        active = self.enabled and not self.read_only and buffer_tokens is not False
        return active and (self.scope == "thread" or self._buffers_in_resource_scope)

    @property
    def spend_per(self) -> Literal["thread", "resource"]:
        """Whom the spend budget belongs to: ``spend.per``, else the memory's scope."""
        return self.spend.per or self.scope

    @property
    def spend_watched(self) -> bool:
        """Whether memory's model calls are budgeted: a limit is set and memory can call."""
        return self.spend.active and self.enabled and not self.read_only

    @property
    def observer_hints(self) -> HintSwitch:
        """The continuation hints the Observer writes (observation.continuation_hints)."""
        return self.observation.continuation_hints.switch

    @property
    def reflector_hints(self) -> HintSwitch:
        """The continuation hints the Reflector writes (its own setting, else the Observer's)."""
        own = self.reflection.continuation_hints
        return self.observer_hints if own is None else own.switch

    @property
    def shown_hints(self) -> HintSwitch:
        """The continuation hints the agent is shown: those some role writes."""
        return self.observer_hints.union(self.reflector_hints)

    @property
    def observer_model_spec(self) -> Any:
        """Observer model: top-level model, else observation.model, reflection.model, 'default'."""
        specs = (self.model, self.observation.model, self.reflection.model)
        return next((spec for spec in specs if spec is not None), "default")

    @property
    def reflector_model_spec(self) -> Any:
        """Reflector model: top-level model, else reflection.model, observation.model, 'default'."""
        specs = (self.model, self.reflection.model, self.observation.model)
        return next((spec for spec in specs if spec is not None), "default")

    @property
    def uses_default_observer_model(self) -> bool:
        """Whether the Observer runs the default model ('default' or DEFAULT_MODEL)."""
        return self.observer_model_spec in ("default", DEFAULT_MODEL)

    @property
    def uses_default_reflector_model(self) -> bool:
        """Whether the Reflector runs the default model ('default' or DEFAULT_MODEL)."""
        return self.reflector_model_spec in ("default", DEFAULT_MODEL)

    @property
    def observation_activate_after_idle_ms(self) -> int | Literal["auto"] | None:
        """Observation idle activation: its own setting (False = off), else the top level's."""
        own = self.observation.activate_after_idle
        value = self.activate_after_idle if own is None else own
        return None if value is None or value is False else value

    @property
    def reflection_activate_after_idle_ms(self) -> int | Literal["auto"] | None:
        """Reflection idle activation: reflection's own setting only."""
        value = self.reflection.activate_after_idle
        return None if value is None or value is False else value

    @property
    def observation_activate_on_provider_change(self) -> bool:
        """Observation's own setting, else the top level's."""
        own = self.observation.activate_on_provider_change
        return self.activate_on_provider_change if own is None else own

    @property
    def reflection_activate_on_provider_change(self) -> bool:
        """Reflection's own setting only."""
        return self.reflection.activate_on_provider_change

    @property
    def effective_obscure_thread_ids(self) -> bool:
        """Whether thread ids are hashed: the explicit setting, else True in resource scope."""
        explicit = self.obscure_thread_ids
        return self.scope == "resource" if explicit is None else explicit

    @property
    def retrieval_enabled(self) -> bool:
        """Whether retrieval (source pointers and the recall tool) is on."""
        return self.retrieval is not None

    @property
    def uses_fractions(self) -> bool:
        """Whether a threshold is a fraction of the agent model's context window."""
        return isinstance(self.observation.message_tokens, tuple) or isinstance(
            self.reflection.observation_tokens, tuple
        )

    def for_context_window(
        self, max_input_tokens: int | None, *, model: str = "the agent's model"
    ) -> ObservationalMemoryConfig:
        """This config with fractional thresholds turned into tokens of a context window.

        Args:
            max_input_tokens: The agent model's ``profile["max_input_tokens"]`` (None when its
                profile lacks it).
            model: How to name the model in errors.

        Returns:
            ``self`` when no threshold is a fraction, else a config with absolute thresholds
            (validated like one given in tokens).

        Raises:
            OMConfigError: a threshold is a fraction and ``max_input_tokens`` is None, or the
                resolved thresholds contradict other options.
        """
        if not self.uses_fractions:
            return self
        try:
            message = resolve_fraction(
                self.observation.message_tokens, max_input_tokens, "message_tokens", model
            )
            observation = resolve_fraction(
                self.reflection.observation_tokens, max_input_tokens, "observation_tokens", model
            )
        except InvalidOption as invalid:
            role = "observation" if invalid.option == "message_tokens" else "reflection"
            invalid.option = f"{role}.{invalid.option}"
            raise to_config_error(invalid) from None
        return ObservationalMemoryConfig.coerce(
            self,
            observation={"message_tokens": message},
            reflection={"observation_tokens": observation},
        )


def _explicit(value: Any) -> Any:
    """The explicitly set options of a config as a dict (all of them for ``ModelSettings``)."""
    if isinstance(value, OptionGroup):
        names = type(value).model_fields if isinstance(value, ModelSettings) else None
        return {name: getattr(value, name) for name in names or value.model_fields_set}
    return value


def _merge(model: type[BaseModel], base: Any, override: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``override`` into ``base``, recursing where both give a nested config."""
    merged = canonical_keys(model, _explicit(base))
    for name, value in canonical_keys(model, override).items():
        nested, current = nested_model(model, name), merged.get(name)
        if nested and isinstance(current, Mapping | BaseModel) and isinstance(value, Mapping):
            try:
                value = _merge(nested, current, value)
            except InvalidOption as invalid:
                invalid.option = f"{name}.{invalid.option}"
                raise
        merged[name] = value
    return merged
