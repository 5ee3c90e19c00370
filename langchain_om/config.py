"""Validated options of Observational Memory.

``ObservationalMemoryConfig`` holds everything a user can tune; ``ObservationConfig``,
``ReflectionConfig``, ``RetrievalConfig``, ``ModelSettings`` and ``Hooks`` are its parts. All are
frozen pydantic models that accept snake_case names and Mastra's camelCase keys
(``messageTokens``, ``bufferTokens``, ...), so a Mastra config can be pasted as is.

Every problem is reported at construction as :class:`~langchain_om.errors.OMConfigError`, whose
``option`` is the dotted snake_case path of the bad option (``"observation.buffer_tokens"``;
for an unknown key, the key as written) and whose message says how to fix it. The validation
helpers behind this live in :mod:`langchain_om._config_rules`.

Derived values (absolute token thresholds, inherited settings, the effective models) are
read-only properties, so the rest of the package never recomputes them::

    config = ObservationalMemoryConfig.coerce({"observation": {"messageTokens": 20_000}})
    config.observation.buffer_interval_tokens  # 4000
    config.buffering_enabled  # True
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    model_validator,
)
from pydantic.alias_generators import to_camel

from langchain_om._config_rules import (
    Fraction,
    InvalidOption,
    attachments_rule,
    brief,
    canonical_keys,
    check_rule,
    config_errors,
    duration_ms,
    extractors_rule,
    failure_policy_rule,
    nested_model,
    numeric_rule,
    positive_tokens,
    preamble_rule,
    resolve_fraction,
    sub_config,
    to_config_error,
    tokens_or_fraction,
)
from langchain_om._providers import DEFAULT_MODEL
from langchain_om.errors import OMConfigError

__all__ = [
    "DEFAULT_MODEL",
    "Hooks",
    "ModelSettings",
    "ObservationConfig",
    "ObservationalMemoryConfig",
    "ReflectionConfig",
    "RetrievalConfig",
    "parse_duration",
]


# --- values --------------------------------------------------------------------------------


def parse_duration(
    value: object, *, option: str = "activate_after_idle"
) -> int | Literal["auto"] | None:
    """Parse an ``activate_after_idle`` value.

    Args:
        value: milliseconds (an ``int``), a duration string (``"300ms"``, ``"45s"``, ``"5m"``,
            ``"1h"``/``"1hr"``, ``"2h30m"``, ``"1.5h"``, ``"1d"``; case and spaces are ignored;
            a bare number string is milliseconds), ``"auto"``, or ``False``/``None`` for off.
        option: the option name given in the error.

    Returns:
        Milliseconds, ``"auto"``, or ``None`` when off.

    Raises:
        OMConfigError: the value is not a duration (``True``, a negative number, ``"soon"``).
    """
    if value is None:
        return None
    try:
        parsed = duration_ms(value)
    except InvalidOption as invalid:
        invalid.option = option
        raise to_config_error(invalid) from None
    return None if parsed is False else parsed


_ModelSpec = Annotated[
    Any,
    check_rule(
        lambda v: not isinstance(v, str) or bool(v.strip()),
        "a model name, not an empty string",
        f"Name a model such as {DEFAULT_MODEL!r}, or leave it out.",
    ),
]
_Extractors = Annotated[tuple[Any, ...], BeforeValidator(extractors_rule)]
_Idle = Annotated[
    int | Literal["auto", False] | None,
    BeforeValidator(lambda v: v if v is None else duration_ms(v)),
]
_BlockAfter = Annotated[
    int | float,
    numeric_rule(
        "at least 1",
        "Use a multiple of the threshold in [1, 100) or an absolute token count >= 100.",
        lambda x: x >= 1,
    ),
]
_Scope = Annotated[
    Literal["thread", "resource"],
    check_rule(
        lambda v: v in ("thread", "resource"),
        "'thread' or 'resource'",
        "Use 'thread' (one log per conversation) or 'resource' (one log per user).",
    ),
]
_Output = Annotated[
    Literal["text", "structured", "auto"],
    check_rule(
        lambda v: v in ("text", "structured", "auto"),
        "'text', 'structured' or 'auto'",
        "Use 'text' (tagged text, the default), 'structured' (a JSON schema through "
        "with_structured_output) or 'auto' (structured for models on a local server).",
    ),
]
_Prompt = Annotated[
    Literal["default", "compact", "auto"],
    check_rule(
        lambda v: v in ("default", "compact", "auto"),
        "'default', 'compact' or 'auto'",
        "Use 'default', 'compact' (a short prompt for small models) or 'auto' (compact for "
        "models of at most 4B parameters and local servers).",
    ),
]
_Hook = Annotated[
    Any,
    check_rule(
        lambda v: v is None or callable(v), "a callable", "Pass a function or coroutine function."
    ),
]


# --- models --------------------------------------------------------------------------------


class _Options(BaseModel):
    """Shared behaviour: camelCase keys, did-you-mean, ``OMConfigError`` instead of pydantic's."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        use_attribute_docstrings=True,
        populate_by_name=True,
        arbitrary_types_allowed=True,
        alias_generator=to_camel,
        protected_namespaces=(),
    )

    def __init__(self, /, **data: Any) -> None:
        with config_errors(type(self)):
            super().__init__(**data)

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        """Validate ``obj`` as pydantic does, raising ``OMConfigError`` on bad options."""
        with config_errors(cls):
            return super().model_validate(obj, *args, **kwargs)

    @model_validator(mode="before")
    @classmethod
    def _accept_camel_case(cls, data: Any) -> Any:
        return canonical_keys(cls, data) if isinstance(data, Mapping) else data

    def to_mastra(self, *, exclude_unset: bool = True) -> dict[str, Any]:
        """Return the options as a Mastra-style camelCase dict that coerces back to an equal config.

        Unlike ``model_dump``, model objects, extractors and hooks are kept as they are.

        Args:
            exclude_unset: keep only the options set explicitly (the default; this also keeps
                the explicit/default distinction that the resource-scope warning relies on).
        """
        out: dict[str, Any] = {}
        for name, field in type(self).model_fields.items():
            if not exclude_unset or name in self.model_fields_set:
                value = getattr(self, name)
                if isinstance(value, _Options):
                    value = value.to_mastra(exclude_unset=exclude_unset)
                out[field.alias or name] = value
        return out


class ModelSettings(_Options):
    """Sampling settings of the Observer or Reflector model."""

    temperature: float | None = Field(default=None, ge=0)
    """Sampling temperature (0 or more); None leaves the provider default."""
    max_output_tokens: int | None = Field(default=None, gt=0)
    """Largest number of tokens the model may produce; None leaves the provider default."""
    top_p: float | None = Field(default=None, gt=0, le=1)
    """Nucleus sampling probability in (0, 1]; None leaves the provider default."""


def _model_settings(temperature: float) -> BeforeValidator:
    """Validator that fills in the role's default temperature unless the user gave one."""

    def validate(value: Any) -> Any:
        if value is None:
            return ModelSettings(temperature=temperature)
        if isinstance(value, Mapping):
            return value if "temperature" in value else {**value, "temperature": temperature}
        if isinstance(value, ModelSettings):
            return value
        fix = "Pass e.g. {'temperature': 0.3, 'max_output_tokens': 8000}."
        raise InvalidOption(f"must be a dict or ModelSettings, got {brief(value)}", fix)

    return BeforeValidator(validate)


class ObservationConfig(_Options):
    """Options of the Observer, which turns unobserved messages into observations."""

    model: _ModelSpec = None
    """Observer model spec; falls back to reflection.model, then the default model."""
    instruction: str | None = None
    """Text appended to the Observer's system prompt."""
    thread_title: StrictBool = False
    """Let the Observer propose a short thread title and update it when the topic changes."""
    output: _Output = "text"
    """How the Observer answers: 'text' (the tagged log), 'structured' (a JSON schema through
    with_structured_output, rendered to the same log), or 'auto' (structured for a model on a
    local OpenAI-compatible server such as llama.cpp, whose decoding the schema constrains;
    text for every other model)."""
    prompt: _Prompt = "default"
    """The Observer's prompt: 'default', 'compact' (short, with placeholders instead of example
    lines, for small models), or 'auto' (compact when the model name states at most 4B
    parameters, or for a local server of unknown size)."""
    extract: _Extractors = ()
    """Extractors run during observation."""
    manage_working_memory: StrictBool = False
    """Add a working-memory extractor."""
    observe_attachments: Annotated[
        bool | Literal["auto"] | tuple[str, ...], BeforeValidator(attachments_rule)
    ] = True
    """True forwards attachments to the Observer, False drops them (keeping placeholders),
    'auto' forwards them when the Observer model is multimodal; a list is a case-sensitive MIME
    allowlist with 'image/*' and '*' wildcards."""
    message_tokens: Annotated[int | Fraction, tokens_or_fraction(30_000)] = 30_000
    """Unobserved-message tokens that trigger observation, or ``("fraction", 0.4)`` of the
    agent model's context window (its LangChain profile's ``max_input_tokens``)."""
    max_tokens_per_batch: Annotated[int, positive_tokens(10_000)] = 10_000
    """Resource scope: token cap of one batch of threads observed together."""
    model_settings: Annotated[ModelSettings, _model_settings(0.3)] = Field(
        default_factory=lambda: ModelSettings(temperature=0.3)
    )
    """Observer sampling settings (temperature 0.3 unless given)."""
    provider_options: dict[str, Any] | None = None
    """Provider-specific options passed through to the Observer model."""
    buffer_tokens: Annotated[
        int | float | Literal[False],
        numeric_rule(
            "greater than 0 (or False)",
            "Use a fraction of message_tokens (e.g. 0.2), an absolute token count, or False.",
            lambda x: x > 0,
            off=True,
        ),
    ] = 0.2
    """Background buffering interval: below 1 a fraction of message_tokens, 1 or more absolute
    tokens; must resolve below message_tokens; False turns off all async buffering."""
    buffer_on_idle: StrictBool = False
    """Buffer the remaining unobserved messages when an agent turn ends."""
    use_usage_metadata: StrictBool = False
    """Also trigger on the provider-reported usage of the last AI reply when it is larger than
    the estimate: its ``usage_metadata`` total, less the observation log, plus the estimate of
    the messages after it. It includes the agent's system prompt and tool schemas, so it only
    decides whether this step crosses the threshold; how much activates or is observed, the
    status and the buffering intervals keep using the estimate."""
    buffer_activation: Annotated[
        int | float,
        numeric_rule(
            "in (0, 1] or at least 1000",
            "Use a fraction in (0, 1] (0.8 removes ~80%) or an absolute token count >= 1000.",
            lambda x: 0 < x <= 1 or x >= 1000,
        ),
    ] = 0.8
    """On activation: in (0, 1] the fraction of message_tokens to remove, 1000 or more the
    number of tokens to keep."""
    activate_after_idle: _Idle = None
    """Idle time (ms, '5m', 'auto') after which buffered observations activate; None inherits
    the top-level value, False switches it off."""
    activate_on_provider_change: StrictBool | None = None
    """Activate buffered observations when the actor model changes; None inherits."""
    block_after: _BlockAfter = 1.2
    """Synchronous observation threshold: in [1, 100) a multiple of message_tokens, 100 or more
    absolute tokens above message_tokens."""
    previous_observer_tokens: Annotated[
        int | Literal[False],
        numeric_rule(
            "a whole number of tokens, 0 or more (or False)",
            "Use e.g. 2000; 0 shows no previous observations, False shows all.",
            lambda x: x >= 0,
            whole=True,
            off=True,
        ),
    ] = 2_000
    """Token budget of previous observations shown to the Observer; 0 = none, False = all."""
    failure_policy: Annotated[
        Literal["raise", "continue"], BeforeValidator(failure_policy_rule)
    ] = "raise"
    """What a failed synchronous observation does: 'raise' fails the turn, 'continue' goes on
    without observing (Mastra's 'throw', 'warn' and 'bypass' are accepted)."""
    tool_result_max_tokens: Annotated[int, positive_tokens(10_000)] = 10_000
    """Tool results longer than this are truncated before the Observer sees them."""

    @model_validator(mode="after")
    def _check_against_message_tokens(self) -> Self:
        if isinstance(self.message_tokens, tuple):
            return self  # checked once the fraction is resolved against the model
        limit, interval = self.message_tokens, self.buffer_interval_tokens
        if interval is not None and not 0 < interval < limit:
            raise InvalidOption(
                f"resolves to {interval} tokens; it must be at least 1 and below "
                f"message_tokens ({limit})",
                "Use a fraction such as 0.2, fewer tokens, or raise message_tokens.",
                option="buffer_tokens",
            )
        if self.buffer_activation >= max(1000, limit):
            raise InvalidOption(
                f"keeps {self.buffer_activation} tokens, not below message_tokens ({limit})",
                "Use a fraction such as 0.8, or keep fewer tokens than message_tokens.",
                option="buffer_activation",
            )
        if 100 <= self.block_after <= limit:
            raise InvalidOption(
                f"is {self.block_after} tokens, not above message_tokens ({limit})",
                "Use a multiple such as 1.2, or a token count above message_tokens.",
                option="block_after",
            )
        return self

    @property
    def buffer_interval_tokens(self) -> int | None:
        """Absolute buffering interval in tokens; None when ``buffer_tokens`` is False.

        Resource scope turns buffering off too: see ``ObservationalMemoryConfig.buffering_enabled``.
        """
        value = self.buffer_tokens
        if value is False:
            return None
        return round(value * self.message_tokens_abs) if value < 1 else round(value)

    @property
    def message_tokens_abs(self) -> int:
        """``message_tokens`` in tokens; raises when it is a fraction not resolved yet."""
        return _absolute(self.message_tokens, "observation.message_tokens")

    @property
    def retention_floor_tokens(self) -> int:
        """Unobserved tokens kept by an activation: ``message_tokens × (1 − buffer_activation)``."""
        value = self.buffer_activation
        return round(value) if value >= 1000 else round(self.message_tokens_abs * (1 - value))

    @property
    def block_after_tokens(self) -> int:
        """Unobserved tokens at which observation runs synchronously."""
        value = self.block_after
        return round(value) if value >= 100 else round(value * self.message_tokens_abs)


class ReflectionConfig(_Options):
    """Options of the Reflector, which condenses the observation log."""

    model: _ModelSpec = None
    """Reflector model spec; falls back to observation.model, then the default model."""
    instruction: str | None = None
    """Text appended to the Reflector's system prompt."""
    extract: _Extractors = ()
    """Extractors run during reflection."""
    output: _Output = "text"
    """How the Reflector answers: 'text', 'structured' or 'auto', as observation.output."""
    observation_tokens: Annotated[int | Fraction, tokens_or_fraction(40_000)] = 40_000
    """Observation tokens that trigger reflection, or ``("fraction", 0.1)`` of the agent
    model's context window."""
    model_settings: Annotated[ModelSettings, _model_settings(0.0)] = Field(
        default_factory=lambda: ModelSettings(temperature=0.0)
    )
    """Reflector sampling settings (temperature 0 unless given)."""
    provider_options: dict[str, Any] | None = None
    """Provider-specific options passed through to the Reflector model."""
    buffer_activation: Annotated[
        float,
        numeric_rule(
            "in (0, 1]",
            "Use a fraction of observation_tokens in (0, 1], e.g. 0.5.",
            lambda x: 0 < x <= 1,
        ),
    ] = 0.5
    """Start background reflection at this fraction of observation_tokens, in (0, 1]."""
    activate_after_idle: _Idle = None
    """Idle time (ms, '5m', 'auto') after which a buffered reflection activates; never inherited
    from the top level; None or False = off."""
    activate_on_provider_change: StrictBool = False
    """Activate a buffered reflection when the actor model changes; never inherited."""
    block_after: _BlockAfter = 1.2
    """Synchronous reflection threshold: in [1, 100) a multiple of observation_tokens, 100 or
    more absolute tokens above observation_tokens."""

    @model_validator(mode="after")
    def _check_against_observation_tokens(self) -> Self:
        if isinstance(self.observation_tokens, tuple):
            return self  # checked once the fraction is resolved against the model
        if 100 <= self.block_after <= self.observation_tokens:
            raise InvalidOption(
                f"is {self.block_after} tokens, not above observation_tokens "
                f"({self.observation_tokens})",
                "Use a multiple such as 1.2, or a token count above observation_tokens.",
                option="block_after",
            )
        return self

    @property
    def block_after_tokens(self) -> int:
        """Observation tokens at which reflection runs synchronously."""
        value = self.block_after
        return round(value) if value >= 100 else round(value * self.observation_tokens_abs)

    @property
    def observation_tokens_abs(self) -> int:
        """``observation_tokens`` in tokens; raises when it is a fraction not resolved yet."""
        return _absolute(self.observation_tokens, "reflection.observation_tokens")

    @property
    def buffer_start_tokens(self) -> int:
        """Observation tokens at which background reflection starts."""
        return round(self.buffer_activation * self.observation_tokens_abs)


class RetrievalConfig(_Options):
    """Options of retrieval: source pointers on observation groups and the ``recall`` tool."""

    vector: StrictBool = False
    """Add semantic search through a vector-indexed store and an embedder."""
    scope: Annotated[
        Literal["resource", "thread"],
        check_rule(
            lambda v: v in ("resource", "thread"),
            "'resource' or 'thread'",
            "Use 'resource' to search all threads of the user, 'thread' for the current one.",
        ),
    ] = "resource"
    """Search all threads of the resource ('resource') or only the current thread ('thread')."""
    instructions: str | None = None
    """Text appended to the built-in recall guidance."""


class Hooks(_Options):
    """Callbacks (sync or async) around every observation and reflection cycle.

    Each gets a context with ``thread_id``, ``resource_id`` and ``trigger``; end hooks also get
    token usage and ``error`` on failure. A hook that raises is logged, never fatal.
    """

    on_observation_start: _Hook = None
    """Called when an observation cycle starts."""
    on_observation_end: _Hook = None
    """Called when an observation cycle ends (also on failure)."""
    on_reflection_start: _Hook = None
    """Called when a reflection cycle starts."""
    on_reflection_end: _Hook = None
    """Called when a reflection cycle ends (also on failure)."""

    # --- transform hooks (they change what memory sees and writes; a raise fails the cycle) --
    before_observation: _Hook = None
    """``(messages, ctx) -> messages``: filter or redact the batch before the Observer sees
    it; an empty result marks the batch observed without a model call."""
    after_observation: _Hook = None
    """``(observations, ctx) -> str | None | False``: edit the new observation text (None
    keeps it, False vetoes it: nothing is added, the batch still counts as observed)."""
    before_reflection: _Hook = None
    """``(observations, ctx) -> str | None``: the log text given to the Reflector."""
    after_reflection: _Hook = None
    """``(observations, ctx) -> str | None | False``: edit the reflected text (None keeps it,
    False vetoes it: the log stays as it was)."""
    archive_transformed: StrictBool = False
    """Archive the messages as ``before_observation`` returned them (redacted), not the
    originals; messages it dropped are archived as a placeholder. Needs before_observation."""

    @model_validator(mode="after")
    def _check_archive_transformed(self) -> Self:
        if self.archive_transformed and self.before_observation is None:
            raise InvalidOption(
                "needs hooks.before_observation",
                "Set hooks.before_observation to the redactor, or drop archive_transformed.",
                option="archive_transformed",
            )
        return self


_MAX_OBSERVER_COMPRESSION = 20
"""Messages shrink at most about this much into observations (typically 3-10x)."""


def _caller_stacklevel() -> int:
    """``stacklevel`` of the first frame outside langchain_om and pydantic, for warnings."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and str(frame.f_globals.get("__name__")).startswith(
        ("langchain_om", "pydantic")
    ):
        frame, level = frame.f_back, level + 1
    return level


class ObservationalMemoryConfig(_Options):
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
    model: _ModelSpec = None
    """Model of both the Observer and the Reflector; None or 'default' means DEFAULT_MODEL.
    Cannot be combined with observation.model or reflection.model."""
    scope: _Scope = "thread"
    """'thread' keeps one observation log per thread; 'resource' shares one across all threads
    of a resource (experimental; turns async buffering off)."""
    activate_after_idle: _Idle = None
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
    False (stored as None) keep it off."""
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
    preamble: Annotated[str | None, BeforeValidator(preamble_rule)] = None
    """A template replacing the built-in guidance of the memory context, with the placeholders
    {observations}, {hints}, {current_date} and {default_preamble}; None = the built-in."""

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
        if (
            isinstance(observe_at, int)
            and isinstance(reflect_at, int)
            and reflect_at * _MAX_OBSERVER_COMPRESSION < observe_at
        ):
            raise InvalidOption(
                f"is {reflect_at} tokens, far below what one observation of "
                f"observation.message_tokens ({observe_at}) adds to the log (the Observer "
                f"compresses at most about {_MAX_OBSERVER_COMPRESSION}x), so every observation "
                "would trigger a reflection that cannot reach its target",
                f"Raise reflection.observation_tokens to at least "
                f"{-(-observe_at // _MAX_OBSERVER_COMPRESSION)}, or lower "
                "observation.message_tokens.",
                option="reflection.observation_tokens",
            )
        thread = self.scope == "thread"
        if thread and self.share_token_budget and self.observation.buffer_tokens is not False:
            raise InvalidOption(
                "needs async buffering off",
                "Set observation.buffer_tokens=False, or share_token_budget=False.",
                option="share_token_budget",
            )
        ignored = [] if thread else self._explicit_buffering_options()
        if ignored:
            warnings.warn(
                f"Async buffering is disabled in resource scope; ignoring {', '.join(ignored)}. "
                "Remove them or use scope='thread'.",
                UserWarning,
                stacklevel=_caller_stacklevel(),
            )
        return self

    def _explicit_buffering_options(self) -> list[str]:
        observation, explicit = self.observation, self.observation.model_fields_set
        if "buffer_tokens" in explicit and observation.buffer_tokens is False:
            return []  # the user turned buffering off already
        names = ["buffer_tokens", "buffer_activation", "block_after"]
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
        """Whether async buffering runs: enabled, not read-only, thread scope, buffer_tokens set."""
        buffer_tokens = self.observation.buffer_tokens
        active = self.enabled and not self.read_only
        return active and self.scope == "thread" and buffer_tokens is not False

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


def _absolute(value: int | Fraction, option: str) -> int:
    if isinstance(value, tuple):
        raise OMConfigError(
            f"Option {option!r} is {value!r} of the agent model's context window, which is not "
            "known here. Pass actor_model=<the agent's chat model> (to ObservationalMemory, the "
            "graph nodes or the history adapter), or use an absolute token count.",
            option=option,
        )
    return value


def _explicit(value: Any) -> Any:
    """The explicitly set options of a config as a dict (all of them for ``ModelSettings``)."""
    if isinstance(value, _Options):
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
