"""What the database keeps of commits: the commit point, history rows, recorded answers, snapshot rows and
conflict records.

A snapshot is serialised once, when it is built (`SnapshotFile`): the same text goes into its database
row at the commit point and into `snapshot-N` on storage, and recovery writes the row's text back as is.
A commit's snapshots travel in one form, `SnapshotRef`, in answers and in history rows alike.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine

from coordinator.db import repositories as repo
from coordinator.db.engine import read_only
from coordinator.domain.conflicts import Conflict
from coordinator.domain.table_stats import FileDelta, combined, file_delta
from coordinator.errors import (
    CommitConflict,
    CoordinatorError,
    TableNotFound,
)
from coordinator.usecases import live_index
from coordinator.usecases.commit_queue import PendingCommit, timed_together
from coordinator.usecases.live_index import Delta
from coordinator.usecases.resends import recorded_answer
from coordinator.usecases.snapshot_file import SnapshotFile
from coordinator.usecases.table_hold import Hold, unplaced_conflict
from coordinator.usecases.table_state import TableStates
from coordinator.usecases.tables import Table, Tables, version_of
from coordinator_client.models import (
    CommitResponse,
    ConflictModel,
    SnapshotRef,
    WinningSnapshot,
)
from paimon_format.snapshot import Snapshot


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


class TableChanged(Exception):
    """At the commit point: the table row is no longer the table (uuid) or schema the group was decided
    against; it was dropped and created again, or changed, without this hold seeing it first."""


@dataclass
class GroupResult:
    """How each member of a group was decided under the lock; answered after the finishing transaction."""

    committed: list[PendingCommit] = field(default_factory=list)
    rejected: list[tuple[PendingCommit, ConflictModel]] = field(default_factory=list)
    replayed: list[tuple[PendingCommit, CommitResponse | CommitConflict]] = field(default_factory=list)
    later: list[PendingCommit] = field(default_factory=list)
    """Left for the next group: a resend racing its original, what followed a mid-commit rejection, or
    the whole group when the table changed under it."""
    invalid: list[tuple[PendingCommit, CoordinatorError]] = field(default_factory=list)
    """Not valid for the table as it is now (resolved again after the table changed): not recorded,
    as a commit that fails validation never is."""

    def reject_all(self, group: Sequence[PendingCommit], model: ConflictModel) -> None:
        """The hold failed for the whole group (lease lost, head moved): every member not answered from
        its record is rejected with `model`, nothing of the group having been written."""
        replayed = {id(m) for m, _ in self.replayed}
        failed = [m for m in group if id(m) not in replayed]
        for member in failed:
            member.snapshots.clear()
        self.committed, self.later, self.rejected = [], [], [(m, model) for m in failed]

    def decide_again(self, group: Sequence[PendingCommit]) -> None:
        """The table changed before the commit point: nothing of the group was written, and every member
        not answered from its record waits for the next group, which decides it against the table as
        it is then."""
        settled = {id(m) for m, _ in self.replayed} | {id(m) for m, _ in self.invalid}
        for member in group:
            member.unbuild()
        self.committed, self.rejected = [], []
        self.later = [m for m in group if id(m) not in settled]

    def requeue_from(self, taken: int) -> None:
        """An outside writer took snapshot id `taken` before our publication: the committed members whose
        snapshots start there go to the next group; those before it stand."""
        standing = [m for m in self.committed if m.snapshots[-1].id < taken]
        for member in self.committed[len(standing) :]:
            if member.snapshots[0].id < taken:
                # Part of it was published before the id was taken: it cannot be decided again whole.
                member.fail(
                    RuntimeError(
                        f"snapshot {member.snapshots[0].id} of this commit was published, and snapshot "
                        f"{taken} was taken by a writer outside the coordinator; the rest is not committed"
                    )
                )
                continue
            member.snapshots.clear()
            member.deltas.clear()
            self.later.append(member)
        self.committed = standing

    def answer(self) -> None:
        for member in self.committed:
            response = CommitResponse(
                snapshots=refs(member.snapshots),
                deduplicated=False,
                timings=member.timings,
                group_size=len(self.committed),
            )
            member.succeed(response)
        for member, conflict in self.rejected:
            member.fail(CommitConflict(conflict))
        for member, answer in self.replayed:
            if isinstance(answer, CommitConflict):
                member.fail(answer)
            else:
                member.succeed(answer)
        for member, error in self.invalid:
            member.fail(error)


def replay_recorded(engine: Engine, table: Table, group: Sequence[PendingCommit]) -> GroupResult:
    """After the commit point hit a unique index: every member answers from what is recorded."""
    result = GroupResult()
    with read_only(engine) as conn:
        context = group_context(conn, table, group)
    for member in group:
        member.snapshots.clear()
        stored = context.recorded(member.record_key, member.idempotency_key)
        if stored is None:
            member.fail(RuntimeError("the commit point hit a unique index without a recorded commit"))
        else:
            result.replayed.append((member, recorded_answer(stored)))
    return result


def record_group(
    engine: Engine, hold: Hold, table: Table, previous_id: int, result: GroupResult, now: float
) -> list[SnapshotFile]:
    """The group's commit point (when it committed anything); returns the snapshot files to publish.

    Raises:
        TableChanged: the table row is another table or schema now (also for a group of rejections
            only, which are recorded without a commit point: not into a table that replaced ours).
        Conflict: LOCK_LOST or LATEST_SNAPSHOT_MOVED (see commit_point).
    """
    change = table_change(table, previous_id, result, now)
    if change is not None:
        with timed_together(result.committed, "commitPoint"):
            commit_point(hold, [change])
        return change.snapshots
    if result.rejected:
        with read_only(engine) as conn:
            if repo.table_version(conn, table.id) != version_of(table):
                raise TableChanged(table.id)
    return []


def table_change(table: Table, previous_id: int, result: GroupResult, now: float) -> TableChange | None:
    """What the group's committed members move the table's head by; None when nothing committed."""
    if not result.committed:
        return None
    built: list[Delta] = [b for m in result.committed for b in m.built()]
    return TableChange(
        table,
        previous_id,
        [SnapshotFile.of(s) for m in result.committed for s in m.snapshots],
        [history_row(m, now) for m in result.committed],
        combined(file_delta(entries) for _, entries in built),
        now,
        built,
        {s: r for m in result.committed for s, r in m.records.items()},
    )


def commit_point(hold: Hold, changes: Sequence[TableChange]) -> None:
    """One transaction for a set of table changes: every lease is still ours, every head pointer moves
    from the expected snapshot to the change's last one (with the table's size), every snapshot and
    history row is recorded, and the live-file index advances by the snapshots' deltas.

    Each table row must still have the uuid and schema id its change was decided against: a table
    dropped and created again, or given other options, meanwhile gets nothing written for the old one.

    Raises:
        Conflict: LOCK_LOST (a lease ran out) or LATEST_SNAPSHOT_MOVED; nothing is recorded then.
        TableChanged: a table row is another table or schema now; nothing is recorded then.
    """
    with hold.fenced() as conn:
        for change in changes:
            table_id = change.table.id
            expected = version_of(change.table)
            if not change.snapshots:
                if repo.table_version(conn, table_id, for_share=True) != expected:
                    raise TableChanged(table_id)
            elif not _advance(conn, change):
                if repo.table_version(conn, table_id) != expected:
                    raise TableChanged(table_id)
                raise Conflict(
                    "LATEST_SNAPSHOT_MOVED",
                    "another commit moved the table while this one held the lock",
                    retryable=True,
                )
            repo.insert_snapshots(conn, table_id, [s.row(published=False) for s in change.snapshots])
            repo.insert_commits(conn, table_id, [h for h in change.history if h.extends is None])
            repo.extend_committed(conn, [h for h in change.history if h.extends is not None])
            live_index.advance(conn, table_id, change.deltas, change.records)


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


def record_finish(
    bookkeeping: Engine, finished: Sequence[tuple[Table, GroupResult]], hold: Hold, now: float
) -> None:
    """One transaction after publishing, for every table the hold changed: mark the snapshots
    published, complete the history (phase timings with their total, rejections) and release the
    locks; losing it in a crash only means publishing again."""
    ended = time.perf_counter()
    for _, result in finished:
        for member in result.committed:
            member.timings["total"] = round((ended - member.started) * 1000, 3)
    if not any(result.committed or result.rejected for _, result in finished):
        return
    with bookkeeping.begin() as conn:
        for table, result in finished:
            published = [s.id for m in result.committed for s in m.snapshots]
            if published:
                repo.mark_published(conn, table.id, through=published[-1])
            timings = [(*m.key, m.resolved.digest, m.timings) for m in result.committed]
            repo.update_commit_timings(conn, table.id, timings)
            repo.insert_commits(conn, table.id, [history_row(m, now, c) for m, c in result.rejected])
        hold.release_in(conn)


def refs(snapshots: Sequence[Snapshot]) -> list[SnapshotRef]:
    return [SnapshotRef(id=s.id, commit_kind=s.commit_kind.value) for s in snapshots]


def history_row(member: PendingCommit, now: float, conflict: ConflictModel | None = None) -> repo.NewCommit:
    """The history row of a decided commit: committed with its snapshots, or rejected with its conflict."""
    committed = conflict is None
    snapshots: list[dict[str, object]] = []
    if committed:
        snapshots = [r.model_dump(mode="json", by_alias=True) for r in refs(member.snapshots)]
        if member.proposed is not None and snapshots:
            # A REST commit's APPEND and COMPACT arrive as two requests and share one row: each
            # snapshot keeps the digest of the request it came from (see relation_to_record).
            snapshots[0]["digest"] = member.resolved.digest
    return repo.NewCommit(
        commit_user=member.resolved.commit_user,
        identifier=member.resolved.identifier,
        outcome="committed" if committed else "rejected",
        snapshots=snapshots,
        details={"transaction": list(member.transaction)} if member.transaction else None,
        timings=member.timings,
        conflict=None if conflict is None else conflict.model_dump(mode="json", by_alias=True),
        # A retryable rejection is not a terminal answer, so it is not replayed for its key.
        idempotency_key=None if conflict is not None and conflict.retryable else member.idempotency_key,
        created_at=now,
        extends=member.extends_record if committed else None,
        digest=member.resolved.digest,
    )


def current_context(
    engine: Engine, tables: Tables, states: TableStates, table: Table, group: Sequence[PendingCommit]
) -> tuple[Table, repo.GroupContext, list[repo.StoredSnapshot]]:
    """Under the lock: the group's context, its unpublished snapshots, and the table as its row is now.

    The row is the truth, not this process's cache: another replica may have dropped the table and
    created it again (another uuid) or changed its schema (the next schema id). Then the cached table
    and the in-memory state built for it are dropped, and the group is decided against the table the
    row describes.

    Raises:
        TableNotFound: the table was dropped meanwhile.
    """
    try:
        with read_only(engine) as conn:
            context = group_context(conn, table, group)
            unpublished = repo.unpublished_snapshots(conn, table.id) if context.has_unpublished else []
        if context.version != version_of(table):
            states.invalidate(table.id)
            table = tables.at_version(table.id, context.version)
    except TableNotFound:
        tables.evict(table.id)
        states.invalidate(table.id)
        raise
    return table, context, unpublished


def group_context(conn: Connection, table: Table, group: Sequence[PendingCommit]) -> repo.GroupContext:
    """The table's head and the recorded answers of the group's commits, in one round trip.

    Raises:
        TableNotFound: the table was dropped meanwhile.
    """
    keys = [m.idempotency_key for m in group if m.idempotency_key is not None]
    context = repo.group_context(conn, table.id, [m.record_key for m in group], keys)
    if context is None:
        raise TableNotFound(f"table {table.id} does not exist")
    return context


def conflict_model(
    engine: Engine, table: Table, conflict: Conflict, built: Sequence[Snapshot] = ()
) -> ConflictModel:
    """The wire form of a conflict; the winning snapshot may be one the same group just built."""
    partition = table.shape.partition_json(conflict.partition) if conflict.partition is not None else None
    return unplaced_conflict(conflict).model_copy(
        update={
            "partition": partition,
            "winning_snapshot": _winner(engine, table, conflict.winning_snapshot_id, built),
        }
    )


def _winner(
    engine: Engine, table: Table, winning_id: int | None, built: Sequence[Snapshot]
) -> WinningSnapshot | None:
    if not winning_id:
        return None
    for snapshot in built:
        if snapshot.id == winning_id:
            return WinningSnapshot(
                id=snapshot.id, commit_user=snapshot.commit_user, commit_kind=snapshot.commit_kind.value
            )
    with read_only(engine) as conn:
        stored = repo.get_snapshot(conn, table.id, winning_id)
    if stored is None:
        return None
    return WinningSnapshot(
        id=stored.snapshot_id, commit_user=stored.commit_user, commit_kind=stored.commit_kind
    )
