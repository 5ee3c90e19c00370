"""What a turn works with: the engine's environment, a step's input, its outcome and jobs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from langchain_core.messages import BaseMessage

from langchain_om._core.observer_input import AttachmentPolicy
from langchain_om._core.schemas import StructuredRequest
from langchain_om._core.thresholds import message_threshold
from langchain_om._core.tokens import TokenCounter
from langchain_om._core.types import OMRecord
from langchain_om._plans.effects import ModelCall, Plan
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import OMUsageError
from langchain_om.events import OMEvent, SpendStatus, StatusEvent
from langchain_om.extractors import Extractor

Trigger = Literal["manual", "turn-sync", "async-buffer"]
"""What started a cycle."""
ActivationTrigger = Literal["threshold", "ttl", "provider_change"]
"""Why buffered work was activated."""


@dataclass
class TurnEnv:
    """What a plan needs from the engine: options, counting, time, events and model ids."""

    config: ObservationalMemoryConfig
    counter: TokenCounter
    now: Callable[[], datetime]
    emit: Callable[[OMEvent], None]
    model_id: Callable[[str, int], str | None]
    """``(role, input_tokens) -> "provider/model"`` of the model a role would use."""
    running: Callable[[str], bool] = lambda key: False
    """Whether the background job ``key`` is in flight."""
    hears_events: Callable[[], bool] = lambda: True
    """Whether :attr:`emit` passes events on to a listener now (the engine's
    ``on_debug_event``); a status event neither it nor the step's own ``emit`` hears is not
    built."""
    vector: bool = False
    """Write vector-search documents (``retrieval.vector``)."""
    extractors: Sequence[Extractor] = ()
    """``observation.extract``, validated."""
    timezone: str = "UTC"
    cache_retention: str | None = None
    """OpenAI ``prompt_cache_retention`` of the agent's model (the ``"auto"`` idle TTL)."""
    structured: Callable[[StructuredRequest], Any] = lambda request: _no_structured(request)
    """Runs a schema extractor's structured-output call (blocking); the engine provides it."""
    astructured: Callable[[StructuredRequest], Awaitable[Any]] | None = None
    """Async twin of :attr:`structured`."""
    memory: Any = None
    """The :class:`~langchain_om.ObservationalMemory` the plans run for (shown to dynamic
    extractor instructions and transform hooks as ``ctx["memory"]``)."""
    observer_part_tokens: Callable[[int], int | None] = lambda tokens: None
    """``batch_tokens -> part size``: the largest batch one Observer call reads
    (``observation.part_tokens`` for the model a batch of that size goes to), or ``None``."""
    observer_hides_previous: Callable[[int], bool] = lambda tokens: False
    """``batch_tokens -> hide``: whether the model a batch goes to is shown no previous
    observations (a small model with ``observation.previous_observer_tokens`` left unset)."""
    observer_attachments: Callable[[int], AttachmentPolicy] | None = None
    """``batch_tokens -> policy``: ``observation.observe_attachments`` with ``"auto"``
    resolved for the model a batch goes to (``None``: the setting as it is)."""

    def attachment_policy(self, batch_tokens: int) -> AttachmentPolicy:
        """Which attachments an Observer call over ``batch_tokens`` is sent."""
        if self.observer_attachments is None:
            return self.config.observation.observe_attachments
        return self.observer_attachments(batch_tokens)

    def message_threshold(self, record: OMRecord) -> int:
        """Unobserved-message tokens that trigger observation of ``record``'s thread."""
        cfg = self.config
        return message_threshold(
            cfg.observation.message_tokens_abs,
            observation_tokens=cfg.reflection.observation_tokens_abs,
            logged_tokens=record["observation_tokens"],
            share_budget=cfg.share_token_budget,
        )

    def model_call(
        self,
        role: Literal["observer", "reflector"],
        messages: Sequence[BaseMessage],
        *,
        thread_id: str,
        resource_id: str | None,
        trigger: str,
        cycle_id: str | None = None,
        temperature: float | None = None,
        output_budget: int | None = None,
        source: str | None = None,
    ) -> ModelCall:
        """The :class:`~langchain_om._plans.effects.ModelCall` of ``messages`` (tokens counted)."""
        return ModelCall(
            role=role,
            messages=messages,
            input_tokens=self.counter.count_messages(messages),
            thread_id=thread_id,
            resource_id=resource_id,
            cycle_id=cycle_id,
            trigger=trigger,
            temperature=temperature,
            output_budget=output_budget,
            source=source,
        )


class SpendWatch(Protocol):
    """A step's spend guard, as the step sees it (see :mod:`langchain_om._plans.spend`)."""

    def status(self, now: datetime) -> SpendStatus:
        """The ``spend`` part of the step's ``data-om-status``."""
        ...


@dataclass
class TurnInput:
    """The state a turn starts from."""

    thread_id: str
    resource_id: str | None
    record: OMRecord | None
    window: list[BaseMessage]
    trigger: Trigger = "turn-sync"
    force_observe: bool = False
    force_reflect: bool = False
    step_number: int = 0
    emit: Callable[[OMEvent], None] | None = None
    allow_observe: bool = True
    allow_reflect: bool = True
    actor_model: str | None = None
    """``provider/model`` of the agent's model for this step, when the front door knows it."""
    idle: bool = False
    """The turn has ended (``buffer_on_idle``)."""
    sync_cycles: bool = True
    """Run synchronous Observer/Reflector calls (graph gates leave them to their nodes)."""
    emit_status: bool = True
    """Emit ``data-om-status`` (once per model call: the graph's cycle nodes do not)."""
    context_overflow: bool = False
    """The agent's model call overflowed its context: observe now, keeping the current turn."""
    configurable: Mapping[str, Any] | None = None
    """The run config's ``configurable`` (agents and graphs; ``None`` for standalone calls)."""
    over_budget: bool = False
    """An explicit ``observe()``/``reflect()`` runs even while the spend budget is used up."""
    spend: SpendWatch | None = None
    """The step's spend guard (set by :func:`~langchain_om._plans.spend.guarded`)."""


def _no_structured(request: StructuredRequest) -> Any:
    raise OMUsageError(
        f"extractor {request.slug!r} needs a structured-output call, which this environment "
        "cannot make; run it through ObservationalMemory."
    )


def require_thread_id(thread_id: str | None) -> str:
    """``thread_id``, or a clear error when a front door was given none."""
    if not thread_id:
        raise OMUsageError(
            "Observational memory needs a thread id: pass thread_id=... or run the graph "
            "with config={'configurable': {'thread_id': ...}}."
        )
    return thread_id


def recovers_overflow(env: TurnEnv, inp: TurnInput) -> bool:
    """Whether this step frees context after an overflow (``observe_on_context_overflow``)."""
    return inp.context_overflow and env.config.observation.observe_on_context_overflow


def emit_event(env: TurnEnv, inp: TurnInput, event: OMEvent) -> None:
    """Send ``event`` to the engine's listener and to the step's own, if any."""
    env.emit(event)
    if inp.emit is not None:
        inp.emit(event)


def report_status(env: TurnEnv, inp: TurnInput, out: TurnOutcome) -> None:
    """Emit the step's status event when it is to be reported and someone hears it."""
    if inp.emit_status and (inp.emit is not None or env.hears_events()):
        status = out.status
        if status is not None:
            emit_event(env, inp, status)


@dataclass
class BackgroundJob:
    """A plan to run in the background, at most one per ``key`` at a time."""

    key: str
    plan: Plan[None]


@dataclass
class TurnOutcome:
    """The state a turn ends with."""

    record: OMRecord
    window: list[BaseMessage]
    removed: list[BaseMessage] = field(default_factory=list)
    stamped: list[BaseMessage] = field(default_factory=list)
    observed: bool = False
    reflected: bool = False
    errors: list[BaseException] = field(default_factory=list)
    status_of: Callable[[], StatusEvent] | None = field(default=None, repr=False)
    """Builds :attr:`status` when it is first read: a step whose status event nobody hears
    (no stream, no ``on_debug_event``) builds none unless its caller asks."""
    jobs: list[BackgroundJob] = field(default_factory=list)
    """Background work to start once the step's state is saved."""
    inserted: list[BaseMessage] = field(default_factory=list)
    """Messages OM inserted into the window (time-gap reminders); the window is reordered."""
    reported_tokens: int = 0
    """The window's size as the provider reported it with the last AI reply
    (``observation.use_usage_metadata``); 0 without usage or once the step changed the window.
    A graph's gate routes on it: the threshold check of a later node could not tell whether
    the usage still describes the window."""
    stamps_only: bool = False
    """The step changed nothing of the record it was given but its activity stamps
    (``last_activity_at``): graph state need not compare the record to know it is unchanged.
    ``False`` when unknown."""

    _status: StatusEvent | None = field(default=None, repr=False)

    @property
    def status(self) -> StatusEvent | None:
        """The step's ``data-om-status`` event (``None`` for a step that reports none)."""
        if self._status is None and self.status_of is not None:
            self._status = self.status_of()
        return self._status

    @status.setter
    def status(self, event: StatusEvent | None) -> None:
        self._status, self.status_of = event, None

    @property
    def removed_ids(self) -> list[str]:
        """Ids of the messages that left the window (they are in the archive)."""
        return [m.id for m in self.removed if m.id]
