"""The model memory runs on when none is named: one rule for the library and the command line.

With no model named (``model=None`` or ``"default"``, and no ``observation.model`` or
``reflection.model``), memory takes the first model of :data:`DEFAULT_CHAIN` that can run
here: its provider package is installed and its API key is set. When none can, it runs on the
offline extractive Observer (:mod:`langchain_om.offline`: no LLM, no network) and says so once
per process, naming what is missing and how to choose a model. A model that *is* named is
never replaced: a missing package fails at construction, a missing key warns.

``langchain-om chat`` and ``replay`` follow the same rule when ``--model`` is not given (they
print the notice instead of warning).
"""

from __future__ import annotations

import re
import threading
import warnings
from dataclasses import dataclass
from typing import Any

from langchain_om._engine.providers import check_model_string, missing_api_key, model_provider
from langchain_om.config import ObservationalMemoryConfig, _caller_stacklevel
from langchain_om.errors import MissingProviderError

DEFAULT_CHAIN = ("google/gemini-2.5-flash", "openai/gpt-5-mini")
"""The models memory tries, in order, when none is named (the first is ``DEFAULT_MODEL``)."""

_INSTALL = re.compile(r"pip install \S+")
_warned: set[str] = set()
_warned_lock = threading.Lock()


@dataclass(frozen=True)
class DefaultModel:
    """What the rule picked, and why it passed over the models before it."""

    spec: str | None
    """The model string, or ``None`` for the offline extractive Observer."""
    passed_over: tuple[str, ...] = ()
    """One line per model of the chain that cannot run here, saying what is missing."""

    @property
    def notice(self) -> str | None:
        """The one-line explanation to show, or ``None`` when the first default runs."""
        if not self.passed_over:
            return None
        why = "; ".join(self.passed_over)
        if self.spec is not None:
            return (
                f"No model named and {why}: memory uses {self.spec}. Name a model "
                '(model="provider/name" or a chat model) to choose another.'
            )
        return (
            f"No model named and {why}: memory runs on the offline extractive Observer (no "
            "LLM; it copies the user's key sentences and understands nothing). Name a model "
            '(model="provider/name" or a chat model) to use an LLM.'
        )


def _why_not(spec: str) -> str | None:
    """What keeps ``spec`` from running here (package or key), or ``None`` when it can."""
    try:
        check_model_string(spec)
    except MissingProviderError as exc:
        hint = _INSTALL.search(exc.message)
        return f"{spec} needs a package that is not installed ({hint.group(0) if hint else exc})"
    provider = model_provider(spec)
    variable = missing_api_key(provider) if provider is not None else None
    if variable is not None:
        return f"{spec} needs {variable}, which is not set"
    return None


def pick_default_model() -> DefaultModel:
    """Apply the rule: the first model of :data:`DEFAULT_CHAIN` that can run, else offline."""
    passed: list[str] = []
    for spec in DEFAULT_CHAIN:
        why = _why_not(spec)
        if why is None:
            return DefaultModel(spec, tuple(passed))
        passed.append(why)
    return DefaultModel(None, tuple(passed))


def default_model_spec(*, warn: bool) -> Any:
    """The model spec the rule picks: a model string or the extractive Observer.

    Args:
        warn: warn (``UserWarning``, once per process for each distinct notice) when the
            first default cannot run; the warning points at the caller's own code.
    """
    from langchain_om.offline import extractive_observer  # noqa: PLC0415 - only when needed

    choice = pick_default_model()
    notice = choice.notice
    if warn and notice is not None:
        with _warned_lock:
            fresh = notice not in _warned
            _warned.add(notice)
        if fresh:
            warnings.warn(notice, UserWarning, stacklevel=_caller_stacklevel())
    return choice.spec if choice.spec is not None else extractive_observer()


def names_no_model(config: ObservationalMemoryConfig) -> bool:
    """Whether ``config`` leaves both roles on the default (no model named anywhere)."""
    return all(
        spec is None or (isinstance(spec, str) and spec.strip() == "default")
        for spec in (config.observer_model_spec, config.reflector_model_spec)
    )


def with_default_model(config: ObservationalMemoryConfig) -> ObservationalMemoryConfig:
    """``config`` with the rule's model when it names none (unchanged otherwise).

    A disabled memory keeps its config; a read-only one gets the model without the warning
    (it never calls it).
    """
    if not config.enabled or not names_no_model(config):
        return config
    spec = default_model_spec(warn=not config.read_only)
    return ObservationalMemoryConfig.coerce(config, model=spec)
