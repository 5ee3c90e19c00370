"""The rules one step consults, apart from the step itself.

The background-job keys of a thread; when a step observes or reflects synchronously (also for
the graph's routers); when buffered work activates early (idle TTL, provider change); what
arriving messages bring (a time-gap reminder before a user message after a long pause, a user
message that crosses the threshold on its own); and which messages a background buffer may
take.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from langchain_core.messages import BaseMessage, HumanMessage

from langchain_om._core.cache_ttl import auto_ttl_ms
from langchain_om._core.dates import message_time
from langchain_om._core.reflector import should_reflect
from langchain_om._core.temporal import gap_reminder
from langchain_om._core.types import OM_META_KEY, OMRecord
from langchain_om._core.window import safe_cut_points
from langchain_om._plans.types import (
    ActivationTrigger,
    TurnEnv,
    TurnInput,
    TurnOutcome,
    emit_event,
)
from langchain_om.events import TemporalGapEvent

BLOCK_WAIT_SECONDS = 60.0
"""How long a step beyond ``block_after`` waits for an in-flight buffer."""


def obs_key(thread_id: str) -> str:
    """Background-job key of a thread's observation buffer."""
    return f"obs:{thread_id}"


def ref_key(thread_id: str) -> str:
    """Background-job key of a thread's background reflection."""
    return f"ref:{thread_id}"


def resource_obs_key(resource_id: str) -> str:
    """Background-job key of a resource's observation buffer (resource scope)."""
    return f"obs:resource:{resource_id}"


def buffer_key(env: TurnEnv, record: OMRecord) -> str:
    """Background-job key of the observation buffer a step of ``record``'s thread runs."""
    resource_id = record["resource_id"]
    if env.config.scope == "resource" and resource_id:
        return resource_obs_key(resource_id)
    return obs_key(record["thread_id"])


def _idle_ms(record: OMRecord, now: datetime) -> int | None:
    last = record.get("last_activity_at")
    if not last:
        return None
    try:
        return int((now - datetime.fromisoformat(str(last))).total_seconds() * 1000)
    except ValueError:
        return None


def _ttl(setting: int | str | None, model: str | None, retention: str | None) -> int | None:
    if setting is None:
        return None
    return auto_ttl_ms(model, retention=retention) if setting == "auto" else int(setting)


def early_trigger(
    env: TurnEnv, inp: TurnInput, record: OMRecord, now: datetime, *, reflection: bool
) -> ActivationTrigger | None:
    """``"ttl"`` or ``"provider_change"`` when early activation applies, else ``None``."""
    cfg = env.config
    setting = (
        cfg.reflection_activate_after_idle_ms
        if reflection
        else cfg.observation_activate_after_idle_ms
    )
    model = inp.actor_model or record.get("last_actor_model")
    ttl = _ttl(setting, model, env.cache_retention)
    idle = _idle_ms(record, now)
    if ttl is not None and idle is not None and idle >= ttl:
        return "ttl"
    on_change = (
        cfg.reflection_activate_on_provider_change
        if reflection
        else cfg.observation_activate_on_provider_change
    )
    last = record.get("last_actor_model")
    if on_change and inp.actor_model and last and inp.actor_model != last:
        return "provider_change"
    return None


def insert_gap_reminder(env: TurnEnv, inp: TurnInput, out: TurnOutcome, now: datetime) -> None:
    """Before a new user message that follows a long pause, insert a time-gap reminder."""
    new_ids = {id(m) for m in out.stamped}
    index = next(
        (
            i
            for i in range(len(out.window) - 1, -1, -1)
            if id(out.window[i]) in new_ids and isinstance(out.window[i], HumanMessage)
        ),
        None,
    )
    if index is None:
        return
    message = out.window[index]
    if index > 0 and out.window[index - 1].id == f"__temporal_gap_{message.id}":
        return
    previous = message_time(out.window[index - 1]) if index > 0 else None
    if previous is None and out.record.get("last_activity_at"):
        previous = datetime.fromisoformat(str(out.record["last_activity_at"]))
    if previous is None or previous >= now:
        return
    reminder = gap_reminder(previous, now, timezone=out.record["timezone"], precedes=message.id)
    if reminder is None:
        return
    out.window.insert(index, reminder)
    out.inserted.append(reminder)
    meta = reminder.response_metadata[OM_META_KEY]
    emit_event(
        env,
        inp,
        TemporalGapEvent(
            message=reminder.text,
            gap_text=meta["gap_text"],
            gap_ms=meta["gap_ms"],
            timestamp=meta["ts"],
            precedes_message_id=message.id,
            thread_id=inp.thread_id,
        ),
    )


def buffer_candidates(messages: Sequence[BaseMessage], *, idle: bool) -> list[BaseMessage]:
    """The longest prefix of ``messages`` a background buffer may take.

    Never across a pending tool call; the current turn (from the last human message on) is
    left alone until the turn ends (``idle``), so activation never takes the message the model
    is answering.
    """
    end = len(messages)
    if not idle:
        humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
        if humans:
            end = humans[-1]
    points = [p for p in safe_cut_points(messages) if p <= end]
    return list(messages[: points[-1]]) if points else []


def sync_observation_due(env: TurnEnv, record: OMRecord, tokens: int, thread_id: str) -> bool:
    """Whether a step would observe synchronously now (for the graph's routers)."""
    cfg = env.config
    threshold = env.message_threshold(record)
    if cfg.buffering_enabled and env.running(buffer_key(env, record)):
        return tokens >= cfg.observation.block_after_tokens
    return tokens >= threshold


def sync_reflection_due(env: TurnEnv, record: OMRecord) -> bool:
    """Whether a step would reflect synchronously now (for the graph's routers)."""
    cfg = env.config
    tokens = record["observation_tokens"]
    archive = cfg.observation.archive
    if archive is not None:  # archive mode: the same step retires groups instead
        return tokens >= archive.after_tokens
    if not should_reflect(
        tokens, cfg.reflection.observation_tokens_abs, record["reflection_suppressed_at_tokens"]
    ):
        return False
    # Resource scope buffers observations only: its reflection is always synchronous.
    if not cfg.buffering_enabled or cfg.scope == "resource":
        return True
    return tokens >= cfg.reflection.block_after_tokens


def arrives_oversized(
    window: Sequence[BaseMessage],
    count: Callable[[Sequence[BaseMessage]], int],
    threshold: int,
) -> bool:
    """Whether the newest message is a user message that crosses ``threshold`` on its own.

    Such a message is observed at the step it arrives (with everything before it), so one
    poison message never sits in the window turn after turn: the agent answers from its
    observation (head and tail kept) and can recall the raw text. The agent's own work on the
    turn in progress (its replies, tool calls and tool results after the last user message) is
    exempt: the agent needs a large tool result it just asked for to finish the turn, so that
    is observed at a later step (once the turn is over, or at ``block_after`` through the
    usual cut that keeps the newest messages).
    """
    if not window or not isinstance(window[-1], HumanMessage):
        return False
    return count(window[-1:]) >= threshold
