"""Errors raised by langchain-om.

The tree, split by whose fault it is::

    ObservationalMemoryError            base of everything we raise
    ├── OMConfigError (ValueError)      bad options; the message names the option and fix
    ├── OMUsageError (ValueError)       a usage mistake: no thread id, an unknown node, …
    ├── ModelResolutionError            a model spec cannot be turned into a chat model
    │   └── MissingProviderError        a provider package or API key is missing
    ├── ModelTierExceededError          input larger than the largest ``ModelByInputTokens`` tier
    ├── ObserverOutputError             the Observer's output cannot be used (raw text kept)
    ├── ReflectorOutputError            the Reflector's output cannot be used (raw text kept)
    ├── CycleFailedError                an observation or reflection failed; nothing was removed
    │   └── SpendLimitError             an explicit cycle was refused: the spend budget is used up
    ├── HookError                       a transform hook raised or vetoed; the cycle failed
    └── StorageError                    the store or checkpointer failed (raised ``from`` the cause)

Every error has ``.message``. None subclasses ``BaseException`` directly.
"""

from __future__ import annotations

__all__ = [
    "CycleFailedError",
    "HookError",
    "MissingProviderError",
    "ModelResolutionError",
    "ModelTierExceededError",
    "OMConfigError",
    "OMUsageError",
    "ObservationalMemoryError",
    "ObserverOutputError",
    "ReflectorOutputError",
    "SpendLimitError",
    "StorageError",
]


class ObservationalMemoryError(Exception):
    """Base class of every error langchain-om raises."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class OMConfigError(ObservationalMemoryError, ValueError):
    """Raised when options are invalid.

    Raised at construction. The message names the option (dotted path, e.g.
    ``observation.buffer_tokens``) and says how to fix it.
    """

    def __init__(self, message: str, *, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


class OMUsageError(ObservationalMemoryError, ValueError):
    """Raised when the library is used in a way it cannot honour (e.g. no ``thread_id``)."""


class ModelResolutionError(ObservationalMemoryError):
    """Raised when a model spec cannot be turned into a chat model."""


class MissingProviderError(ModelResolutionError, ImportError):
    """Raised when a provider package is not installed or its API key is not set.

    The message says what to ``pip install`` or which environment variable to set.
    """


class ModelTierExceededError(ObservationalMemoryError):
    """Raised when input is larger than the largest tier of a ``ModelByInputTokens``.

    The OM cycle aborts; nothing is removed from context. Its failure reason code is
    ``tier-exceeded``. An agent's or graph's turn goes on without observing (whatever
    ``observation.failure_policy`` says); an explicit ``observe()`` raises.
    """

    reason = "tier-exceeded"
    """The failure reason code events and hooks report."""

    def __init__(self, message: str, *, input_tokens: int, largest_tier: int) -> None:
        super().__init__(message)
        self.input_tokens = input_tokens
        self.largest_tier = largest_tier


class ObserverOutputError(ObservationalMemoryError):
    """Raised when the Observer's output is unusable twice (after one retry with a reminder).

    ``reason`` is the reason code of the rejection: ``empty``, ``unparseable``, ``echo``,
    ``oversized`` or ``degenerate`` (``None`` when unknown).
    """

    def __init__(self, message: str, *, raw: str = "", reason: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw
        self.reason = reason


class ReflectorOutputError(ObservationalMemoryError):
    """Raised when the Reflector's output is unusable on every attempt.

    ``reason`` is the reason code of the last rejected attempt (``empty``, ``degenerate``,
    ``not-smaller``, ``too-small``, ``lost-dates``, ``lost-priorities``, ``lost-facts``), or
    ``None`` when unknown. ``retention`` is the best retention figure measured among the
    attempts (``None`` when none was measured).
    """

    def __init__(
        self,
        message: str,
        *,
        raw: str = "",
        reason: str | None = None,
        retention: float | None = None,
    ) -> None:
        super().__init__(message)
        self.raw = raw
        self.reason = reason
        self.retention = retention


class CycleFailedError(ObservationalMemoryError):
    """Raised when a synchronous observation or reflection cycle fails.

    Nothing was removed from context and no message was lost; ``__cause__`` holds the
    underlying error. Set ``observation.failure_policy="continue"`` to continue the turn
    without observing.
    """

    def __init__(self, message: str, *, operation: str, thread_id: str | None) -> None:
        super().__init__(message)
        self.operation = operation
        self.thread_id = thread_id


class SpendLimitError(CycleFailedError):
    """Raised by an explicit ``observe()`` or ``reflect()`` while the spend budget is used up.

    No model was called and nothing was removed. ``budget`` names the limit
    (``spend.tokens_per_hour``, ...), ``used`` and ``limit`` are its window's figures and
    ``resumes_at`` the ISO time from which cycles may start again. Pass ``over_budget=True``
    to run the cycle anyway (its calls are still counted).
    """

    def __init__(
        self,
        message: str,
        *,
        operation: str,
        thread_id: str | None,
        budget: str,
        used: int,
        limit: int,
        resumes_at: str | None,
    ) -> None:
        super().__init__(message, operation=operation, thread_id=thread_id)
        self.budget = budget
        self.used = used
        self.limit = limit
        self.resumes_at = resumes_at


class HookError(ObservationalMemoryError):
    """Raised inside a cycle when a transform hook (``hooks.before_observation``, ...) fails.

    ``hook`` names the hook; ``reason`` is ``"hook_failed"`` (it raised or returned the wrong
    type) or ``"vetoed"`` (``after_reflection`` returned False). The cycle fails cleanly: the
    caller gets a :class:`CycleFailedError` whose ``__cause__`` is this error, and nothing is
    removed from context.
    """

    def __init__(self, message: str, *, hook: str, reason: str) -> None:
        super().__init__(message)
        self.hook = hook
        self.reason = reason


class StorageError(ObservationalMemoryError):
    """Raised when the store or checkpointer fails; raised ``from`` the backend error."""
