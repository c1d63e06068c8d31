"""Snapshot retention (domain/retention.py): which snapshots expire_end lets go, and option parsing.

Every case runs on snapshots 1..20 of one table whose snapshot i was committed at i seconds, read at
20 s ("now"), unless it says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from coordinator.domain.retention import (
    CONSUMER_EXPIRATION,
    EXECUTION_MODE,
    EXPIRE_LIMIT,
    NUM_RETAINED_MAX,
    NUM_RETAINED_MIN,
    TIME_RETAINED,
    UNBOUNDED,
    Retention,
    expire_end,
    parse_duration_ms,
)

EARLIEST, LATEST, NOW = 1, 20, 20_000
YOUNG = 10**9  # time-retained so long that no snapshot is old enough


def committed_at_id_seconds(snapshot_id: int) -> int:
    return snapshot_id * 1000


def end(
    *,
    retained_min: int = 1,
    retained_max: int = UNBOUNDED,
    time_retained_ms: int = 0,
    expire_limit: int = 50,
    consumer_next: int | None = None,
    earliest: int = EARLIEST,
    time_of: Callable[[int], int] = committed_at_id_seconds,
) -> int:
    retention = Retention(retained_min, retained_max, time_retained_ms, expire_limit)
    return expire_end(
        earliest, LATEST, retention, consumer_next=consumer_next, time_millis_of=time_of, now_millis=NOW
    )


@pytest.mark.parametrize(
    ("kwargs", "first_kept"),
    [
        # snapshot.num-retained.min
        pytest.param({"retained_min": 20}, 1, id="min 20 of 20 snapshots: nothing expires"),
        pytest.param({"retained_min": 21}, 1, id="min above the snapshot count: nothing expires"),
        pytest.param({"retained_min": 19}, 2, id="min 19 of 20: snapshot 1 expires"),
        pytest.param({"retained_min": 1}, 20, id="min 1 with everything old: all but the latest expire"),
        # snapshot.num-retained.max, with every snapshot younger than time-retained
        pytest.param({"time_retained_ms": YOUNG}, 1, id="young snapshots within max: nothing expires"),
        pytest.param(
            {"time_retained_ms": YOUNG, "retained_max": 5}, 16, id="max 5: young snapshots beyond it expire"
        ),
        pytest.param({"time_retained_ms": YOUNG, "retained_max": 20}, 1, id="max 20 of 20: none expires"),
        pytest.param({"time_retained_ms": YOUNG, "retained_max": 19}, 2, id="max 19 of 20: 1 expires"),
        pytest.param(
            {"time_retained_ms": YOUNG, "retained_min": 10, "retained_max": 10}, 11,
            id="min = max = 10: exactly the ten newest stay",
        ),
        # snapshot.time-retained (now 20 s; snapshot i committed at i s)
        pytest.param({"time_retained_ms": 5_000}, 15, id="time-retained 5 s: 5 s old stays"),
        pytest.param({"time_retained_ms": 4_999}, 16, id="time-retained 4.999 s: 5 s old expires"),
        pytest.param(
            {"time_retained_ms": 5_000, "retained_min": 10}, 11,
            id="num-retained.min wins over time-retained",
        ),
        pytest.param(
            {"time_retained_ms": 5_000, "retained_max": 3}, 18,
            id="num-retained.max wins over time-retained",
        ),
        pytest.param(
            {"time_retained_ms": 5_000, "time_of": lambda i: NOW if i == 4 else i * 1000}, 4,
            id="a young snapshot stops expiry even if later ones are old",
        ),
        # snapshot.expire.limit
        pytest.param({"expire_limit": 5}, 6, id="limit 5: at most 5 snapshots per call"),
        pytest.param({"expire_limit": 19}, 20, id="limit 19: exactly enough"),
        pytest.param({"expire_limit": 5, "earliest": 10}, 15, id="the limit counts from earliest"),
        # consumers
        pytest.param({"consumer_next": 7}, 7, id="a consumer's next snapshot stays"),
        pytest.param({"consumer_next": 1}, 1, id="a consumer at the earliest snapshot: nothing expires"),
        pytest.param({"consumer_next": 0}, 1, id="a consumer before the earliest snapshot: nothing expires"),
        pytest.param({"consumer_next": 25}, 20, id="a consumer past the latest changes nothing"),
        # after an earlier expiration
        pytest.param({"earliest": 10}, 20, id="from earliest 10: up to the latest"),
        pytest.param(
            {"earliest": 10, "time_retained_ms": YOUNG, "retained_max": 15}, 10,
            id="from earliest 10, max 15 of 11 remaining: nothing expires",
        ),
    ],
)  # fmt: skip
def test_expire_end(kwargs: dict[str, object], first_kept: int) -> None:
    assert end(**kwargs) == first_kept  # type: ignore[arg-type]


def test_the_time_of_a_snapshot_is_read_only_where_it_decides() -> None:
    """Reading a snapshot's time costs a storage read; snapshots beyond num-retained.max need none."""
    read: list[int] = []

    def time_of(snapshot_id: int) -> int:
        read.append(snapshot_id)
        return committed_at_id_seconds(snapshot_id)

    assert end(retained_max=5, time_retained_ms=5_000, time_of=time_of) == 16
    assert read == [16]


def test_retention_defaults_are_paimons() -> None:
    assert Retention.of({}) == Retention(
        retained_min=10,
        retained_max=UNBOUNDED,
        time_retained_ms=3_600_000,
        expire_limit=50,
        execution_mode="sync",
        consumer_expiration_ms=None,
    )


def test_retention_reads_every_option() -> None:
    options = {
        NUM_RETAINED_MIN: "2",
        NUM_RETAINED_MAX: "4",
        TIME_RETAINED: "30 min",
        EXPIRE_LIMIT: "7",
        EXECUTION_MODE: "async",
        CONSUMER_EXPIRATION: "1 d",
    }
    assert Retention.of(options) == Retention(2, 4, 1_800_000, 7, "async", 86_400_000)


def test_min_equal_to_max_is_allowed() -> None:
    assert Retention.of({NUM_RETAINED_MIN: "3", NUM_RETAINED_MAX: "3"}).retained_max == 3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({NUM_RETAINED_MIN: "5", NUM_RETAINED_MAX: "4"}, "must not exceed", id="min above max"),
        pytest.param({NUM_RETAINED_MAX: "5"}, "must not exceed", id="max below the default min 10"),
        pytest.param({NUM_RETAINED_MIN: "0"}, "at least 1", id="min 0"),
        pytest.param({NUM_RETAINED_MAX: "-1"}, "at least 1", id="negative max"),
        pytest.param({EXPIRE_LIMIT: "0"}, "at least 1", id="limit 0"),
        pytest.param({NUM_RETAINED_MIN: "ten"}, "must be an integer", id="min not a number"),
        pytest.param({EXECUTION_MODE: "later"}, "'sync' or 'async'", id="unknown execution mode"),
        pytest.param({TIME_RETAINED: "1 fortnight"}, "not a duration", id="unknown time unit"),
        pytest.param({CONSUMER_EXPIRATION: "1.5 h"}, "not a duration", id="fractional consumer expiration"),
    ],
)
def test_retention_rejects(options: dict[str, str], message: str) -> None:
    key = next(iter(options))
    with pytest.raises(ValueError, match=message) as raised:
        Retention.of(options)
    assert key in str(raised.value), "the error names the option"


@pytest.mark.parametrize(
    ("text", "millis"),
    [("1 h", 3_600_000), ("30min", 1_800_000), ("10 s", 10_000), ("10", 10_000), ("500 ms", 500)],
)
def test_parse_duration(text: str, millis: int) -> None:
    assert parse_duration_ms(text) == millis


@pytest.mark.parametrize("text", ["", "h", "1.5 h", "-1 s", "1 fortnight"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration_ms(text)
