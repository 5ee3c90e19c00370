"""Options the config accepts but the engine does not honour yet, refused when it is built.

The config keeps the whole option surface (so a Mastra config can be pasted and validated),
but an option that would be accepted and then ignored is refused by ``ObservationalMemory(...)``
with an :class:`~langchain_om.errors.OMConfigError` that names the option, the limitation and
what to use instead. Each entry says which values are refused: values that give today's
behaviour anyway (the default, ``False``) stay accepted.

Whoever makes one of these options work removes its entry in the same change, and adds the
option's behaviour to the option walk in ``tests/integration_tests/test_option_walk.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import OMConfigError

__all__ = ["UNBUILT", "UNBUILT_IN_RESOURCE_SCOPE", "Unbuilt", "refuse_unbuilt"]


@dataclass(frozen=True)
class Unbuilt:
    """One option value the engine refuses until it is implemented."""

    option: str
    """Dotted snake_case path of the option."""
    refused: Callable[[ObservationalMemoryConfig], bool]
    """Whether ``config`` sets the option to a value that would be ignored."""
    why: str
    """What is missing, in one sentence."""
    instead: str
    """What to do instead."""

    def error(self) -> OMConfigError:
        """The error naming the option, the limitation and the alternative."""
        return OMConfigError(
            f"Option {self.option!r} is not supported yet: {self.why} {self.instead}",
            option=self.option,
        )


UNBUILT: tuple[Unbuilt, ...] = (
    Unbuilt(
        "observation.max_tokens_per_batch",
        lambda c: c.scope == "thread" and c.observation.max_tokens_per_batch != 10_000,
        "it caps the batches of threads observed together in resource scope; thread scope "
        "observes one thread per call, so it would be ignored.",
        "Leave it out, or use scope='resource'.",
    ),
    Unbuilt(
        "obscure_thread_ids",
        lambda c: c.scope == "thread" and c.obscure_thread_ids is True,
        "thread ids enter observation text only in resource scope; in thread scope no thread "
        "id reaches the Observer, so there is nothing to hash.",
        "Leave it out (resource scope hashes them by default), or use scope='resource'.",
    ),
)
"""Every refused option value, in the order they are checked."""

_RESOURCE_FIX = "Leave it out in resource scope, or use scope='thread'."


_Test = Callable[[ObservationalMemoryConfig], object]


def _buffers_with_floor(c: ObservationalMemoryConfig) -> bool:
    """Resource-scope buffering (an explicit ``buffer_tokens``) with a message floor."""
    observation = c.observation
    return (
        c.keep_last_messages > 0
        and "buffer_tokens" in observation.model_fields_set
        and observation.buffer_tokens is not False
    )


def _in_resource_scope(test: _Test) -> Callable[[ObservationalMemoryConfig], bool]:
    return lambda c: c.scope == "resource" and bool(test(c))


_REFLECTS_IN_TURN = (
    "it activates a buffered reflection early, and resource scope reflects its shared log "
    "synchronously (only observations are buffered)."
)
_RESOURCE_ONLY: tuple[tuple[str, _Test, str], ...] = (
    (
        "observation.use_usage_metadata",
        lambda c: c.observation.use_usage_metadata,
        "resource scope triggers on the estimated tokens of all the resource's threads; the "
        "provider-reported usage of one thread's reply is not used.",
    ),
    (
        "reflection.activate_after_idle",
        lambda c: c.reflection.activate_after_idle,
        _REFLECTS_IN_TURN,
    ),
    (
        "reflection.activate_on_provider_change",
        lambda c: c.reflection.activate_on_provider_change,
        _REFLECTS_IN_TURN,
    ),
    (
        "keep_last_messages",
        _buffers_with_floor,
        "with observation.buffer_tokens set, resource scope activates a buffered chunk whole, "
        "which could take a thread's last messages below its floor (buffer_tokens=False "
        "keeps the floor).",
    ),
    (
        "memory_tool",
        lambda c: c.memory_tool,
        "the tool finds, corrects and deletes lines of the thread's own log, and resource "
        "scope's lines are in the resource's shared record, which it does not edit yet.",
    ),
    (
        "observation.archive",
        lambda c: c.observation.archive is not None,
        "the shared log of a resource is reflected, not archived: its lines carry no archive "
        "positions per thread yet.",
    ),
)

UNBUILT_IN_RESOURCE_SCOPE: tuple[Unbuilt, ...] = tuple(
    Unbuilt(option, _in_resource_scope(test), why, _RESOURCE_FIX)
    for option, test, why in _RESOURCE_ONLY
)
"""Option values refused in resource scope only (they work in thread scope)."""


def refuse_unbuilt(
    config: ObservationalMemoryConfig,
    entries: tuple[Unbuilt, ...] = UNBUILT + UNBUILT_IN_RESOURCE_SCOPE,
) -> None:
    """Raise for the first option of ``config`` that would be accepted and ignored.

    Raises:
        OMConfigError: ``config`` sets an option in ``entries`` to a refused value; ``option``
            is its dotted path and the message names the alternative.
    """
    for entry in entries:
        if entry.refused(config):
            raise entry.error()
