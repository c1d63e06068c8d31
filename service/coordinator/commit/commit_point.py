"""The commit point: one database transaction that makes decided commits stand, and the finish after it.

A snapshot is serialised once, when it is built (`SnapshotFile`): the same text goes into its database
row at the commit point and into `snapshot-N` on storage, and recovery writes the row's text back as is.
Only after the commit point do the snapshot files appear on storage (publish); the finish then marks
them published, completes the history rows and releases the locks.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError

from coordinator.commit import live_index, outbox
from coordinator.commit.answers import refs
from coordinator.commit.live_index import Delta
from coordinator.commit.member import Committed, Member, TableDecisions
from coordinator.db import repositories as repo
from coordinator.db.engine import autocommit, read_only
from coordinator.db.repositories import live_files, one_statement
from coordinator.db.repositories.events import NewEvent, insert_events
from coordinator.domain.conflicts import Conflict
from coordinator.domain.table_stats import FileDelta, combined, file_delta
from coordinator.locks.base import Lease
from coordinator.usecases.snapshot_file import SnapshotFile
from coordinator.usecases.table_hold import Hold, lock_lost
from coordinator.usecases.tables import Table, version_of
from coordinator_client.models import ConflictModel
from paimon_format.entry_encoding import encode_entries
from paimon_format.manifest import FileKind
from paimon_format.snapshot import Snapshot


class DecideAgain(Exception):
    """At the commit point: nothing of one table's change was written, and its members are decided again:
    a record under one of their keys appeared meanwhile (a resend racing its original), answered then."""

    def __init__(self, table_id: str) -> None:
        super().__init__(table_id)
        self.table_id = table_id


class TableChanged(DecideAgain):
    """At the commit point: the table row is no longer the table (uuid) or schema the commits were
    decided against; it was dropped and created again, or changed, without this hold seeing it first."""


class TableConflict(Exception):
    """At the commit point: one table's change was refused, its lease lost (LOCK_LOST) or its head moved
    by someone else (LATEST_SNAPSHOT_MOVED); nothing of it is written."""

    def __init__(self, table_id: str, conflict: Conflict) -> None:
        super().__init__(f"{table_id}: {conflict.message}")
        self.table_id = table_id
        self.conflict = conflict


Refusal = DecideAgain | TableConflict
"""Why the commit point wrote nothing of one table's change."""


@dataclass
class TableChange:
    """What one table's head moves by at a commit point: from `previous_id` through its new snapshots."""

    table: Table
    previous_id: int
    snapshots: list[SnapshotFile]
    history: list[repo.NewCommit]
    file_delta: FileDelta
    """What the snapshots' delta entries do to the live data files, all snapshots together."""
    committed_at: float
    deltas: list[Delta] = field(default_factory=list)
    """Each new snapshot's delta entries: the live-file index advances by them."""
    records: dict[int, Sequence[bytes]] = field(default_factory=dict)
    """The Avro records of those entries where they were encoded already, by snapshot id."""
    events: list[NewEvent] = field(default_factory=list)
    """The outbox rows of the change (commit/outbox.py), written in the same transaction or statement."""


def table_change(decided: TableDecisions, now: float) -> TableChange | None:
    """What the committed members move the table's head by; None when nothing committed."""
    committed = decided.committed
    if not committed:
        return None
    built: list[Delta] = [b for d in committed for b in d.built.in_order()]
    return TableChange(
        decided.table,
        decided.previous_id,
        [SnapshotFile.of(s) for s in decided.snapshots()],
        [history_row(d.member, now, committed=d) for d in committed],
        combined(file_delta(entries) for _, entries in built),
        now,
        built,
        {s: r for d in committed for s, r in d.built.records.items()},
        outbox.commit_events(decided, now),
    )


def commit_point(hold: Hold, changes: Sequence[TableChange]) -> None:
    """All or nothing (a transaction's tables): one database transaction in which every lease is still
    ours, every head pointer moves from the expected snapshot to the change's last one (with the table's
    size), every snapshot and history row is recorded, and the live-file index advances by the snapshots'
    deltas.

    Each table row must still have the uuid and schema id its change was decided against: a table
    dropped and created again, or given other options, meanwhile gets nothing written for the old one.

    Raises:
        TableConflict: LOCK_LOST (a lease ran out) or LATEST_SNAPSHOT_MOVED; nothing is recorded then.
        TableChanged: a table row is another table or schema now; nothing is recorded then.
    """
    with hold.engine.begin() as conn:
        lost = hold.lost_lease(conn, [c.table.id for c in changes])
        if lost is not None:
            raise TableConflict(lost, lock_lost(hold.leases[lost]))
        for change in changes:
            table_id = change.table.id
            expected = version_of(change.table)
            if not change.snapshots:
                if repo.table_version(conn, table_id, for_share=True) != expected:
                    raise TableChanged(table_id)
            elif not _advance(conn, change):
                if repo.table_version(conn, table_id) != expected:
                    raise TableChanged(table_id)
                raise TableConflict(table_id, _head_moved())
            repo.insert_snapshots(conn, table_id, [s.row(published=False) for s in change.snapshots])
            repo.insert_commits(conn, table_id, [h for h in change.history if h.extends is None])
            repo.extend_committed(conn, [h for h in change.history if h.extends is not None])
            live_index.advance(conn, table_id, change.deltas, change.records)
        # Last, so the outbox's serialising lock (events.py) is held only from here to the commit.
        insert_events(conn, [e for c in changes for e in c.events])


def commit_each(hold: Hold, changes: Sequence[TableChange]) -> dict[str, Refusal]:
    """Each table's change stands or falls on its own (a group, or a batch of groups of many tables):
    returns why nothing was written for the tables that were refused; the others' changes are recorded.

    On PostgreSQL the small changes (snapshots that only add a few files) go as one statement for all of
    them (one_statement.py); the others as one transaction, again without a table that refused.

    A history row's key taken (a resend racing its original) refuses the tables written with it.
    """
    leases = hold.leases_in_database()
    small = [c for c in changes if leases is not None and _fits_one_statement(hold.engine, c)]
    refused: dict[str, Refusal] = {}
    if small:
        try:
            refused |= _commit_in_one_statement(hold.engine, leases or {}, small)
        except IntegrityError:
            refused |= {c.table.id: DecideAgain(c.table.id) for c in small}
    rest = [c for c in changes if all(c is not s for s in small)]
    while rest:
        try:
            commit_point(hold, rest)
        except (DecideAgain, TableConflict) as refusal:
            refused[refusal.table_id] = refusal
            rest = [c for c in rest if c.table.id != refusal.table_id]
            continue
        except IntegrityError:
            refused |= {c.table.id: DecideAgain(c.table.id) for c in rest}
        break
    return refused


def _fits_one_statement(engine: Engine, change: TableChange) -> bool:
    """A change one PostgreSQL statement makes (one_statement.py): snapshots (one, or a group's) that only
    add a few files, none of them twice, history rows of their own, and no forgetting of removed index
    rows this time."""
    if engine.dialect.name != "postgresql" or not change.deltas:
        return False
    if change.deltas[-1][0] != change.snapshots[-1].id:
        return False  # the index stands at the last delta's snapshot, the statement at the last snapshot
    entries = [e for _, delta in change.deltas for e in delta]
    return (
        len(entries) < live_files.COPY_FROM
        and all(e.kind == FileKind.ADD for e in entries)
        # One INSERT ... ON CONFLICT may not touch a row twice.
        and len({(e.partition, e.bucket, e.file.level, e.file.file_name) for e in entries}) == len(entries)
        and all(h.extends is None for h in change.history)
        and not any(live_index.forgets_at(snapshot_id) for snapshot_id, _ in change.deltas)
    )


def _commit_in_one_statement(
    engine: Engine, leases: dict[str, Lease], changes: Sequence[TableChange]
) -> dict[str, Refusal]:
    """The commit point of small changes as one statement; returns the refused tables and why."""
    heads = [_head_move(leases[c.table.id], c) for c in changes]
    with autocommit(engine) as conn:
        fenced, moved = one_statement.commit_point(conn, heads)
    refused: dict[str, Refusal] = {}
    for change in changes:
        table_id = change.table.id
        if table_id in moved:
            continue
        if table_id not in fenced:
            refused[table_id] = TableConflict(table_id, lock_lost(leases[table_id]))
        elif changed_since(engine, change.table):
            refused[table_id] = TableChanged(table_id)
        else:
            refused[table_id] = TableConflict(table_id, _head_moved())
    return refused


def _head_move(lease: Lease, change: TableChange) -> one_statement.HeadMove:
    table, last = change.table, change.snapshots[-1]
    snapshot = last.snapshot if last.snapshot is not None else Snapshot.from_json(last.body)
    added = []
    for snapshot_id, entries in change.deltas:
        records = change.records.get(snapshot_id) or encode_entries(entries)
        added += [
            live_files.row_values(table.id, e, snapshot_id, r) for e, r in zip(entries, records, strict=True)
        ]
    return one_statement.HeadMove(
        table.id,
        lease,
        version_of(table),
        change.previous_id,
        last.id,
        snapshot.total_record_count,
        change.file_delta.files,
        change.file_delta.bytes,
        change.committed_at,
        [s.row(published=False) for s in change.snapshots],
        change.history,
        added,
        change.events,
    )


def _head_moved() -> Conflict:
    return Conflict(
        "LATEST_SNAPSHOT_MOVED", "another commit moved the table while this one held the lock", retryable=True
    )


def changed_since(engine: Engine, table: Table) -> bool:
    """Whether the table's row is another table or schema than `table` now."""
    with read_only(engine) as conn:
        return repo.table_version(conn, table.id) != version_of(table)


def _advance(conn: Connection, change: TableChange) -> bool:
    """The head pointer moves, and the table's size with it (domain.table_stats), in one statement."""
    last = change.snapshots[-1]
    snapshot = last.snapshot if last.snapshot is not None else Snapshot.from_json(last.body)
    return repo.advance_latest_with_stats(
        conn,
        change.table.id,
        change.previous_id,
        last.id,
        total_record_count=snapshot.total_record_count,
        files=change.file_delta.files,
        size=change.file_delta.bytes,
        at=change.committed_at,
        version=version_of(change.table),
    )


def stamp_totals(finished: Sequence[TableDecisions]) -> None:
    """Every committed member's total time, from its request to now: once it is published, before the
    finish (which records it) and the answer (which shows it)."""
    ended = time.perf_counter()
    for decided in finished:
        for committed in decided.committed:
            committed.member.phases.total(ended)


def finish(bookkeeping: Engine, finished: Sequence[TableDecisions], hold: Hold, now: float) -> None:
    """One transaction after publishing, for every table the hold changed: mark the snapshots published,
    complete the history (phase timings with their total, stamped before: stamp_totals; rejections) and
    release the locks; losing it in a crash only means publishing again."""
    if not any(decided.committed or decided.rejected for decided in finished):
        return
    leases = hold.leases_in_database()
    if leases is not None and bookkeeping.dialect.name == "postgresql":
        with autocommit(bookkeeping) as conn:
            one_statement.finish(
                conn, [_table_finish(t, lease, finished, now) for t, lease in leases.items()]
            )
        hold.released_by_statement()
        return
    with bookkeeping.begin() as conn:
        for decided in finished:
            published = decided.snapshots()
            if published:
                repo.mark_published(conn, decided.table.id, through=published[-1].id)
            timings = [
                (*d.member.key, d.member.resolved.digest, d.member.phases.timings) for d in decided.committed
            ]
            repo.update_commit_timings(conn, decided.table.id, timings)
            rejections = [history_row(r.member, now, conflict=r.conflict) for r in decided.rejected]
            repo.insert_commits(conn, decided.table.id, rejections)
        hold.release_in(conn)


def _table_finish(
    table_id: str, lease: Lease, finished: Sequence[TableDecisions], now: float
) -> one_statement.TableFinish:
    """One held table's part of the finish, over every TableDecisions of it (re-applied commits first)."""
    decided = [d for d in finished if d.table.id == table_id]
    published = [s.id for d in decided for s in d.snapshots()]
    return one_statement.TableFinish(
        table_id,
        lease,
        published[-1] if published else 0,
        [
            (*c.member.key, c.member.resolved.digest, c.member.phases.timings)
            for d in decided
            for c in d.committed
        ],
        [history_row(r.member, now, conflict=r.conflict) for d in decided for r in d.rejected],
    )


def history_row(
    member: Member, now: float, *, committed: Committed | None = None, conflict: ConflictModel | None = None
) -> repo.NewCommit:
    """The history row of a decided commit: committed with its snapshots, or rejected with its conflict."""
    snapshots: list[dict[str, object]] = []
    if committed is not None:
        snapshots = [r.model_dump(mode="json", by_alias=True) for r in refs(committed.built.snapshots)]
        if member.proposed is not None and snapshots:
            # A REST commit's APPEND and COMPACT arrive as two requests and share one row: each
            # snapshot keeps the digest of the request it came from (see resends.relation_to_record).
            snapshots[0]["digest"] = member.resolved.digest
    return repo.NewCommit(
        commit_user=member.resolved.commit_user,
        identifier=member.resolved.identifier,
        outcome="committed" if committed is not None else "rejected",
        snapshots=snapshots,
        details={"transaction": list(member.transaction)} if member.transaction else None,
        timings=member.phases.timings,
        conflict=None if conflict is None else conflict.model_dump(mode="json", by_alias=True),
        # A retryable rejection is not a terminal answer, so it is not replayed for its key.
        idempotency_key=None if conflict is not None and conflict.retryable else member.idempotency_key,
        created_at=now,
        extends=committed.extends if committed is not None else None,
        digest=member.resolved.digest,
    )
