"""The events a commit point writes into the outbox (db/repositories/events.py): one per committed
member, built before the commit point from what was decided, so writing them is one more INSERT (or one
more CTE of the one-statement commit point) and no more work under the database's locks."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from coordinator.commit.member import Committed, TableDecisions
from coordinator.db.repositories.events import NewEvent
from coordinator.usecases.tables import Table
from paimon_format.manifest import FileKind, ManifestEntry
from paimon_format.snapshot import Snapshot


def commit_events(decided: TableDecisions, now: float) -> list[NewEvent]:
    """An event per committed member of one table, in snapshot order."""
    return [_commit_event(decided.table, c, now) for c in decided.committed]


def _commit_event(table: Table, committed: Committed, now: float) -> NewEvent:
    member, built = committed.member, committed.built
    details: dict[str, Any] = {"commitKinds": [s.commit_kind for s in built.snapshots]}
    if member.transaction:
        details["transaction"] = list(member.transaction)
    return NewEvent(
        table.id,
        table.database,
        table.name,
        table.uuid,
        "transaction" if member.transaction else "commit",
        now,
        snapshot_ids=[s.id for s in built.snapshots],
        commit_user=member.resolved.commit_user,
        commit_identifier=member.resolved.identifier,
        partitions=partitions_touched(table, (e for s in built.snapshots for e in built.deltas[s.id])),
        details=details,
    )


def partitions_touched(table: Table, entries: Iterable[ManifestEntry]) -> list[dict[str, Any]]:
    """Per partition the entries touch: its values and the data files and rows added and removed."""
    counts: dict[bytes, list[int]] = {}
    for entry in entries:
        c = counts.setdefault(entry.partition, [0, 0, 0, 0])
        if entry.kind == FileKind.ADD:
            c[0] += 1
            c[2] += entry.file.row_count
        else:
            c[1] += 1
            c[3] += entry.file.row_count
    return [
        {
            "partition": table.shape.partition_json(partition),
            "addedFiles": c[0],
            "removedFiles": c[1],
            "addedRows": c[2],
            "removedRows": c[3],
        }
        for partition, c in counts.items()
    ]


def outside_event(table: Table, snapshot: Snapshot, now: float, *, replacing: bool = False) -> NewEvent:
    """A snapshot a writer outside the coordinator committed on storage, adopted at a catch-up (or, with
    `replacing`, recorded in place of one of ours it overwrote). Its delta is not read for this, so the
    event names no partitions."""
    details: dict[str, Any] = {"commitKinds": [snapshot.commit_kind], "outside": True}
    if replacing:
        details["replaced"] = snapshot.id
    return NewEvent(
        table.id,
        table.database,
        table.name,
        table.uuid,
        "commit",
        now,
        snapshot_ids=[snapshot.id],
        commit_user=snapshot.commit_user,
        commit_identifier=snapshot.commit_identifier,
        details=details,
    )


def reapplied(events: Iterable[NewEvent]) -> list[NewEvent]:
    """Events of acknowledged commits an outside writer overwrote, applied again on top: the same commit
    (its first event stands) with new snapshots."""
    return [replace(e, details={**(e.details or {}), "reapplied": True}) for e in events]
