"""Validation rules behind :mod:`langchain_om.config`.

The private helpers the config models are built from: the ``InvalidOption`` problem a validator
raises and its conversion (with pydantic's ``ValidationError``) into one
:class:`~langchain_om.errors.OMConfigError` naming the option's dotted path; camelCase keys,
unknown keys and "did you mean" suggestions; and the value validators (numbers, durations,
attachment MIME patterns, failure policies, sub-configs).
"""

from __future__ import annotations

import difflib
import functools
import math
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal, cast, get_args

from pydantic import BaseModel, BeforeValidator, ValidationError

from langchain_om._core.preamble import PREAMBLE_PLACEHOLDERS, preamble_problems
from langchain_om.errors import OMConfigError

_DURATION_FIX = (
    "Use milliseconds (300000), a duration such as '300ms', '45s', '5m', '1h', '1hr', '2h30m' or "
    "'1d', 'auto' for the actor provider's prompt-cache TTL, or False for off."
)
_UNIT_MS = {
    **dict.fromkeys(("ms", "msec", "msecs", "millisecond", "milliseconds"), 1),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1_000),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60_000),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3_600_000),
    **dict.fromkeys(("d", "day", "days"), 86_400_000),
}
_NUMBER = r"(?:\d+(?:\.\d+)?|\.\d+)"
_DURATION = re.compile(rf"(?:\s*{_NUMBER}\s*[a-z]+)+\s*")
_DURATION_PART = re.compile(rf"({_NUMBER})\s*([a-z]+)")
_MIME_TOKEN = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*"
_MIME_PATTERN = re.compile(rf"\*|\*/\*|{_MIME_TOKEN}/(?:\*|{_MIME_TOKEN})")
_FAILURE_POLICIES = {"raise": "raise", "throw": "raise"} | dict.fromkeys(
    ("continue", "warn", "bypass"), "continue"
)
_NOT_CONFIG = ("storage", "store", "checkpointer", "on_debug_event")


# --- errors -------------------------------------------------------------------------------


class InvalidOption(ValueError):
    """A problem found by a validator; becomes ``OMConfigError`` once its full path is known."""

    def __init__(self, problem: str, fix: str, *, option: str = "") -> None:
        super().__init__(problem)
        self.problem, self.fix, self.option = problem, fix, option


def brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def to_config_error(invalid: InvalidOption, prefix: str = "") -> OMConfigError:
    path = ".".join(part for part in (prefix, invalid.option) if part)
    return OMConfigError(f"Invalid option {path!r}: {invalid.problem}. {invalid.fix}", option=path)


def nested_model(model: type[BaseModel] | None, name: str) -> type[BaseModel] | None:
    """The config class of field ``name`` of ``model``, if it holds one."""
    field = model.model_fields.get(name) if model is not None else None
    annotation = field.annotation if field is not None else None
    for candidate in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _config_error(exc: ValidationError, model: type[BaseModel]) -> OMConfigError:
    """Turn pydantic's ``ValidationError`` into one ``OMConfigError`` naming each option."""
    found: list[OMConfigError] = []
    for err in exc.errors(include_url=False):
        loc = [part for part in err["loc"] if isinstance(part, str) and part.isidentifier()]
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, InvalidOption):
            found.append(to_config_error(cause, ".".join(loc)))
            continue
        owner: type[BaseModel] | None = model
        for part in loc[:-1]:
            owner = nested_model(owner, part)
        field = owner.model_fields.get(loc[-1]) if owner is not None and loc else None
        hint = f"Expected: {field.description}" if field and field.description else ""
        path = ".".join(loc)
        text = f"Invalid option {path!r}: {err['msg']} (got {brief(err.get('input'))}). {hint}"
        found.append(OMConfigError(text.rstrip(), option=path or None))
    if len(found) == 1:
        return found[0]
    others = "".join(f"\n  - {error.message}" for error in found[1:])
    return OMConfigError(f"{found[0].message}\nOther problems:{others}", option=found[0].option)


_DEPTH: ContextVar[int] = ContextVar("langchain_om_config_depth", default=0)


@contextmanager
def config_errors(model: type[BaseModel]) -> Iterator[None]:
    """Convert pydantic's error into ``OMConfigError`` once, at the outermost config.

    Pydantic calls the ``__init__`` of nested configs too; they let the error pass so that the
    outermost one reports it with the full path.
    """
    token = _DEPTH.set(_DEPTH.get() + 1)
    try:
        yield
    except ValidationError as exc:
        if _DEPTH.get() > 1:
            raise
        raise _config_error(exc, model) from None
    finally:
        _DEPTH.reset(token)


# --- keys: camelCase, unknown keys ----------------------------------------------------------


@functools.cache
def _spellings(model: type[BaseModel]) -> dict[str, str]:
    """Map every accepted spelling (snake name and camelCase alias) to the field name."""
    names = {name: name for name in model.model_fields}
    names.update({f.alias: name for name, f in model.model_fields.items() if f.alias})
    return names


def _unknown_key(model: type[BaseModel], key: object) -> InvalidOption:
    text, fields = str(key), model.model_fields
    if text in _NOT_CONFIG or text == "onDebugEvent":
        fix = "Pass it to ObservationalMemory(...); it is not part of the config."
        return InvalidOption("is not a configuration option", fix, option=text)
    squashed = {name.replace("_", ""): name for name in fields}
    match = difflib.get_close_matches(text.replace("_", "").lower(), list(squashed), n=1)
    if not match:
        return InvalidOption("unknown option", f"Valid options: {', '.join(fields)}.", option=text)
    name = squashed[match[0]]
    spelling = (fields[name].alias or name) if any(c.isupper() for c in text) else name
    return InvalidOption("unknown option", f"Did you mean {spelling!r}?", option=text)


def canonical_keys(model: type[BaseModel], data: Mapping[Any, Any]) -> dict[str, Any]:
    """Rename camelCase keys to field names; reject unknown and doubly given keys."""
    spellings, out = _spellings(model), {}
    for key, value in data.items():
        name = spellings.get(key) if isinstance(key, str) else None
        if name is None:
            raise _unknown_key(model, key)
        if name in out:
            given = f"as {name!r} and {model.model_fields[name].alias!r}"
            raise InvalidOption(f"is given twice ({given})", "Keep one spelling.", option=name)
        out[name] = value
    return out


# --- values --------------------------------------------------------------------------------


def numeric_rule(
    expected: str,
    fix: str,
    valid: Callable[[float], bool],
    *,
    whole: bool = False,
    off: bool = False,
) -> BeforeValidator:
    """Validator of a finite number (never a bool) for which ``valid`` holds.

    ``whole`` requires an integer; ``off`` also accepts ``False``. Integral floats of 1 or more
    become ints.
    """

    def validate(value: Any) -> Any:
        if off and value is False:
            return False
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not (number and math.isfinite(value) and valid(value)) or (
            whole and not float(value).is_integer()
        ):
            raise InvalidOption(f"must be {expected}, got {brief(value)}", fix)
        return int(value) if float(value).is_integer() and (whole or value >= 1) else value

    return BeforeValidator(validate)


def duration_ms(value: object) -> int | Literal["auto", False]:
    """Parse a duration into milliseconds; keep ``"auto"`` and ``False`` (off)."""
    if value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        if math.isfinite(value) and value >= 0:
            return round(value)
        raise InvalidOption(f"must be 0 or more milliseconds, got {value!r}", _DURATION_FIX)
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "auto":
            return "auto"
        if text.isdigit():
            return int(text)
        parts = _DURATION_PART.findall(text) if _DURATION.fullmatch(text) else []
        if parts and all(unit in _UNIT_MS for _, unit in parts):
            return round(sum(float(amount) * _UNIT_MS[unit] for amount, unit in parts))
    raise InvalidOption(f"{brief(value)} is not a duration", _DURATION_FIX)


def check_rule(test: Callable[[Any], bool], expected: str, fix: str) -> BeforeValidator:
    """Validator that passes values for which ``test`` holds and rejects the rest."""

    def validate(value: Any) -> Any:
        if not test(value):
            raise InvalidOption(f"must be {expected}, got {brief(value)}", fix)
        return value

    return BeforeValidator(validate)


def one_of(choices: Any, fix: str) -> BeforeValidator:
    """Validator of a ``Literal`` option: its values pass, any other is rejected, naming them."""
    values = get_args(choices)
    quoted = [repr(v) for v in values]
    expected = " or ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted)
    return check_rule(lambda v: v in values, expected, fix)


def attachments_rule(value: Any) -> Any:
    fix = "Use True, False, 'auto', or a list of MIME types such as ['image/*', 'text/plain']."
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            if not isinstance(item, str) or not _MIME_PATTERN.fullmatch(item):
                raise InvalidOption(f"item {index} ({brief(item)}) is not a MIME type pattern", fix)
        return tuple(value)
    if isinstance(value, bool) or value == "auto":
        return value
    hint = " Wrap a single MIME type in a list." if isinstance(value, str) else ""
    raise InvalidOption(f"must be True, False, 'auto' or a list, got {brief(value)}", fix + hint)


def failure_policy_rule(value: Any) -> str:
    policy = _FAILURE_POLICIES.get(value.lower()) if isinstance(value, str) else None
    if policy is None:
        fix = "Use 'raise' to fail the turn or 'continue' to go on without observing."
        raise InvalidOption(f"must be 'raise' or 'continue', got {brief(value)}", fix)
    return policy


def auto_tokens_rule(example: int, least: int = 1) -> BeforeValidator:
    """Validator of ``"auto"``, ``False`` or a whole number of tokens (at least ``least``)."""

    def validate(value: Any) -> Any:
        if value is False or value == "auto":
            return value
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and math.isfinite(value) and float(value).is_integer() and value >= least:
            return int(value)
        raise InvalidOption(
            f"must be 'auto', False or a whole number of tokens of at least {least}, "
            f"got {brief(value)}",
            f"Use 'auto' (derived from each call's input), a token count such as {example}, "
            "or False.",
        )

    return BeforeValidator(validate)


def extractors_rule(value: Any) -> tuple[Any, ...]:
    if value is None or isinstance(value, list | tuple):
        return tuple(value or ())
    raise InvalidOption(f"must be a list of extractors, got {brief(value)}", "Wrap it in a list.")


def sub_config(value: Any) -> Any:
    if value is None or value is True:
        return {}
    if isinstance(value, Mapping | BaseModel):
        return value
    extra = " To turn OM off use enabled=False." if value is False else ""
    raise InvalidOption(
        f"must be True, a dict or a config object, got {brief(value)}",
        "Pass a dict of the options to change, or leave it out for the defaults." + extra,
    )


def positive_tokens(example: int) -> BeforeValidator:
    fix = f"Use a whole number of tokens, e.g. {example}."
    return numeric_rule("a whole number of tokens, at least 1", fix, lambda x: x >= 1, whole=True)


Fraction = tuple[Literal["fraction"], float]
"""``("fraction", 0.4)``: a share of the agent model's context window."""


def tokens_or_fraction(example: int) -> BeforeValidator:
    """Validator of a token threshold: a whole number >= 1, or ``("fraction", f)``, 0 < f <= 1."""
    fix = (
        f"Use a whole number of tokens such as {example}, or ('fraction', 0.4) for a share of "
        "the agent model's context window."
    )
    whole = cast("Callable[[Any], Any]", positive_tokens(example).func)

    def validate(value: Any) -> Any:
        if isinstance(value, list | tuple) and len(value) == 2 and value[0] == "fraction":
            share = value[1]
            number = isinstance(share, int | float) and not isinstance(share, bool)
            if number and math.isfinite(share) and 0 < share <= 1:
                return ("fraction", float(share))
            raise InvalidOption(f"has a fraction of {brief(share)}, not in (0, 1]", fix)
        try:
            return whole(value)
        except InvalidOption:
            raise InvalidOption(
                f"must be a whole number of tokens, at least 1, or a fraction; got {brief(value)}",
                fix,
            ) from None

    return BeforeValidator(validate)


def resolve_fraction(value: int | Fraction, window: int | None, option: str, model: str) -> int:
    """``value`` in tokens: a fraction of ``window`` (the model's ``max_input_tokens``)."""
    if not isinstance(value, tuple):
        return value
    if window is None:
        raise InvalidOption(
            f"is {value!r} of the agent model's context window, but {model} has no "
            "profile['max_input_tokens']",
            "Give the model a profile, e.g. ChatModel(..., profile={'max_input_tokens': "
            "200_000}), or use an absolute token count.",
            option=option,
        )
    return max(1, int(window * value[1]))


def preamble_rule(value: Any) -> Any:
    """A custom preamble: ``None`` or a template whose placeholders are all known."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidOption(
            f"must be a non-empty template string or None, got {brief(value)}",
            "Pass e.g. 'Notes about the user (today is {current_date}):\\n{observations}'.",
        )
    problems = preamble_problems(value)
    if problems:
        raise InvalidOption(
            "has " + "; ".join(problems),
            f"Use only {', '.join('{' + p + '}' for p in PREAMBLE_PLACEHOLDERS)}, and write "
            "literal braces as {{ and }}.",
        )
    return value
