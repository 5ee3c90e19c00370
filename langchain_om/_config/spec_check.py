"""Construction-time checks of the engine's arguments: model specs, timezone, clock, background.

Options the engine does not honour yet are refused here too (see
:mod:`langchain_om._config.unbuilt`).

Everything that can be known before the first model call is checked when the memory is built,
so a typo fails at ``ObservationalMemory(...)`` rather than 30 000 tokens later. Model strings
are checked without building their clients (no SDK object, no network): the provider must be
known and its package installed. A missing API key only warns (it can be set later); the model
call then fails with an error naming the variable.
"""

from __future__ import annotations

import warnings
import zoneinfo
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableBinding

from langchain_om._config.unbuilt import refuse_unbuilt
from langchain_om._engine.providers import DEFAULT_MODEL, check_model_string
from langchain_om.config import ObservationalMemoryConfig, _caller_stacklevel
from langchain_om.errors import MissingProviderError, ModelResolutionError, OMConfigError
from langchain_om.models import ModelByInputTokens, ModelWithRetries

_BACKGROUND = ("auto", "manual")
_MAX_DEPTH = 8


def check_engine_args(
    config: ObservationalMemoryConfig,
    *,
    timezone: object,
    clock: Callable[[], datetime] | None,
    background: object,
) -> None:
    """Check what ``ObservationalMemory(...)`` was given beyond the config.

    Raises:
        OMConfigError: an argument is invalid; the message names it and the fix.
        MissingProviderError: a model's provider package is not installed.
    """
    refuse_unbuilt(config)
    if background not in _BACKGROUND:
        raise OMConfigError(
            f"Invalid argument 'background': {background!r}. Use 'auto' (worker threads or "
            "tasks) or 'manual' (queued until memory.run_background()).",
            option="background",
        )
    _check_timezone(timezone)
    if clock is not None:
        _check_clock(clock)
    if not config.enabled:
        return
    specs = {"observation.model": config.observer_model_spec}
    if config.reflector_model_spec is not config.observer_model_spec:
        specs["reflection.model"] = config.reflector_model_spec
    for option, spec in specs.items():
        name = "model" if config.model is not None else option
        check_spec(spec, name)


def _check_timezone(timezone: object) -> None:
    fix = "Use an IANA zone name such as 'UTC', 'Europe/Lisbon' or 'America/New_York'."
    if not isinstance(timezone, str) or not timezone.strip():
        raise OMConfigError(
            f"Invalid argument 'timezone': {timezone!r} is not a zone name. {fix}",
            option="timezone",
        )
    try:
        zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise OMConfigError(
            f"Invalid argument 'timezone': unknown time zone {timezone!r}. {fix}",
            option="timezone",
        ) from None


def _check_clock(clock: Callable[[], datetime]) -> None:
    if not callable(clock):
        raise OMConfigError(
            f"Invalid argument 'clock': {clock!r} is not callable. Pass a function returning a "
            "timezone-aware datetime, e.g. lambda: datetime.now(UTC).",
            option="clock",
        )
    now = clock()
    if not isinstance(now, datetime):
        raise OMConfigError(
            f"Invalid argument 'clock': it returned {type(now).__name__}, not a datetime. Return "
            "a timezone-aware datetime, e.g. datetime.now(UTC).",
            option="clock",
        )
    if now.tzinfo is None or now.utcoffset() is None:
        raise OMConfigError(
            "Invalid argument 'clock': it returned a naive datetime (no tzinfo), so dates would "
            "shift with the machine's zone. Return an aware one: datetime.now(UTC) or "
            "dt.replace(tzinfo=UTC).",
            option="clock",
        )


def check_spec(spec: Any, option: str = "model", depth: int = 0) -> None:
    """Check a model spec as far as it can be known without calling anything.

    Strings are checked (provider known, package installed; a missing key warns), instances
    pass, every tier of a :class:`ModelByInputTokens` and every item of a list is checked.
    Callables choose their model per call, so only what they return then is checked.

    Raises:
        OMConfigError: the spec is not a model spec, or a string names no usable model.
        MissingProviderError: a provider package is not installed.
    """
    if depth > _MAX_DEPTH:
        raise OMConfigError(
            f"Invalid option {option!r}: the model spec nests too deeply; a callable or tier "
            "should end in a model string or instance.",
            option=option,
        )
    if spec is None or (isinstance(spec, str) and spec.strip() == "default"):
        _check_string(DEFAULT_MODEL, option, default=True)
    elif isinstance(spec, str):
        _check_string(spec, option)
    elif isinstance(spec, BaseChatModel) or (
        isinstance(spec, RunnableBinding) and isinstance(spec.bound, BaseChatModel)
    ):
        return
    elif isinstance(spec, ModelByInputTokens):
        for bound in spec.thresholds():
            check_spec(spec.resolve(bound), option, depth + 1)
    elif isinstance(spec, ModelWithRetries):
        check_spec(spec.model, option, depth + 1)
    elif isinstance(spec, Mapping) and "model" in spec:
        check_spec(spec["model"], option, depth + 1)
    elif isinstance(spec, Sequence) and not isinstance(spec, str):
        if not spec:
            raise OMConfigError(
                f"Invalid option {option!r}: the model list is empty. Give at least one "
                "ModelWithRetries(model, max_retries).",
                option=option,
            )
        for entry in spec:
            check_spec(entry, option, depth + 1)
    elif callable(spec):
        return
    else:
        raise OMConfigError(
            f"Invalid option {option!r}: {spec!r} is not a model spec. Use a model string "
            '("openai/gpt-5-mini"), a chat model instance, a callable, ModelByInputTokens or a '
            "list of ModelWithRetries.",
            option=option,
        )


def _check_string(spec: str, option: str, *, default: bool = False) -> None:
    try:
        warning = check_model_string(spec)
    except MissingProviderError as exc:
        if default:
            raise MissingProviderError(
                f"{exc.message} The default Observer/Reflector model is {DEFAULT_MODEL}; set "
                f"{option}=... to use another provider."
            ) from None
        raise
    except ModelResolutionError as exc:
        raise OMConfigError(f"Invalid option {option!r}: {exc.message}", option=option) from None
    if warning is not None:
        warnings.warn(warning, UserWarning, stacklevel=_caller_stacklevel())
