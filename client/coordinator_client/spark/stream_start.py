"""Where a streaming read of a coordinator table stands, and where it starts: offsets and start options.

An offset is a JSON object Spark keeps in the query's checkpoint:

    {"snapshot": s}                everything up to and including snapshot s is delivered (s = 0: the
                                   table had no snapshot; every snapshot from 1 on is still to come)
    {"snapshot": s, "full": true}  (a new query's initial offset) nothing is delivered yet; the table as
                                   it is at snapshot s is the next thing to deliver (as inserts), then the
                                   changes of s + 1 on

A micro-batch (start, end] delivers the pending full table of `start` (if any), then the changes of each
snapshot after it up to and including end's. The end offsets this reader hands Spark also carry the
start they were planned from, {"snapshot": e, "batch": {"from": s, "full": true|false}}: Spark keeps no
initial offset in the checkpoint and, restarted before its first batch was committed, asks initialOffset()
again for that batch's start, which would by then name a later snapshot; the batch is planned from the
`batch` of its end instead, so a replay delivers what the first attempt did.

The start options follow Paimon's `scan.mode`: `start` = latest-full (the default: the table at the latest
snapshot, then changes), latest (only what is committed after the query starts) or earliest (the table at
the earliest retained snapshot, then changes); or `snapshot-id` = N (the changes of snapshot N on). They
count only for a new query: a query restarted from its checkpoint resumes at its checkpointed offset.
`timestamp` (epoch milliseconds or ISO-8601, as for a batch read) starts after the snapshot committed at
or before that time, as Paimon's from-timestamp.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coordinator_client.client import CoordinatorClient
from coordinator_client.errors import NotFound
from coordinator_client.models import REF_NAME_PATTERN
from coordinator_client.spark.options import OptionError, optional_int
from coordinator_client.spark.time_travel import (
    SNAPSHOT_ID,
    TAG,
    TIMESTAMP,
    epoch_millis,
    pinned_snapshot,
    snapshot_at,
)

START_MODES = ("latest-full", "latest", "earliest")
Offset = dict[str, Any]


@dataclass(frozen=True)
class Position:
    """An offset as the reader reasons about it."""

    snapshot: int
    full: bool = False
    """The table at `snapshot` is still to be delivered (and nothing before it has been)."""

    @classmethod
    def of(cls, offset: Mapping[str, Any]) -> Position:
        return cls(int(offset["snapshot"]), bool(offset.get("full", False)))

    @classmethod
    def planned(cls, start: Mapping[str, Any], end: Mapping[str, Any]) -> Position:
        """Where the batch (start, end] begins: as recorded in its end when it has it."""
        batch = end.get("batch")
        if batch is None:
            return cls.of(start)
        return cls(int(batch["from"]), bool(batch["full"]))

    def offset(self) -> Offset:
        return {"snapshot": self.snapshot, "full": True} if self.full else {"snapshot": self.snapshot}

    @property
    def next_needed(self) -> int:
        """The first snapshot the query still has to read: what its consumer must keep from expiring."""
        return self.snapshot if self.full else self.snapshot + 1

    @property
    def first_change(self) -> int:
        """The first snapshot whose changes (rather than full table) are still to be delivered."""
        return self.snapshot + 1


@dataclass(frozen=True)
class StreamSettings:
    """The streaming options of the data source, checked when the query starts."""

    start: str = "latest-full"
    snapshot_id: int | None = None
    timestamp_millis: int | None = None
    max_snapshots: int | None = None
    consumer_id: str | None = None

    @classmethod
    def of(cls, options: Mapping[str, str]) -> StreamSettings:
        if options.get(TAG) is not None:
            raise OptionError(
                TAG, "a tag pins a batch read; a stream starts at start, snapshot-id or timestamp"
            )
        given = [name for name in (SNAPSHOT_ID, TIMESTAMP) if options.get(name) is not None]
        if len(given) > 1:
            raise OptionError(given[1], f"give at most one of {', '.join(given)}")
        start = options.get("start")
        if start is not None and given:
            raise OptionError(given[0], f"give either start or {given[0]}, not both (start={start!r})")
        start = (start or "latest-full").strip().lower()
        if start not in START_MODES:
            raise OptionError("start", f"expected one of {', '.join(START_MODES)}, got {start!r}")
        snapshot_id = optional_int(options, SNAPSHOT_ID, minimum=1)
        timestamp = options.get(TIMESTAMP)
        millis = None if timestamp is None else epoch_millis(timestamp)
        max_snapshots = optional_int(options, "max-snapshots-per-batch", minimum=1)
        consumer_id = options.get("consumer-id")
        if consumer_id is not None and not re.fullmatch(REF_NAME_PATTERN, consumer_id):
            raise OptionError(
                "consumer-id",
                f"expected letters, digits, '_', '.' or '-' (at most 200, not starting with '.' or '-'), "
                f"got {consumer_id!r}",
            )
        return cls(start, snapshot_id, millis, max_snapshots, consumer_id)

    def initial(self, client: CoordinatorClient, table_id: str) -> Position:
        """Where a new query starts, as the table stands now: `snapshot-id` N delivers the changes of N
        on (N must exist), `timestamp` those of the snapshots committed after it (Paimon's from-snapshot
        and from-timestamp), the `start` modes as the module says."""
        if self.snapshot_id is not None:
            pinned_snapshot(client, table_id, {SNAPSHOT_ID: str(self.snapshot_id)})  # it must exist
            return Position(self.snapshot_id - 1)
        if self.timestamp_millis is not None:
            return Position(snapshot_at(client, table_id, self.timestamp_millis))
        latest = latest_snapshot_id(client, table_id)
        if latest == 0:
            return Position(0)  # an empty table: every snapshot is a change to deliver
        if self.start == "latest":
            return Position(latest)
        if self.start == "earliest":
            return Position(earliest_snapshot_id(client, table_id), full=True)
        return Position(latest, full=True)


def latest_snapshot_id(client: CoordinatorClient, table_id: str) -> int:
    """The latest snapshot's id, 0 when the table has none."""
    try:
        return client.latest_snapshot(table_id).id
    except NotFound:
        client.get_table(table_id)  # NotFound of the table itself goes up
        return 0


def earliest_snapshot_id(client: CoordinatorClient, table_id: str) -> int:
    """The oldest snapshot expiration has kept (snapshots are listed newest first, page by page)."""
    earliest, before = 0, None
    while True:
        page = client.list_snapshots(table_id, limit=1000, before=before).snapshots
        if not page:
            return earliest
        earliest = before = page[-1].id


def batch_end(start: Mapping[str, Any], latest: int, cap: int | None) -> Offset:
    """The end offset of the next micro-batch from `start` with `latest` committed: at most `cap`
    snapshots (a pending full table counts as one); `start` itself when there is nothing to deliver."""
    begin = Position.of(start)
    if begin.full:
        last = latest if cap is None else begin.snapshot + cap - 1
        end = max(begin.snapshot, min(latest, last))
    elif latest <= begin.snapshot:  # nothing new (or the table was rolled back below it)
        return dict(start)
    else:
        end = min(latest, latest if cap is None else begin.snapshot + cap)
    return {"snapshot": end, "batch": {"from": begin.snapshot, "full": begin.full}}
