"""The OM record and its parts, as JSON-native TypedDicts.

Everything here is made of ``str``/``int``/``float``/``bool``/``None``/``list``/``dict`` so
that it can live in LangGraph state (checkpointer serialisation stays warning-free) or in a
``BaseStore`` value unchanged.

Message conventions (shared by every module):

* Messages are LangChain ``BaseMessage`` objects. OM keeps its per-message bookkeeping under
  ``message.response_metadata["langchain_om"]`` (a dict, see :data:`OM_META_KEY`), which no
  provider sends to a model:

  - ``"ts"``: ISO-8601 UTC timestamp of when OM first saw the message
    (e.g. ``"2026-11-30T14:03:05.120000+00:00"``);
  - ``"tok"``: the token-count cache entry written by :mod:`langchain_om._core.tokens`.

* A message without ``"ts"`` is treated as "now" by whoever formats it.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

OM_META_KEY = "langchain_om"
"""Key under ``message.response_metadata`` that holds OM's per-message bookkeeping."""

RECORD_VERSION = 1

Priority = Literal["🔴", "🟡", "🟢", "✅"]


class Hints(TypedDict, total=False):
    """Continuation hints written by the Observer (all optional)."""

    current_task: str
    suggested_response: str
    thread_title: str


class ObservationGroup(TypedDict):
    """One block of observations appended to the log as a unit.

    A group comes from one observation cycle (or one activated buffered chunk), or from a
    reflection (``kind == "reflection"``), which replaces the groups it condensed.
    """

    id: str
    """Durable 16-hex id."""
    kind: Literal["observation", "reflection"]
    text: str
    """Observation lines, with ``Date: Mon D, YYYY`` headers."""
    tokens: int
    """Token count of ``text``."""
    range: list[str] | None
    """``[first_message_id, last_message_id]`` of the source messages, if known."""
    observed_at: str
    """ISO timestamp of the cycle that wrote it."""
    sources: list[str]
    """For reflections: ids of the groups it merged (provenance). Empty for observations."""
    receipts: NotRequired[list[list[Any]]]
    """Per line, the archive positions of the messages it was written from:
    ``[[first_line, [[lo, hi], …]], …]`` (see :mod:`langchain_om._core.receipts`)."""
    summary: NotRequired[str]
    """Archive mode: the Observer's one-line label of the group, shown in the archive catalog."""


class BufferedChunk(TypedDict):
    """Observations computed ahead of time in the background, waiting for activation."""

    id: str
    text: str
    tokens: int
    """Observation tokens of ``text``."""
    message_ids: list[str]
    """Source message ids, in order."""
    message_tokens: int
    """Tokens of the source messages (what activation removes from the window)."""
    created_at: str
    hints: Hints


class BufferedReflection(TypedDict):
    """A reflection computed in the background over the first ``group_count`` groups."""

    id: str
    text: str
    tokens: int
    input_tokens: int
    group_ids: list[str]
    """Ids of the leading groups it replaces on activation."""
    created_at: str


class OMRecord(TypedDict):
    """Everything OM knows about one thread (or resource): the observation log and its state."""

    v: int
    record_id: str
    thread_id: str
    resource_id: str | None
    scope: Literal["thread", "resource"]
    generation: int
    """Reflection generation: +1 per reflection."""
    groups: list[ObservationGroup]
    """The active observation log, oldest first."""
    observation_tokens: int
    """Sum of ``tokens`` over ``groups``."""
    observed_message_count: int
    """How many messages have been observed in total (the cursor; never decreases)."""
    last_observed_message_id: str | None
    hints: Hints
    extracted: dict[str, Any]
    buffered: list[BufferedChunk]
    buffered_reflection: BufferedReflection | None
    timezone: str
    """IANA zone used to render dates for the Observer (captured at creation)."""
    created_at: str
    updated_at: str
    last_activity_at: str | None
    """ISO time of the last model response seen (idle-activation clock)."""
    last_actor_model: str | None
    """``provider/model`` of the last actor call (provider-change activation)."""
    last_buffered_at_tokens: int
    """Unobserved-token boundary at which the last background buffer was started."""
    reflection_suppressed_at_tokens: int | None
    """Churn guard: observation token count at which a sync reflection last failed to fit."""
    total_tokens_observed: int
    title: str | None
    archive: NotRequired[dict[str, Any]]
    """Archive mode: ``{"head", "count", "catalog", "catalog_tokens"}``: the newest archive
    entry of this record's chain, how many entries the chain holds, and the rendered catalog
    of retired groups the agent is shown (see :mod:`langchain_om._core.archive`)."""
    log_edit: NotRequired[str]
    """Changes with every edit of an observation line (the ``memory`` tool): buffered work
    computed from a record with another mark is dropped (:mod:`~langchain_om._core.line_edits`)."""
    working_memory_edit: NotRequired[str]
    """Changes with every update of the working memory by the application or the tool."""
    forgotten: NotRequired[list[str]]
    """Keys of the lines deleted or corrected away (salted hashes, not their text): no line
    with one of these keys enters the log again."""
    branches: NotRequired[list[list[Any]]]
    """Archive branches this record's observed messages live on: ``[[branch, first_seq], …]``
    (absent: the root branch ``""`` only). A checkpoint fork that observes gets a new branch."""
