"""Typed OM events: what memory reports while it works, as LangGraph custom-stream parts.

Every event is a frozen pydantic model with a ``type`` literal. Front doors stream them through
LangGraph's custom stream (``stream_mode="custom"``) as ``event.to_part()`` — a JSON-native
``{"type": ..., "data": {...}}`` dict — and every event also goes to ``on_debug_event``.

Example:
    >>> ev = ObservationStartEvent(cycle_id="c1", operation_type="observation",
    ...     started_at="2026-11-30T00:00:00+00:00", tokens_to_observe=10, record_id="r",
    ...     thread_id="t")
    >>> ev.to_part()["type"]
    'data-om-observation-start'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ActivationEvent",
    "ArchiveEvent",
    "ArchiveStatus",
    "BudgetUsage",
    "BufferedObservationsStatus",
    "BufferedReflectionStatus",
    "BufferingEndEvent",
    "BufferingFailedEvent",
    "BufferingStartEvent",
    "ContextOverflowEvent",
    "MemorySavings",
    "OMEvent",
    "ObservationEndEvent",
    "ObservationFailedEvent",
    "ObservationStartEvent",
    "SpendLimitEvent",
    "SpendStatus",
    "StatusEvent",
    "TemporalGapEvent",
    "ThreadUpdateEvent",
    "WindowUsage",
    "parse_event",
]

OperationType = Literal["observation", "reflection"]
BufferStatus = Literal["idle", "running", "complete"]


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str

    def to_part(self) -> dict[str, Any]:
        """Return the JSON-native data part: ``{"type": ..., "data": {...}}``."""
        data = self.model_dump(mode="json", exclude={"type"})
        return {"type": self.type, "data": data}


class _CycleEvent(_Event):
    """An event of one observation or reflection cycle."""

    cycle_id: str
    operation_type: OperationType
    record_id: str
    thread_id: str


class WindowUsage(BaseModel):
    """Tokens in a window and the threshold that acts on it."""

    model_config = ConfigDict(frozen=True)

    tokens: int
    threshold: int


class BufferedObservationsStatus(BaseModel):
    """State of background-buffered observations."""

    model_config = ConfigDict(frozen=True)

    chunks: int = 0
    message_tokens: int = 0
    projected_message_removal: int = 0
    observation_tokens: int = 0
    status: BufferStatus = "idle"


class BufferedReflectionStatus(BaseModel):
    """State of a background reflection."""

    model_config = ConfigDict(frozen=True)

    input_observation_tokens: int = 0
    observation_tokens: int = 0
    status: BufferStatus = "idle"


class MemorySavings(BaseModel):
    """What memory saves: tokens of the messages it observed against what it shows instead."""

    model_config = ConfigDict(frozen=True)

    observed_tokens: int = 0
    """Tokens of every message observed so far (they left the agent's context)."""
    context_tokens: int = 0
    """Tokens of the memory shown in their place: the observation log and archive catalog."""
    tokens_saved: int = 0
    """``observed_tokens - context_tokens`` (0 when the memory is the larger)."""


class ArchiveStatus(BaseModel):
    """Archive mode's state: entries on the record's chain and the catalog shown."""

    model_config = ConfigDict(frozen=True)

    archives: int = 0
    catalog_tokens: int = 0
    after_tokens: int
    keep_tokens: int
    max_catalog_tokens: int


BudgetName = Literal["tokens_per_hour", "tokens_per_day", "cycles_per_hour", "cycles_per_day"]


class BudgetUsage(BaseModel):
    """One limit of the spend budget: what its rolling window used and what remains."""

    model_config = ConfigDict(frozen=True)

    name: BudgetName
    used: int
    limit: int
    remaining: int


class SpendStatus(BaseModel):
    """What memory's own model calls spent in the rolling windows, against the budget."""

    model_config = ConfigDict(frozen=True)

    per: Literal["thread", "resource"]
    """Whom the budget belongs to (``spend.per``, else the scope)."""
    tokens_last_hour: int = 0
    tokens_last_day: int = 0
    cycles_last_hour: int = 0
    cycles_last_day: int = 0
    budgets: list[BudgetUsage] = Field(default_factory=list)
    """Each limit that is set (or was set at the last charge, when read without options)."""
    exhausted: BudgetName | None = None
    """The limit that stops new cycles now, if any."""
    resumes_at: str | None = None
    """ISO time from which cycles may start again, while one is exhausted."""


class StatusEvent(_Event):
    """``data-om-status``: a snapshot before every model call."""

    type: Literal["data-om-status"] = "data-om-status"
    messages: WindowUsage
    observations: WindowUsage
    buffered_observations: BufferedObservationsStatus = Field(
        default_factory=BufferedObservationsStatus
    )
    buffered_reflection: BufferedReflectionStatus = Field(default_factory=BufferedReflectionStatus)
    record_id: str
    thread_id: str
    step_number: int
    generation_count: int
    savings: MemorySavings = Field(default_factory=MemorySavings)
    """Tokens of the observed messages against the memory shown for them."""
    archive: ArchiveStatus | None = None
    """Archive mode only: its entries and catalog."""
    spend: SpendStatus | None = None
    """Memory's own model-call spend and the budget left (with a ``spend`` limit, or when
    the thread or resource has a spend ledger)."""


class ArchiveEvent(_Event):
    """``data-om-archive``: archive mode retired the oldest observation groups.

    Nothing was rewritten and no model was called: the groups moved, word for word, into the
    archive entry ``archive_id``, and the agent now sees them as rows of its catalog.
    """

    type: Literal["data-om-archive"] = "data-om-archive"
    archive_id: str
    archived_at: str
    groups_archived: int
    tokens_archived: int
    """Observation tokens of the retired groups."""
    observation_tokens: int
    """Tokens of the live log after archiving."""
    catalog_tokens: int
    """Tokens of the catalog the agent is shown."""
    archive_count: int
    """Archive entries on this record's chain, this one included."""
    generation_count: int
    record_id: str
    thread_id: str


class _CycleStartEvent(_CycleEvent):
    """The start of a cycle."""

    started_at: str
    thread_ids: list[str] = Field(default_factory=list)
    config: dict[str, Any] = Field(default_factory=dict)


class _CycleEndEvent(_CycleEvent):
    """The end of a cycle that succeeded."""

    completed_at: str
    duration_ms: int
    observations: str
    extracted_values: dict[str, Any] = Field(default_factory=dict)
    extraction_failures: list[dict[str, str]] = Field(default_factory=list)
    retention: float | None = None
    """Reflections: the share of the log's key facts the new log kept (0-1)."""
    outcome: Literal["accepted", "salvaged"] = "accepted"
    """``salvaged``: the reply was cut short (it looped or ran out of budget) and its grounded
    lines before the cut were kept, covering ``covered_messages`` of the batch."""
    covered_messages: int | None = None
    """Observations: how many messages of the batch the observations cover."""
    model_calls: int = 0
    """Model calls the cycle made (retries and compression levels included)."""
    output_tokens: int = 0
    """Output tokens those calls generated (the provider's count, else estimated)."""


class _CycleFailedEvent(_CycleEvent):
    """The end of a cycle that failed."""

    failed_at: str
    duration_ms: int
    tokens_attempted: int
    error: str
    observations: str = ""
    reason: str | None = None
    """Reason code: observations ``empty``, ``unparseable``, ``echo``, ``oversized``,
    ``degenerate``, ``ungrounded``, ``uninformative``, ``model-error``; reflections a
    retention reason (``not-smaller``,
    ``too-small``, ``lost-dates``, ``lost-priorities``, ``lost-facts``, ``empty``,
    ``degenerate``) or ``model-error``; ``tier-exceeded`` (either) when the input is above the
    largest ``ModelByInputTokens`` tier; ``backoff`` when failure_policy applied while backing
    off after earlier failures."""
    retention: float | None = None
    """Reflections: the best retention figure among the rejected attempts (0-1)."""
    model_calls: int = 0
    """Model calls the cycle made so far."""
    output_tokens: int = 0
    """Output tokens those calls generated (the provider's count, else estimated)."""


class ObservationStartEvent(_CycleStartEvent):
    """``data-om-observation-start``: a synchronous observation or reflection began."""

    type: Literal["data-om-observation-start"] = "data-om-observation-start"
    tokens_to_observe: int
    trigger: str = "turn-sync"


class ObservationEndEvent(_CycleEndEvent):
    """``data-om-observation-end``: a synchronous observation or reflection succeeded."""

    type: Literal["data-om-observation-end"] = "data-om-observation-end"
    tokens_observed: int
    observation_tokens: int
    current_task: str | None = None
    suggested_response: str | None = None
    trigger: str = "turn-sync"


class ObservationFailedEvent(_CycleFailedEvent):
    """``data-om-observation-failed``: a cycle failed; nothing was removed."""

    type: Literal["data-om-observation-failed"] = "data-om-observation-failed"
    retrying: bool = False
    trigger: str = "turn-sync"


class BufferingStartEvent(_CycleStartEvent):
    """``data-om-buffering-start``: background work began."""

    type: Literal["data-om-buffering-start"] = "data-om-buffering-start"
    tokens_to_buffer: int


class BufferingEndEvent(_CycleEndEvent):
    """``data-om-buffering-end``: background work is stored and waits for activation."""

    type: Literal["data-om-buffering-end"] = "data-om-buffering-end"
    tokens_buffered: int
    buffered_tokens: int


class BufferingFailedEvent(_CycleFailedEvent):
    """``data-om-buffering-failed``: background work failed; the sync path takes over."""

    type: Literal["data-om-buffering-failed"] = "data-om-buffering-failed"


class ActivationEvent(_CycleEvent):
    """``data-om-activation``: buffered work moved into the active log (no model call)."""

    type: Literal["data-om-activation"] = "data-om-activation"
    activated_at: str
    chunks_activated: int
    tokens_activated: int
    observation_tokens: int
    messages_activated: int
    generation_count: int
    observations: str
    triggered_by: Literal["threshold", "ttl", "provider_change"]
    last_activity_at: int | None = None
    ttl_expired_ms: int | None = None
    previous_model: str | None = None
    current_model: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)


class ThreadUpdateEvent(_Event):
    """``data-om-thread-update``: the Observer changed the thread title."""

    type: Literal["data-om-thread-update"] = "data-om-thread-update"
    cycle_id: str
    thread_id: str
    old_title: str | None = None
    new_title: str
    timestamp: str


class TemporalGapEvent(_Event):
    """``data-om-temporal-gap``: a time-gap reminder was inserted before a user message.

    Until 0.2 this event was named ``data-system-reminder``; :func:`parse_event` still accepts
    that name for one release.
    """

    type: Literal["data-om-temporal-gap"] = "data-om-temporal-gap"
    reminder_type: Literal["temporal-gap"] = "temporal-gap"
    message: str
    gap_text: str
    gap_ms: int
    timestamp: str
    precedes_message_id: str | None
    thread_id: str


class ContextOverflowEvent(_Event):
    """``data-om-context-overflow``: the agent's model call overflowed its context window.

    Memory observed synchronously (activating buffered observations first) before the call is
    retried once; ``removed_messages`` 0 means nothing could be freed and the error propagates.
    """

    type: Literal["data-om-context-overflow"] = "data-om-context-overflow"
    thread_id: str
    model: str | None
    """``provider/model`` of the agent's model, when known."""
    tokens_before: int
    """Estimated tokens of the window when the call overflowed."""
    tokens_after: int
    """Estimated tokens of the window the call is retried with."""
    removed_messages: int
    timestamp: str


class SpendLimitEvent(_Event):
    """``data-om-spend-limit``: a cycle did not start because the spend budget is used up.

    Nothing was removed from the window: its messages stay unobserved until the rolling
    window has room again (``resumes_at``). A WARNING is logged once per such episode.
    """

    type: Literal["data-om-spend-limit"] = "data-om-spend-limit"
    thread_id: str
    resource_id: str | None = None
    per: Literal["thread", "resource"]
    operation_type: Literal["observation", "reflection"]
    background: bool = False
    """The skipped cycle would have run in the background (buffering)."""
    budget: BudgetName
    """The limit that is used up."""
    used: int
    limit: int
    resumes_at: str | None
    """ISO time from which cycles may start again."""
    timestamp: str


OMEvent = (
    StatusEvent
    | ObservationStartEvent
    | ObservationEndEvent
    | ObservationFailedEvent
    | BufferingStartEvent
    | BufferingEndEvent
    | BufferingFailedEvent
    | ActivationEvent
    | ThreadUpdateEvent
    | TemporalGapEvent
    | ContextOverflowEvent
    | ArchiveEvent
    | SpendLimitEvent
)
"""Any OM event."""

_EVENT_TYPES: dict[str, type[_Event]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        StatusEvent,
        ObservationStartEvent,
        ObservationEndEvent,
        ObservationFailedEvent,
        BufferingStartEvent,
        BufferingEndEvent,
        BufferingFailedEvent,
        ActivationEvent,
        ThreadUpdateEvent,
        TemporalGapEvent,
        ContextOverflowEvent,
        ArchiveEvent,
        SpendLimitEvent,
    )
}
_ALIASES = {"data-system-reminder": "data-om-temporal-gap"}
"""Old event names still parsed (``data-system-reminder`` until the next release)."""


def parse_event(part: Mapping[str, Any]) -> OMEvent:
    """Turn a streamed ``{"type": ..., "data": {...}}`` part back into its typed event.

    Accepts what :meth:`to_part` produced (also after a JSON round trip), e.g. the items of a
    graph's ``stream_mode="custom"`` stream. The old temporal-gap name
    ``data-system-reminder`` is read as :class:`TemporalGapEvent` for one release.

    Args:
        part: the stream part.

    Returns:
        The typed event.

    Raises:
        ValueError: ``part`` is not an OM event part (the message says which key is wrong);
            a malformed payload raises pydantic's ``ValidationError`` (a ``ValueError``).

    Example:
        >>> ev = ThreadUpdateEvent(cycle_id="c", thread_id="t", new_title="Moving",
        ...                        timestamp="2026-11-30T00:00:00+00:00")
        >>> parse_event(ev.to_part()) == ev
        True
    """
    if not isinstance(part, Mapping) or not isinstance(part.get("data"), Mapping):
        raise ValueError(
            f"Not an OM event part: {type(part).__name__}; expected "
            '{"type": "data-om-...", "data": {...}} as produced by event.to_part().'
        )
    name = str(part.get("type"))
    cls = _EVENT_TYPES.get(_ALIASES.get(name, name))
    if cls is None:
        known = ", ".join(sorted(_EVENT_TYPES))
        raise ValueError(f"Unknown OM event type {name!r}; known types: {known}.")
    data = {k: v for k, v in part["data"].items() if k != "type"}
    event: OMEvent = cls.model_validate(data)  # type: ignore[assignment]
    return event
