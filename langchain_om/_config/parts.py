"""The parts of the validated options: their shared base, value rules and option groups.

:class:`OptionGroup` gives every options model its behaviour (frozen, camelCase keys,
did-you-mean, ``OMConfigError`` instead of pydantic's, ``to_mastra``); the groups
``ObservationConfig``, ``ReflectionConfig``, ``RetrievalConfig``, ``ModelSettings``,
``SpendConfig``, ``CadenceConfig`` and ``Hooks`` are the sections of
:class:`~langchain_om.config.ObservationalMemoryConfig`, which lives in
:mod:`langchain_om.config` with the rules that span sections. Users import all of them from
:mod:`langchain_om.config`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Self, cast

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, model_validator
from pydantic.alias_generators import to_camel

from langchain_om._config.rules import (
    Fraction,
    InvalidOption,
    attachments_rule,
    auto_tokens_rule,
    brief,
    canonical_keys,
    check_rule,
    config_errors,
    duration_ms,
    extractors_rule,
    failure_policy_rule,
    numeric_rule,
    one_of,
    positive_tokens,
    to_config_error,
    tokens_or_fraction,
)
from langchain_om._core.observer_prompts import HintSwitch
from langchain_om._engine.providers import DEFAULT_MODEL
from langchain_om.errors import OMConfigError

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


ModelSpec = Annotated[
    Any,
    check_rule(
        lambda v: not isinstance(v, str) or bool(v.strip()),
        "a model name, not an empty string",
        f"Name a model such as {DEFAULT_MODEL!r}, or leave it out.",
    ),
]
_Extractors = Annotated[tuple[Any, ...], BeforeValidator(extractors_rule)]
IdleAfter = Annotated[
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
_ScopeChoice = Literal["thread", "resource"]
MemoryScope = Annotated[
    _ScopeChoice,
    one_of(
        _ScopeChoice, "Use 'thread' (one log per conversation) or 'resource' (one log per user)."
    ),
]
_OutputChoice = Literal["text", "structured", "auto"]
_Output = Annotated[
    _OutputChoice,
    one_of(
        _OutputChoice,
        "Use 'text' (tagged text, the default), 'structured' (a JSON schema through "
        "with_structured_output) or 'auto' (text: measured best, small local models included).",
    ),
]
_PromptChoice = Literal["default", "compact", "auto"]
_Prompt = Annotated[
    _PromptChoice,
    one_of(
        _PromptChoice,
        "Use 'default', 'compact' (a short prompt for small models) or 'auto' (compact for "
        "models of at most 4B parameters and local servers).",
    ),
]
_RecallScopeChoice = Literal["resource", "thread"]
_RecallScope = Annotated[
    _RecallScopeChoice,
    one_of(
        _RecallScopeChoice,
        "Use 'resource' to search all threads of the user, 'thread' for the current one.",
    ),
]
_InstructionModeChoice = Literal["append", "replace"]
_InstructionMode = Annotated[
    _InstructionModeChoice,
    one_of(
        _InstructionModeChoice,
        "Use 'append' (the instruction follows the built-in guidance) or 'replace' (it takes "
        "the built-in guidance's place; the output format stays).",
    ),
]
_Hook = Annotated[
    Any,
    check_rule(
        lambda v: v is None or callable(v), "a callable", "Pass a function or coroutine function."
    ),
]


def _is_penalty(value: Any) -> bool:
    if value is None or value == "auto":
        return True
    return isinstance(value, int | float) and not isinstance(value, bool) and -2 <= value <= 2


_Penalty = Annotated[
    float | Literal["auto"] | None,
    check_rule(
        _is_penalty,
        "a number from -2 to 2, 'auto' or None",
        "Use 'auto' (1.0 for small models), e.g. 0.5, or None to send no penalty.",
    ),
]


# --- models --------------------------------------------------------------------------------


class OptionGroup(BaseModel):
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
                if isinstance(value, OptionGroup):
                    value = value.to_mastra(exclude_unset=exclude_unset)
                out[field.alias or name] = value
        return out


class ModelSettings(OptionGroup):
    """Sampling settings of the Observer or Reflector model."""

    temperature: float | None = Field(default=None, ge=0)
    """Sampling temperature (0 or more); None leaves the provider default."""
    max_output_tokens: int | None = Field(default=None, gt=0)
    """Largest number of tokens the model may produce; None leaves the provider default."""
    top_p: float | None = Field(default=None, gt=0, le=1)
    """Nucleus sampling probability in (0, 1]; None leaves the provider default."""
    frequency_penalty: _Penalty = "auto"
    """Penalty on tokens by how often the reply already holds them (-2 to 2, OpenAI-style).

    ``"auto"`` (the default) gives small models (a name stating at most 4B parameters, or a
    model on a local server) ``1.0``, which keeps a 1.5B model from repeating one line until
    its budget runs out, and leaves other models their provider default; a number is sent to
    every model of the role; ``None`` sends nothing. ``"auto"`` skips models whose class has
    no ``frequency_penalty`` setting; a number makes such a model's call fail naming this
    option."""


class ContinuationHints(OptionGroup):
    """Which continuation hints a role writes and the agent is shown.

    ``True`` (both on, the default) and ``False`` (both off) are accepted wherever this is.
    """

    current_task: StrictBool = True
    """``<current-task>``: what the assistant is working on."""
    suggested_response: StrictBool = True
    """``<suggested-response>``: how the assistant should continue."""

    @property
    def switch(self) -> HintSwitch:
        """The same choice as the core's :class:`HintSwitch`."""
        return HintSwitch(self.current_task, self.suggested_response)


def _hints_rule(value: Any) -> Any:
    """``True``/``False`` for both hints, else a dict or :class:`ContinuationHints`."""
    if isinstance(value, bool):
        return {"current_task": value, "suggested_response": value}
    if value is None or isinstance(value, Mapping | ContinuationHints):
        return value
    raise InvalidOption(
        f"must be True, False or a dict of hints, got {brief(value)}",
        "Use False to turn both hints off, or e.g. {'suggested_response': False}.",
    )


_Hints = Annotated[ContinuationHints, BeforeValidator(_hints_rule)]


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


class ArchiveConfig(OptionGroup):
    """Archive mode: retire the oldest whole observation groups instead of reflecting.

    When the log reaches ``after_tokens``, its oldest groups move to an archive in the store
    (nothing is rewritten, no model is called), the newest ``keep_tokens`` of groups stay
    live, and the agent sees a catalog of what was retired, at most ``max_catalog_tokens``
    long; ``recall(mode="observations")`` reads retired groups back word for word.
    """

    after_tokens: Annotated[int, positive_tokens(40_000)] = 40_000
    """Observation tokens at which the oldest groups are retired."""
    keep_tokens: Annotated[int, positive_tokens(8_000)] = 8_000
    """Observation tokens of the newest groups that stay live (below after_tokens)."""
    max_catalog_tokens: Annotated[int, positive_tokens(2_000)] = 2_000
    """Most tokens of the catalog of retired groups shown to the agent."""

    @model_validator(mode="after")
    def _check_keep_below_after(self) -> Self:
        if self.keep_tokens >= self.after_tokens:
            raise InvalidOption(
                f"is {self.keep_tokens} tokens, not below after_tokens ({self.after_tokens})",
                "Keep fewer tokens live than the size that triggers archiving, e.g. "
                "after_tokens=40000 with keep_tokens=8000.",
                option="keep_tokens",
            )
        return self


def _archive_option(value: Any) -> Any:
    """``observation.archive``: ``True`` is the defaults, ``False``/``None`` is off."""
    if value is True:
        return ArchiveConfig()
    if value is False or value is None:
        return None
    if isinstance(value, (Mapping, ArchiveConfig)):
        return value
    raise InvalidOption(
        f"must be True, False or a dict of after_tokens/keep_tokens/max_catalog_tokens, got "
        f"{brief(value)}",
        "Pass archive=True for the defaults (40000 / 8000 / 2000), or e.g. "
        "{'after_tokens': 40000, 'keep_tokens': 8000, 'max_catalog_tokens': 2000}.",
    )


class CodeModeConfig(OptionGroup):
    """Recall code mode: the agent reads memory by running a short program over ``recall``.

    The program is a small, side-effect-free subset of Python run by memory's own interpreter
    (no imports, no attributes beyond plain string, list and dict methods, no file, network or
    process access); it calls ``recall(...)`` with the tool's arguments and returns a value.
    """

    timeout: float = Field(default=10.0, gt=0, le=300)
    """Seconds a program may run (its recall reads included)."""
    max_calls: int = Field(default=20, gt=0, le=200)
    """Most recall calls one program makes."""
    max_steps: int = Field(default=100_000, ge=1_000, le=10_000_000)
    """Most evaluation steps of one program (loops count every pass)."""


def _code_mode_option(value: Any) -> Any:
    """``retrieval.code_mode``: ``True`` is the defaults, ``False``/``None`` is off."""
    if value is True:
        return CodeModeConfig()
    if value is False or value is None:
        return None
    if isinstance(value, (Mapping, CodeModeConfig)):
        return value
    raise InvalidOption(
        f"must be True, False or a dict of timeout/max_calls/max_steps, got {brief(value)}",
        "Pass code_mode=True for the defaults, or e.g. {'timeout': 10, 'max_calls': 20}.",
    )


class ObservationConfig(OptionGroup):
    """Options of the Observer, which turns unobserved messages into observations."""

    model: ModelSpec = None
    """Observer model spec; falls back to reflection.model, then the default model."""
    instruction: str | None = None
    """Text appended to the Observer's system prompt (see instruction_mode)."""
    instruction_mode: _InstructionMode = "append"
    """How ``instruction`` is used: 'append' adds it after the built-in guidance on what to
    record; 'replace' puts it in that guidance's place (the layout, priority marks and output
    format stay, and the Reflector is told the guidance in effect). 'replace' needs an
    instruction and the default prompt."""
    continuation_hints: _Hints = Field(default_factory=ContinuationHints)
    """Whether the Observer writes ``<current-task>`` and ``<suggested-response>`` and the
    agent is shown them: True (both), False (neither) or e.g. ``{"suggested_response":
    False}``. A hint that is off is asked for nowhere, never stored and never shown."""
    observe_on_context_overflow: StrictBool = True
    """When the agent's model call fails for exceeding its context window, observe what is
    pending at once and retry the call once with the smaller window (agent middleware and
    graph model node); False lets the error reach the caller."""
    thread_title: StrictBool = False
    """Let the Observer propose a short thread title and update it when the topic changes."""
    output: _Output = "text"
    """How the Observer answers: 'text' (the tagged log), 'structured' (a JSON schema through
    with_structured_output, rendered to the same log), or 'auto' (text: on a local 1.5B model
    text with the compact prompt compresses best; structured output copies the messages)."""
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
    'auto' forwards them when the Observer model's profile says it reads images (with no
    profile: unless it is a small model, at most 4B parameters by name or a local server); a
    list is a case-sensitive MIME allowlist with 'image/*' and '*' wildcards."""
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
    output_budget: Annotated[int | Literal["auto", False], auto_tokens_rule(2000, 64)] = "auto"
    """Output-token budget of each Observer call: 'auto' derives it from the batch (0.3 of
    its tokens, at least 512, plus room for the hint sections), a number fixes it, False
    leaves only model_settings.max_output_tokens. The reply is streamed and stopped at the
    budget, or as soon as it starts to loop."""
    part_tokens: Annotated[int | Literal["auto", False], auto_tokens_rule(1500, 200)] = "auto"
    """Largest batch one Observer call reads; a larger batch is observed in parts of about
    this size, merged in order. 'auto' uses parts of 1,500 tokens for small models (names
    stating at most 4B parameters, or a local server) and no parts otherwise; False never
    splits."""
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
    activate_after_idle: IdleAfter = None
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
    ] = "continue"
    """What a failed synchronous observation does: 'continue' (the default) goes on without
    observing (the messages stay in the window; an event and a WARNING say why), 'raise'
    fails the turn with CycleFailedError (Mastra's 'throw', 'warn' and 'bypass' are
    accepted)."""
    tool_result_max_tokens: Annotated[int, positive_tokens(10_000)] = 10_000
    """Tool results longer than this are truncated before the Observer sees them."""
    archive: Annotated[ArchiveConfig | None, BeforeValidator(_archive_option)] = None
    """Archive mode (off by default): ``True`` or ``{after_tokens, keep_tokens,
    max_catalog_tokens}`` (40000 / 8000 / 2000) retires the oldest groups into a catalogued
    archive instead of reflecting; it replaces reflection, so no reflection option may be set
    with it."""

    @model_validator(mode="after")
    def _check_instruction_mode(self) -> Self:
        if self.instruction_mode != "replace":
            return self
        if not (self.instruction or "").strip():
            raise InvalidOption(
                "is 'replace' without an instruction, which would leave the Observer with no "
                "guidance on what to record",
                "Set observation.instruction to your guidance, or use instruction_mode='append'.",
                option="instruction_mode",
            )
        if self.prompt != "default":
            raise InvalidOption(
                f"'replace' cannot be combined with prompt={self.prompt!r}: the compact prompt "
                "keeps its own short rules and would not take the instruction's place",
                "Set observation.prompt='default', or use instruction_mode='append'.",
                option="instruction_mode",
            )
        return self

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

        Resource scope buffers only when it is given: see
        ``ObservationalMemoryConfig.buffering_enabled``.
        """
        value = self.buffer_tokens
        if value is False:
            return None
        return round(value * self.message_tokens_abs) if value < 1 else round(value)

    @property
    def message_tokens_abs(self) -> int:
        """``message_tokens`` in tokens; raises when it is a fraction not resolved yet."""
        return absolute_tokens(self.message_tokens, "observation.message_tokens")

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


class ReflectionConfig(OptionGroup):
    """Options of the Reflector, which condenses the observation log."""

    model: ModelSpec = None
    """Reflector model spec; falls back to observation.model, then the default model."""
    instruction: str | None = None
    """Text appended to the Reflector's system prompt (see instruction_mode)."""
    instruction_mode: _InstructionMode = "append"
    """How ``instruction`` is used: 'append' adds it after the built-in consolidation rules;
    'replace' puts it in their place (the output format stays). 'replace' needs an
    instruction."""
    continuation_hints: Annotated[ContinuationHints | None, BeforeValidator(_hints_rule)] = None
    """Whether the Reflector writes the continuation hints (as observation.continuation_hints);
    None follows observation.continuation_hints."""
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
    output_budget: Annotated[int | Literal["auto", False], auto_tokens_rule(8000, 64)] = "auto"
    """Output-token budget of each Reflector call: 'auto' derives it from the size the
    reflection is asked to reach (at least 512, at most the log), a number
    fixes it, False leaves only model_settings.max_output_tokens. The reply is streamed and
    stopped at the budget, or as soon as it starts to loop."""
    buffer_activation: Annotated[
        float,
        numeric_rule(
            "in (0, 1]",
            "Use a fraction of observation_tokens in (0, 1], e.g. 0.5.",
            lambda x: 0 < x <= 1,
        ),
    ] = 0.5
    """Start background reflection at this fraction of observation_tokens, in (0, 1]."""
    activate_after_idle: IdleAfter = None
    """Idle time (ms, '5m', 'auto') after which a buffered reflection activates; never inherited
    from the top level; None or False = off."""
    activate_on_provider_change: StrictBool = False
    """Activate a buffered reflection when the actor model changes; never inherited."""
    block_after: _BlockAfter = 1.2
    """Synchronous reflection threshold: in [1, 100) a multiple of observation_tokens, 100 or
    more absolute tokens above observation_tokens."""

    @model_validator(mode="after")
    def _check_instruction_mode(self) -> Self:
        if self.instruction_mode == "replace" and not (self.instruction or "").strip():
            raise InvalidOption(
                "is 'replace' without an instruction, which would leave the Reflector with no "
                "guidance on how to consolidate",
                "Set reflection.instruction to your guidance, or use instruction_mode='append'.",
                option="instruction_mode",
            )
        return self

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
        return absolute_tokens(self.observation_tokens, "reflection.observation_tokens")

    @property
    def buffer_start_tokens(self) -> int:
        """Observation tokens at which background reflection starts."""
        return round(self.buffer_activation * self.observation_tokens_abs)


class RetrievalConfig(OptionGroup):
    """Options of retrieval: source pointers on observation groups and the ``recall`` tool."""

    vector: StrictBool = False
    """Add semantic search through a vector-indexed store and an embedder."""
    scope: _RecallScope = "resource"
    """Search all threads of the resource ('resource') or only the current thread ('thread')."""
    instructions: str | None = None
    """Text appended to the built-in recall guidance."""
    min_score: float = Field(default=0.25, ge=0, le=1)
    """Relevance floor of ``mode="search"``: hits with a lower similarity score are dropped
    (a query that matches nothing says so instead of returning the nearest noise)."""
    code_mode: Annotated[CodeModeConfig | None, BeforeValidator(_code_mode_option)] = None
    """Recall code mode (off by default): ``True`` or ``{timeout, max_calls, max_steps}``
    gives the agent ``execute_memory_recall`` in place of ``recall``: one short program that
    calls ``recall(...)`` as often as it needs and returns only what it computed."""


def _optional_count(what: str, example: int) -> BeforeValidator:
    """Validator of a limit: ``None`` (no limit) or a whole number of at least 1."""
    rule = numeric_rule(
        f"a whole number of {what}, at least 1 (or None for no limit)",
        f"Use e.g. {example}, or leave it out for no limit.",
        lambda x: x >= 1,
        whole=True,
    )
    whole = cast("Callable[[Any], Any]", rule.func)

    def validate(value: Any) -> Any:
        return None if value is None else whole(value)

    return BeforeValidator(validate)


def _spend_per_rule(value: Any) -> Any:
    """``spend.per``: ``None`` (follow ``scope``), ``'thread'`` or ``'resource'``."""
    if value is None or value in ("thread", "resource"):
        return value
    raise InvalidOption(
        f"must be 'thread' or 'resource', got {brief(value)}",
        "Use 'thread' (one budget per conversation) or 'resource' (one per user, across their "
        "threads), or leave it out to follow scope.",
    )


_SpendPer = Annotated[Literal["thread", "resource"] | None, BeforeValidator(_spend_per_rule)]


class SpendConfig(OptionGroup):
    """A budget of memory's own model calls (Observer, Reflector, extractors, buffering).

    Each limit counts over a rolling window (the last hour or the last 24 hours, by the
    engine's clock) and is kept in the store beside the thread or resource, so it holds across
    restarts and across processes that share the storage. Tokens are the provider-reported
    input plus output of each call (the estimate when a provider reports none); a cycle is one
    observation, reflection or background buffer that made at least one model call. While a
    limit is used up, no cycle starts: messages stay in the window unobserved (nothing is
    removed), a ``data-om-spend-limit`` event says why, one WARNING is logged per episode, and
    cycles resume once the window has rolled past enough spend. A cycle that starts under the
    limit finishes, so the last one may go over a token limit by its own cost.
    """

    tokens_per_hour: Annotated[int | None, _optional_count("tokens", 200_000)] = None
    """Most tokens memory's calls may use in any rolling hour; None = no limit."""
    tokens_per_day: Annotated[int | None, _optional_count("tokens", 2_000_000)] = None
    """Most tokens memory's calls may use in any rolling 24 hours; None = no limit."""
    cycles_per_hour: Annotated[int | None, _optional_count("cycles", 20)] = None
    """Most cycles (observations, reflections, buffers) in any rolling hour; None = no limit."""
    cycles_per_day: Annotated[int | None, _optional_count("cycles", 200)] = None
    """Most cycles in any rolling 24 hours; None = no limit."""
    per: _SpendPer = None
    """Whom a budget belongs to: 'thread' (each conversation its own) or 'resource' (one per
    user, shared by their threads; every step then needs a resource id); None follows
    ``scope``."""

    @model_validator(mode="after")
    def _check_hour_below_day(self) -> Self:
        for kind in ("tokens", "cycles"):
            hour, day = getattr(self, f"{kind}_per_hour"), getattr(self, f"{kind}_per_day")
            if hour is not None and day is not None and hour > day:
                raise InvalidOption(
                    f"is {hour}, above {kind}_per_day ({day}), so it could never apply",
                    f"Lower {kind}_per_hour below {kind}_per_day, or drop one of them.",
                    option=f"{kind}_per_hour",
                )
        return self

    @property
    def limits(self) -> dict[str, int]:
        """The limits that are set, by name."""
        names = ("tokens_per_hour", "tokens_per_day", "cycles_per_hour", "cycles_per_day")
        return {n: v for n in names if (v := getattr(self, n)) is not None}

    @property
    def active(self) -> bool:
        """Whether any limit is set."""
        return bool(self.limits)


class CadenceConfig(OptionGroup):
    """How often turns may start an observation (explicit ``observe()`` always may).

    A turn is one new user message. Reflection is not limited (it follows the log, which only
    grows when something is observed); activating buffered observations needs no model call
    and is not limited either. After a context overflow of the agent's call memory observes
    whatever the cadence says (as ``observation.observe_on_context_overflow`` asks).
    """

    every_n_turns: Annotated[
        int,
        numeric_rule(
            "a whole number of turns, at least 1",
            "Use e.g. 3 to observe at most every third turn; 1 observes whenever due.",
            lambda x: x >= 1,
            whole=True,
        ),
    ] = 1
    """Observe (synchronously or in the background) only on every N-th turn of a thread; on
    the other turns the messages wait in the window, even above the thresholds."""
    session_end: StrictBool = False
    """Never observe during turns: the application calls ``memory.observe(thread_id=...)``
    when a session ends (with ``observation.buffer_on_idle``, ``end_turn`` buffers too)."""

    @model_validator(mode="after")
    def _check_one_cadence(self) -> Self:
        if self.session_end and self.every_n_turns != 1:
            raise InvalidOption(
                "cannot be combined with every_n_turns: turns never observe with session_end",
                "Keep session_end=True alone, or drop it and set every_n_turns.",
                option="session_end",
            )
        return self

    @property
    def active(self) -> bool:
        """Whether turns are limited at all."""
        return self.session_end or self.every_n_turns > 1

    def due(self, turns: int) -> bool:
        """Whether turn number ``turns`` of a thread may start an observation."""
        return not self.session_end and turns % self.every_n_turns == 0


class Hooks(OptionGroup):
    """Callbacks (sync or async) around every observation and reflection cycle.

    The ``on_*`` telemetry hooks get a context with ``thread_id``, ``resource_id`` and
    ``trigger``; end hooks also get token usage and ``error`` on failure. A telemetry hook that
    raises is logged, never fatal. The transform hooks (``before_*`` / ``after_*``) change what
    memory sees and keeps; one that raises fails its cycle cleanly (``HookError``).
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


def absolute_tokens(value: int | Fraction, option: str) -> int:
    """``value`` in tokens; a fraction of the context window not resolved yet raises."""
    if isinstance(value, tuple):
        raise OMConfigError(
            f"Option {option!r} is {value!r} of the agent model's context window, which is not "
            "known here. Pass actor_model=<the agent's chat model> (to ObservationalMemory, the "
            "graph nodes or the history adapter), or use an absolute token count.",
            option=option,
        )
    return value
