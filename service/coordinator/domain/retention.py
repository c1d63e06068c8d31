"""Snapshot retention as Paimon decides it (ExpireSnapshotsImpl.expire): which snapshots may go now.

The decision is pure: the caller supplies the earliest and latest ids, the consumers' smallest next
snapshot and each snapshot's commit time. Deleting what the decision allows is the maintenance use
case's job, in Paimon's safe order.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

_DURATION = re.compile(r"^\s*(\d+)\s*([a-zµ]*)\s*$", re.IGNORECASE)
_UNIT_MS: dict[str, float] = {
    "ns": 1e-6, "nano": 1e-6, "nanos": 1e-6, "nanosecond": 1e-6, "nanoseconds": 1e-6,
    "us": 1e-3, "µs": 1e-3, "micro": 1e-3, "micros": 1e-3, "microsecond": 1e-3, "microseconds": 1e-3,
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "": 1000, "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}  # fmt: skip
"""Paimon's TimeUtils units; a bare number is seconds, as in Paimon."""

UNBOUNDED = sys.maxsize

NUM_RETAINED_MIN = "snapshot.num-retained.min"
NUM_RETAINED_MAX = "snapshot.num-retained.max"
TIME_RETAINED = "snapshot.time-retained"
EXPIRE_LIMIT = "snapshot.expire.limit"
EXECUTION_MODE = "snapshot.expire.execution-mode"
CONSUMER_EXPIRATION = "consumer.expiration-time"


def parse_duration_ms(text: str) -> int:
    """'1 h', '30min', '10 s', '500 ms' in milliseconds; raises ValueError on anything else."""
    match = _DURATION.match(text)
    if match is None or match.group(2).lower() not in _UNIT_MS:
        raise ValueError(f"not a duration: {text!r} (use e.g. '1 h', '30 min', '10 s')")
    return int(int(match.group(1)) * _UNIT_MS[match.group(2).lower()])


@dataclass(frozen=True)
class Retention:
    """The retention options of a table, with Paimon's defaults."""

    retained_min: int = 10
    retained_max: int = UNBOUNDED
    time_retained_ms: int = 3_600_000
    expire_limit: int = 50
    execution_mode: Literal["sync", "async"] = "sync"
    consumer_expiration_ms: int | None = None

    @classmethod
    def of(cls, options: Mapping[str, str]) -> Retention:
        """Parse the table options; raises ValueError naming the option that is wrong."""
        retained_min = _positive(options, NUM_RETAINED_MIN, cls.retained_min)
        retained_max = _positive(options, NUM_RETAINED_MAX, cls.retained_max)
        if retained_min > retained_max:
            raise ValueError(
                f"{NUM_RETAINED_MIN} ({retained_min}) must not exceed {NUM_RETAINED_MAX} ({retained_max})"
            )
        mode = options.get(EXECUTION_MODE, "sync")
        if mode not in ("sync", "async"):
            raise ValueError(f"{EXECUTION_MODE} must be 'sync' or 'async', got {mode!r}")
        time_retained = _duration(options, TIME_RETAINED)
        return cls(
            retained_min=retained_min,
            retained_max=retained_max,
            time_retained_ms=cls.time_retained_ms if time_retained is None else time_retained,
            expire_limit=_positive(options, EXPIRE_LIMIT, cls.expire_limit),
            execution_mode="sync" if mode == "sync" else "async",
            consumer_expiration_ms=_duration(options, CONSUMER_EXPIRATION),
        )


def expire_end(
    earliest: int,
    latest: int,
    retention: Retention,
    *,
    consumer_next: int | None,
    time_millis_of: Callable[[int], int],
    now_millis: int,
) -> int:
    """The first snapshot to keep: [earliest, end) may be expired now (nothing when end <= earliest).

    Bounded by num-retained.min, by the smallest snapshot a consumer has yet to read, and by
    expire.limit per call; snapshots from max(latest - num-retained.max + 1, earliest) on are expired
    only while they are older than time-retained.
    """
    if latest - earliest + 1 <= retention.retained_min:
        return earliest
    keep_from = latest - retention.retained_min + 1
    if consumer_next is not None:
        keep_from = min(keep_from, consumer_next)
    keep_from = min(keep_from, earliest + retention.expire_limit)
    older_than = now_millis - retention.time_retained_ms
    unconditional = max(latest - retention.retained_max + 1, earliest)
    for snapshot_id in range(unconditional, keep_from):
        if time_millis_of(snapshot_id) >= older_than:
            return max(snapshot_id, earliest)
    return max(keep_from, earliest)


def _positive(options: Mapping[str, str], key: str, default: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{key} must be an integer, got {raw!r}") from None
    if value < 1:
        raise ValueError(f"{key} must be at least 1, got {value}")
    return value


def _duration(options: Mapping[str, str], key: str) -> int | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        return parse_duration_ms(raw)
    except ValueError as error:
        raise ValueError(f"{key}: {error}") from None
