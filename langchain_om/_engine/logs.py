"""Log lines for OM events: summaries at INFO, failures at WARNING, never message text.

Loggers (all under ``langchain_om``; configure that one to see everything):

- ``langchain_om.cycles`` — INFO: an observation, reflection, buffer or activation finished
  (thread, counts, tokens, duration), or a cycle was skipped while the spend budget is used
  up; WARNING: a cycle failed; DEBUG: a cycle started.
- ``langchain_om.retry`` — INFO: a model call is retried or falls back to the next model;
  WARNING: every attempt failed.
- ``langchain_om`` — WARNING: a background job or a user callback failed; the spend budget was
  used up (once per episode).

Observation text, messages and prompts are never logged: only ids, counts, tokens, durations
and error class names with their (provider) messages, clipped.
"""

from __future__ import annotations

import logging

from langchain_om import events
from langchain_om._core.redact import redacted_logger

cycles_logger = redacted_logger("langchain_om.cycles")

_ERROR_CHARS = 200


def clip_error(text: str) -> str:
    """An error text on one line, at most a couple of hundred characters."""
    line = " ".join(text.split())
    return line if len(line) <= _ERROR_CHARS else line[: _ERROR_CHARS - 1] + "…"


def log_event(event: events.OMEvent) -> None:
    """Log ``event`` on ``langchain_om.cycles`` at its level (status events are not logged)."""
    log = cycles_logger
    if isinstance(event, events.ObservationFailedEvent | events.BufferingFailedEvent):
        retrying = isinstance(event, events.ObservationFailedEvent) and event.retrying
        kind = "background " if isinstance(event, events.BufferingFailedEvent) else ""
        log.log(
            logging.INFO if retrying else logging.WARNING,
            "%s%s %s failed for thread %r after %d ms (%d tokens attempted%s): %s",
            kind,
            event.operation_type,
            event.cycle_id,
            event.thread_id,
            event.duration_ms,
            event.tokens_attempted,
            "; retrying" if retrying else "; nothing was removed",
            clip_error(event.error),
        )
    elif isinstance(event, events.ObservationEndEvent):
        log.info(
            "%s %s done for thread %r in %d ms: %d input tokens, log now %d tokens (%s)",
            event.operation_type,
            event.cycle_id,
            event.thread_id,
            event.duration_ms,
            event.tokens_observed,
            event.observation_tokens,
            event.trigger,
        )
    elif isinstance(event, events.BufferingEndEvent):
        log.info(
            "background %s %s buffered for thread %r in %d ms: %d input tokens -> %d tokens",
            event.operation_type,
            event.cycle_id,
            event.thread_id,
            event.duration_ms,
            event.tokens_buffered,
            event.buffered_tokens,
        )
    elif isinstance(event, events.ActivationEvent):
        log.info(
            "%s activated for thread %r (%s): %d chunks, %d messages left the window, "
            "log now %d tokens",
            event.operation_type,
            event.thread_id,
            event.triggered_by,
            event.chunks_activated,
            event.messages_activated,
            event.observation_tokens,
        )
    elif isinstance(event, events.ObservationStartEvent | events.BufferingStartEvent):
        tokens = (
            event.tokens_to_observe
            if isinstance(event, events.ObservationStartEvent)
            else event.tokens_to_buffer
        )
        log.debug(
            "%s %s started for thread %r: %d tokens",
            event.operation_type,
            event.cycle_id,
            event.thread_id,
            tokens,
        )
    elif isinstance(event, events.SpendLimitEvent):
        log.info(
            "%s%s skipped for thread %r: spend.%s used up (%d of %d) until %s",
            "background " if event.background else "",
            event.operation_type,
            event.thread_id,
            event.budget,
            event.used,
            event.limit,
            event.resumes_at,
        )
