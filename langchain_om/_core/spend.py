"""Spend of memory's own model calls over rolling windows, as a JSON-native ledger (pure).

Every model call memory makes for itself (the Observer, the Reflector, schema extractors,
background buffering) is charged to a ledger: the tokens it used (the provider's input plus
output when it reports them, else the estimate) and, once per cycle, one cycle. The ledger
keeps one bucket per minute for the last day; :func:`spend_check` sums the buckets inside each
limit's window (an hour or a day, rolling, by the engine's clock) and says whether a new cycle
may start, and when the window has rolled far enough for the next one.

A bucket is dated by its *last* charge, so a charge never leaves a window early (at most a
minute late): a budget is never exceeded by rounding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

__all__ = [
    "LIMIT_NAMES",
    "LimitName",
    "LimitUsage",
    "SpendCheck",
    "SpendLedger",
    "charge",
    "coerce_ledger",
    "empty_ledger",
    "mark_warned",
    "spend_check",
]

HOUR = 3_600.0
DAY = 86_400.0
BUCKET_SECONDS = 60
LEDGER_VERSION = 1

LimitName = Literal["tokens_per_hour", "tokens_per_day", "cycles_per_hour", "cycles_per_day"]
LIMIT_NAMES: tuple[LimitName, ...] = (
    "tokens_per_hour",
    "tokens_per_day",
    "cycles_per_hour",
    "cycles_per_day",
)
_WINDOW: dict[str, float] = {
    "tokens_per_hour": HOUR,
    "tokens_per_day": DAY,
    "cycles_per_hour": HOUR,
    "cycles_per_day": DAY,
}


class SpendLedger(TypedDict):
    """What memory's calls cost for one thread or resource over the last day."""

    v: int
    per: Literal["thread", "resource"]
    buckets: list[list[float]]
    """``[minute, last_at, tokens, cycles]`` per minute with charges, oldest first (epoch
    seconds; ``last_at`` is the time of the bucket's latest charge)."""
    limits: dict[str, int]
    """The limits in effect at the last charge (so ``inspect`` can show what remains)."""
    warned_until: float | None
    """Epoch seconds until which the exhausted budget was already reported with a WARNING."""


def empty_ledger(per: Literal["thread", "resource"]) -> SpendLedger:
    """A ledger with no charges."""
    return SpendLedger(v=LEDGER_VERSION, per=per, buckets=[], limits={}, warned_until=None)


def coerce_ledger(value: Any, per: Literal["thread", "resource"]) -> SpendLedger:
    """``value`` as a ledger (a stored one), else an empty one; malformed buckets are dropped."""
    if not isinstance(value, Mapping) or value.get("v") != LEDGER_VERSION:
        return empty_ledger(per)
    buckets = [
        [float(x) for x in b]
        for b in value.get("buckets") or []
        if isinstance(b, Sequence) and len(b) == 4 and all(_number(x) for x in b)
    ]
    limits = {
        str(k): int(v)
        for k, v in (value.get("limits") or {}).items()
        if k in _WINDOW and _number(v)
    }
    warned: Any = value.get("warned_until")
    return SpendLedger(
        v=LEDGER_VERSION,
        per=per,
        buckets=buckets,
        limits=limits,
        warned_until=float(warned) if _number(warned) else None,
    )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _pruned(buckets: Sequence[Sequence[float]], now: float) -> list[list[float]]:
    """Buckets still inside the longest window (a day)."""
    return [list(b) for b in buckets if b[1] > now - DAY]


def charge(
    ledger: SpendLedger,
    *,
    now: float,
    tokens: int,
    cycles: int,
    limits: Mapping[str, int],
) -> SpendLedger:
    """``ledger`` with ``tokens`` and ``cycles`` charged at ``now`` (epoch seconds)."""
    buckets = _pruned(ledger["buckets"], now)
    minute = float(int(now // BUCKET_SECONDS) * BUCKET_SECONDS)
    if buckets and buckets[-1][0] == minute:
        last = buckets[-1]
        buckets[-1] = [minute, max(last[1], now), last[2] + tokens, last[3] + cycles]
    else:
        buckets.append([minute, now, float(tokens), float(cycles)])
    buckets.sort(key=lambda b: b[1])
    return SpendLedger(
        v=LEDGER_VERSION,
        per=ledger["per"],
        buckets=buckets,
        limits=dict(limits) or dict(ledger["limits"]),
        warned_until=ledger["warned_until"],
    )


def mark_warned(ledger: SpendLedger, until: float) -> SpendLedger:
    """``ledger`` noting that the budget exhausted until ``until`` was reported."""
    return SpendLedger(**{**ledger, "warned_until": until})


@dataclass(frozen=True)
class LimitUsage:
    """One limit: what its window used, the limit, what remains."""

    name: LimitName
    used: int
    limit: int

    @property
    def remaining(self) -> int:
        """What may still be spent in the window (0 when used up)."""
        return max(0, self.limit - self.used)

    @property
    def exhausted(self) -> bool:
        """Whether no new cycle may start under this limit."""
        return self.used >= self.limit


@dataclass(frozen=True)
class SpendCheck:
    """The budget at one moment: each limit's usage, and whether a cycle may start."""

    limits: tuple[LimitUsage, ...]
    tokens_last_hour: int
    tokens_last_day: int
    cycles_last_hour: int
    cycles_last_day: int
    exhausted: LimitUsage | None
    """The first limit used up (in :data:`LIMIT_NAMES` order), or ``None``."""
    resumes_at: float | None
    """Epoch seconds at which every used-up limit has room again (``None``: none is)."""

    @property
    def allowed(self) -> bool:
        """Whether a new cycle may start."""
        return self.exhausted is None


def _used(buckets: Sequence[Sequence[float]], now: float, window: float, column: int) -> float:
    return sum(b[column] for b in buckets if b[1] > now - window)


def _resumes(
    buckets: Sequence[Sequence[float]], now: float, usage: LimitUsage, column: int
) -> float:
    """When enough of the window's charges have left it for ``usage`` to have room again."""
    window = _WINDOW[usage.name]
    used = float(usage.used)
    for bucket in sorted((b for b in buckets if b[1] > now - window), key=lambda b: b[1]):
        used -= bucket[column]
        if used < usage.limit:
            return bucket[1] + window
    return now + window  # only charges not stored yet remain: they leave a window from now


def spend_check(
    ledger: SpendLedger,
    limits: Mapping[str, int],
    *,
    now: float,
    extra_tokens: int = 0,
    extra_cycles: int = 0,
) -> SpendCheck:
    """The budget at ``now``: the ledger's usage (plus charges not stored yet) against ``limits``.

    Args:
        ledger: the stored charges.
        limits: limit name → value (only the limits that are set).
        now: epoch seconds.
        extra_tokens: tokens spent but not in ``ledger`` yet (this step's own calls).
        extra_cycles: cycles likewise.
    """
    buckets = _pruned(ledger["buckets"], now)
    tokens_hour = int(_used(buckets, now, HOUR, 2)) + extra_tokens
    tokens_day = int(_used(buckets, now, DAY, 2)) + extra_tokens
    cycles_hour = int(_used(buckets, now, HOUR, 3)) + extra_cycles
    cycles_day = int(_used(buckets, now, DAY, 3)) + extra_cycles
    used = {
        "tokens_per_hour": tokens_hour,
        "tokens_per_day": tokens_day,
        "cycles_per_hour": cycles_hour,
        "cycles_per_day": cycles_day,
    }
    usages = tuple(
        LimitUsage(name, used[name], int(limits[name])) for name in LIMIT_NAMES if name in limits
    )
    spent = [u for u in usages if u.exhausted]
    resumes = (
        max(_resumes(buckets, now, u, 2 if u.name.startswith("tokens") else 3) for u in spent)
        if spent
        else None
    )
    return SpendCheck(
        limits=usages,
        tokens_last_hour=tokens_hour,
        tokens_last_day=tokens_day,
        cycles_last_hour=cycles_hour,
        cycles_last_day=cycles_day,
        exhausted=spent[0] if spent else None,
        resumes_at=resumes,
    )
