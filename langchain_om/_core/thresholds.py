"""Threshold and activation arithmetic for background buffering (pure).

Terms:
    pending: unobserved message tokens in the window.
    threshold: pending tokens that trigger observation (``observation.message_tokens``).
    interval: background buffering interval (``observation.buffer_interval_tokens``).
    floor: tokens of raw messages activation tries to leave in the window
        (``observation.retention_floor_tokens``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

RAMP_FACTOR = 1.1
"""Within ``RAMP_FACTOR × interval`` of the threshold the buffering interval halves."""
OVERSHOOT = 0.95
"""Activation may overshoot its target by at most this fraction of the floor."""
MIN_REMAINING_CAP = 1_000
"""Activation keeps at least ``min(MIN_REMAINING_CAP, floor)`` tokens of raw messages."""


def effective_interval(interval: int, pending: int, threshold: int) -> int:
    """The buffering interval, halved near the threshold so a chunk is ready in time."""
    if pending >= threshold - RAMP_FACTOR * interval:
        return max(1, interval // 2)
    return interval


def should_buffer(
    *, unbuffered: int, pending: int, threshold: int, interval: int, idle: bool = False
) -> bool:
    """Start a background buffer now?

    ``unbuffered`` is the tokens of window messages not covered by a stored chunk. A buffer
    starts once a full (effective) interval of them has accumulated, and never for less than
    half an interval; at turn end (``idle``, i.e. ``buffer_on_idle``) any remainder is buffered.
    """
    if unbuffered <= 0:
        return False
    if idle:
        return True
    step = effective_interval(interval, pending, threshold)
    return unbuffered >= step and unbuffered >= interval // 2


@dataclass(frozen=True)
class ActivationChoice:
    """How many leading chunks to activate and what that leaves."""

    count: int
    removed_tokens: int
    remaining_tokens: int


def choose_activation(
    chunk_message_tokens: Sequence[int],
    *,
    pending: int,
    floor: int,
    force_max: bool = False,
) -> ActivationChoice:
    """Choose the chunk boundary that best leaves ``floor`` tokens of raw messages.

    Walks the cumulative message tokens of the chunks (in order) and compares the boundary
    just over the target removal (``pending - floor``) with the one just under it:

    * ``force_max`` (beyond ``block_after``): take the over boundary if it still leaves the
      minimum remaining window;
    * otherwise the over boundary when its overshoot is at most ``OVERSHOOT × floor`` and it
      leaves the minimum; else the under boundary when it leaves the minimum; else the over
      boundary anyway; else one chunk.

    Returns 0 chunks only when there are none.
    """
    if not chunk_message_tokens:
        return ActivationChoice(0, 0, pending)
    target = max(0, pending - floor)
    min_remaining = min(MIN_REMAINING_CAP, floor)
    cumulative: list[int] = []
    total = 0
    for tokens in chunk_message_tokens:
        total += tokens
        cumulative.append(total)
    over = next((i for i, c in enumerate(cumulative) if c >= target), None)
    under = max((i for i, c in enumerate(cumulative) if c < target), default=None)

    def leaves(i: int) -> int:
        return pending - cumulative[i]

    if force_max and over is not None and leaves(over) >= min_remaining:
        pick = over
    elif (
        over is not None
        and cumulative[over] - target <= OVERSHOOT * floor
        and leaves(over) >= min_remaining
    ):
        pick = over
    elif under is not None and leaves(under) >= min_remaining:
        pick = under
    elif over is not None:
        pick = over
    else:
        pick = len(cumulative) - 1 if force_max else 0
    return ActivationChoice(pick + 1, cumulative[pick], max(0, leaves(pick)))


def chunk_chain(
    window_ids: Sequence[str | None], chunks: Sequence[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """Split stored chunks into the valid chain and the stale rest.

    A valid chain covers the window from its first message on: chunk 1 covers a prefix,
    chunk 2 the messages right after it, and so on (``message_ids`` in window order). Chunks
    that do not fit (their messages were observed another way, or belong to another fork)
    are stale.
    """
    by_first: dict[str, Mapping[str, Any]] = {}
    for chunk in chunks:
        ids = chunk.get("message_ids") or []
        if ids:
            by_first.setdefault(str(ids[0]), chunk)
    chain: list[Mapping[str, Any]] = []
    position = 0
    while position < len(window_ids):
        found = by_first.get(str(window_ids[position]))
        if found is None:
            break
        ids = found["message_ids"]
        span = window_ids[position : position + len(ids)]
        if list(span) != list(ids) and [str(i) for i in span] != [str(i) for i in ids]:
            break
        chain.append(found)
        position += len(ids)
    used = {id(c) for c in chain}
    stale = [c for c in chunks if id(c) not in used]
    return chain, stale


def message_threshold(
    message_tokens: int,
    *,
    observation_tokens: int,
    logged_tokens: int,
    share_budget: bool,
) -> int:
    """Unobserved-message tokens that trigger observation.

    With a shared budget the messages may use what the observation log (``logged_tokens`` of
    ``observation_tokens``) leaves free, never less than ``message_tokens``.
    """
    if share_budget:
        return max(message_tokens + observation_tokens - logged_tokens, message_tokens)
    return message_tokens
