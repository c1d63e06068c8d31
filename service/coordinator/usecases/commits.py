"""Committing ManifestCommittables: queue -> lock -> reconcile -> plan -> check -> write -> commit point
-> publish.

Commits to one table that arrive while its lock is held wait in this process's queue and are decided
together by the next lock hold (group commit, see commit_queue), one snapshot each, in arrival order.
The commit point is one database transaction that checks our lock epoch is still live, moves the
table's latest-snapshot pointer from N to N+k and records the outcomes. Only after it do the snapshot
files appear on storage (create-if-absent, never overwritten); a crash in between is rolled forward by
the next commit's reconcile, which also adopts snapshots that writers outside the coordinator published.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError

from coordinator.db import repositories as repo
from coordinator.db.engine import autocommit, read_only
from coordinator.domain.committable import resolve_committable
from coordinator.domain.conflicts import Conflict, check_base_snapshot, check_conflicts
from coordinator.domain.manifest_merge import merge_manifests
from coordinator.domain.plan import SnapshotPlan, plan_snapshots, record_count_delta, with_live_metadata
from coordinator.errors import CommitConflict, InvalidRequest, LockUnavailable, TableNotFound
from coordinator.locks.base import Lease, LockBackend, process_owner
from coordinator.locks.renewal import LeaseKeeper
from coordinator.observability.commit_events import CommitEvents
from coordinator.observability.metrics import Metrics
from coordinator.storage.fileio import FileIO
from coordinator.usecases.commit_queue import CommitQueue, PendingCommit, TakeGroup
from coordinator.usecases.table_state import SnapshotLoader, TableState, TableStates
from coordinator.usecases.tables import Table, Tables, adopted_row
from coordinator_client.format.manifest import ManifestEntry
from coordinator_client.format.snapshot import LATEST, Snapshot, carry_forward, format_hint
from coordinator_client.models import (
    CommitRequest,
    CommitResponse,
    ConflictModel,
    InFlightCommitModel,
    SnapshotRef,
    WinningSnapshot,
)

log = logging.getLogger(__name__)

WRITER_VERSION = "paimon-coordinator-0.1.0"


def local_millis() -> int:
    """Paimon stores creation times as local wall-clock millis (LocalDateTime.now()), not UTC."""
    now = time.time()
    return int((now + time.localtime(now).tm_gmtoff) * 1000)


MAX_GROUP = 32
"""At most this many queued committables are committed in one lock hold."""


@dataclass
class _GroupResult:
    """How each member of a group was decided under the lock; answered after the finishing transaction."""

    committed: list[PendingCommit] = field(default_factory=list)
    rejected: list[tuple[PendingCommit, ConflictModel]] = field(default_factory=list)
    answered: list[tuple[PendingCommit, CommitResponse | Exception]] = field(default_factory=list)
    later: list[PendingCommit] = field(default_factory=list)
    """Left for the next group: a resend racing its original, or what followed a mid-commit rejection."""

    def answer(self) -> None:
        for member in self.committed:
            refs = [SnapshotRef(id=s.id, commit_kind=s.commit_kind.value) for s in member.snapshots]
            member.succeed(
                CommitResponse(
                    snapshots=refs,
                    deduplicated=False,
                    timings=member.timings,
                    group_size=len(self.committed),
                )
            )
        for member, conflict in self.rejected:
            member.fail(CommitConflict(conflict))
        for member, answer in self.answered:
            if isinstance(answer, Exception):
                member.fail(answer)
            else:
                member.succeed(answer)


class Committer:
    """Commits to every table; safe to call from many threads and many service processes.

    Within one process, commits to a table that arrive while its lock is held are grouped (see
    commit_queue); across processes the table lock orders the groups.
    """

    def __init__(
        self,
        engine: Engine,
        bookkeeping: Engine,
        fileio: FileIO,
        tables: Tables,
        locks: LockBackend,
        *,
        lease_seconds: float,
        acquire_timeout_seconds: float,
        metrics: Metrics,
        max_group: int = MAX_GROUP,
    ) -> None:
        self._engine = engine
        self._bookkeeping = bookkeeping
        self._fileio = fileio
        self._tables = tables
        self._locks = locks
        self._lease_seconds = lease_seconds
        self._acquire_timeout = acquire_timeout_seconds
        self._max_group = max_group
        self._states = TableStates(fileio)
        self._queues: dict[str, CommitQueue] = {}
        self._queues_guard = threading.Lock()
        self._instance = process_owner()
        self._metrics = metrics
        self._events = CommitEvents(metrics)
        self._in_flight: dict[int, tuple[str, PendingCommit]] = {}
        self._in_flight_guard = threading.Lock()

    def commit(
        self, table_id: str, request: CommitRequest, *, idempotency_key: str | None = None
    ) -> CommitResponse:
        """Commit one committable; a resend of a committed one returns its snapshots with deduplicated=true.

        Every answer is logged and counted (see observability.commit_events).

        Raises:
            TableNotFound, InvalidRequest, CommitConflict, LockUnavailable.
        """
        events = self._events
        try:
            response = self._commit(table_id, request, idempotency_key)
        except CommitConflict as rejected:
            events.answered(table_id, request, "rejected", conflict=rejected.conflict)
            raise
        except LockUnavailable as busy:
            events.answered(table_id, request, "lock_unavailable", error=busy.message)
            raise
        except (InvalidRequest, TableNotFound) as invalid:
            events.answered(table_id, request, "invalid", error=invalid.message)
            raise
        except Exception as error:
            events.answered(table_id, request, "failed", error=repr(error))
            raise
        events.answered(
            table_id, request, "deduplicated" if response.deduplicated else "committed", response=response
        )
        return response

    def in_flight(self) -> list[InFlightCommitModel]:
        """The commits this instance is working on, oldest first, with the phase each is in."""
        with self._in_flight_guard:
            pending = list(self._in_flight.values())
        now = time.perf_counter()
        return [
            InFlightCommitModel(
                table_id=table_id,
                commit_user=member.request.commit_user,
                identifier=member.request.identifier,
                phase=member.current,
                started_at=member.started_at,
                elapsed_ms=round((now - member.started) * 1000, 3),
                timings=dict(member.timings),
            )
            for table_id, member in sorted(pending, key=lambda p: p[1].started)
        ]

    def _commit(self, table_id: str, request: CommitRequest, idempotency_key: str | None) -> CommitResponse:
        started = time.perf_counter()
        table = self._tables.get(table_id)
        resolved = resolve_committable(request, table.shape, now_millis=local_millis())
        if idempotency_key is not None:
            # A terminal answer recorded for this key is replayed without waiting for the lock; the
            # commitUser + identifier check happens under the lock, where it cannot race.
            replay = self._replay(table, idempotency_key)
            if replay is not None:
                return replay
        pending = PendingCommit(request, resolved, idempotency_key, started)
        pending.phase("validate")
        pending.enter("lockWait")
        with self._in_flight_guard:
            self._in_flight[id(pending)] = (table.id, pending)
        try:
            return self._queue(table.id).run(pending, lambda take: self._commit_group(table, take))
        finally:
            with self._in_flight_guard:
                del self._in_flight[id(pending)]

    def commit_holding(
        self, lease: Lease, table_id: str, request: CommitRequest, *, idempotency_key: str | None = None
    ) -> CommitResponse:
        """Commit while already holding `lease` on the table's lock; the commit point re-checks the lease.

        Raises:
            TableNotFound, InvalidRequest, CommitConflict (LOCK_LOST when the lease ran out).
        """
        table = self._tables.get(table_id)
        resolved = resolve_committable(request, table.shape, now_millis=local_millis())
        pending = PendingCommit(request, resolved, idempotency_key, time.perf_counter())
        later = self._commit_group(table, lambda: [pending], held=lease)
        assert not later, "a group of one leaves nothing for later"
        return pending.outcome()

    def recover(self) -> list[str]:
        """At start-up: publish snapshots a crash left committed but unpublished; returns the tables fixed.

        A table whose lock is busy is left to its holder, whose reconcile does the same.
        """
        with self._engine.connect() as conn:
            pending = repo.tables_with_unpublished(conn)
        recovered = []
        for table_id in pending:
            table = self._tables.get(table_id)
            lease = self._locks.try_acquire(table.lock_id, f"{self._instance}-recovery")
            if lease is None:
                continue
            try:
                with self._engine.connect() as conn:
                    unpublished = repo.unpublished_snapshots(conn, table_id)
                self._publish(table, [Snapshot.from_json(s.body) for s in unpublished])
                recovered.append(table_id)
            finally:
                self._locks.release(lease)
        return recovered

    def _queue(self, table_id: str) -> CommitQueue:
        with self._queues_guard:
            queue = self._queues.get(table_id)
            if queue is None:
                queue = self._queues[table_id] = CommitQueue(self._max_group)
            return queue

    def _replay(self, table: Table, idempotency_key: str) -> CommitResponse | None:
        """The recorded terminal answer for this Idempotency-Key, if there is one."""
        with read_only(self._engine) as conn:
            stored = repo.find_by_idempotency_key(conn, table.id, idempotency_key)
        if stored is None:
            return None
        answer = _recorded_answer(stored)
        if isinstance(answer, CommitConflict):
            raise answer
        return answer

    # ------------------------------------------------------------ one group under the lock

    def queued(self, table_id: str) -> int:
        """Commits to this table waiting in this process for the current group to finish."""
        return self._queue(table_id).depth

    def in_flight_file_names(self, table_id: str) -> set[str]:
        """Names of the files that commits waiting in this process will name: not orphans."""
        names = set()
        for request in self._queue(table_id).waiting_requests():
            for message in request.messages:
                for files in (
                    message.new_files,
                    message.deleted_files,
                    message.changelog_files,
                    message.compact_before,
                    message.compact_after,
                    message.compact_changelog_files,
                ):
                    for f in files:
                        names.add(f.file_name)
                        names.update(f.extra_files)
        return names

    def forget_state(self, table_id: str) -> None:
        """Drop the in-memory state of a table whose snapshots changed outside a commit (a rollback)."""
        self._states.invalidate(table_id)

    def _commit_group(
        self, table: Table, take: TakeGroup, *, held: Lease | None = None
    ) -> list[PendingCommit]:
        """Take the lock (unless `held`), then the group; decide every member, finish, and answer.

        Returns the members left for the next group.
        """
        asked = time.perf_counter()
        lease = held or self._locks.acquire(
            table.lock_id, f"{self._instance}-{uuid.uuid4().hex[:12]}", self._acquire_timeout
        )
        acquired = time.perf_counter()
        if held is None:
            self._metrics.lock_wait_seconds.labels("commit").observe(acquired - asked)
        group = take()
        self._metrics.group_size.observe(len(group))
        for member in group:
            member.phase("lockWait", acquired)
            member.enter("reconcile")
        try:
            if held is None:
                with LeaseKeeper(self._locks, lease, self._lease_seconds):
                    result = self._commit_locked(table, group, lease)
            else:
                result = self._commit_locked(table, group, lease)
            self._finish(table, result, release=None if held else lease)
        except BaseException:
            if held is None:
                self._locks.release(lease)
            raise
        finally:
            if held is None:
                self._metrics.lock_hold_seconds.labels("commit").observe(time.perf_counter() - acquired)
        result.answer()
        return result.later

    def _commit_locked(self, table: Table, group: list[PendingCommit], lease: Lease) -> _GroupResult:
        started = time.perf_counter()
        state, context = self._reconcile(table, group)
        _shared_phase(group, "reconcile", started)
        for member in group:
            member.enter("groupWait")
        result = _GroupResult()
        previous_id = state.snapshot_id
        manifests = state.manifests
        stale_state = False
        taken: set[tuple[str, int] | str] = set()
        try:
            for index, member in enumerate(group):
                member.phase("groupWait")
                member.enter("conflictCheck")
                stored = context.recorded(member.key, member.idempotency_key)
                if stored is not None:
                    result.answered.append((member, _recorded_answer(stored)))
                    continue
                claims = {member.key} | ({member.idempotency_key} if member.idempotency_key else set())
                if claims & taken:
                    result.later.append(member)  # a resend racing its original is decided after it
                    continue
                taken |= claims
                mark = manifests.checkpoint()
                try:
                    check_base_snapshot(member.request.base_snapshot_id, state.snapshot_id)
                    for plan in plan_snapshots(member.resolved, state.live, table.shape):
                        self._build_snapshot(table, state, plan, member)
                except Conflict as conflict:
                    manifests.discard_since(mark)
                    result.rejected.append((member, self._conflict_model(table, conflict, group)))
                    if member.snapshots:
                        # Part of this committable already advanced the in-memory state: the rest of the
                        # group waits for a state rebuilt from what is committed.
                        member.snapshots.clear()
                        result.later.extend(group[index + 1 :])
                        stale_state = True
                        break
                    continue
                result.committed.append(member)
                member.enter("groupWait")
            if result.committed:
                for member in result.committed:
                    member.enter("commitPoint")
                started = time.perf_counter()
                self._commit_point(table, lease, previous_id, result.committed)
                _shared_phase(result.committed, "commitPoint", started)
        except Conflict as conflict:
            # The commit point failed for the whole group (lease lost, pointer moved): nothing is written.
            manifests.discard_since(0)
            self._states.invalidate(table.id)
            model = self._conflict_model(table, conflict, [])
            decided = [m for m in group if m.snapshots or any(m is r for r, _ in result.rejected)]
            result.committed, result.rejected = [], [(m, model) for m in decided]
            for member in decided:
                member.snapshots.clear()
            return result
        except IntegrityError:
            # A unique index saw a commit this group's context did not: answer from what is recorded.
            manifests.discard_since(0)
            self._states.invalidate(table.id)
            return self._after_integrity_error(table, group)
        except BaseException:
            manifests.discard_since(0)
            self._states.invalidate(table.id)
            raise
        manifests.keep_written()
        if stale_state:
            self._states.invalidate(table.id)
        for member in result.committed:
            member.enter("publish")
        started = time.perf_counter()
        self._write_snapshot_files(table, [s for m in result.committed for s in m.snapshots])
        _shared_phase(result.committed, "publish", started)
        return result

    def _after_integrity_error(self, table: Table, group: list[PendingCommit]) -> _GroupResult:
        result = _GroupResult()
        with read_only(self._engine) as conn:
            context = _group_context(conn, table, group)
        for member in group:
            member.snapshots.clear()
            stored = context.recorded(member.key, member.idempotency_key)
            if stored is not None:
                result.answered.append((member, _recorded_answer(stored)))
            else:
                result.answered.append(
                    (member, RuntimeError("the commit point hit a unique index without a recorded commit"))
                )
        return result

    # ------------------------------------------------------------ reconcile

    def _reconcile(
        self, table: Table, group: Sequence[PendingCommit]
    ) -> tuple[TableState, repo.GroupContext]:
        """Publish what a crash left unpublished, adopt outside snapshots, then bring the state up to date."""
        with read_only(self._engine) as conn:
            context = _group_context(conn, table, group)
            unpublished = repo.unpublished_snapshots(conn, table.id) if context.has_unpublished else []
        if unpublished:
            self._publish(table, [Snapshot.from_json(s.body) for s in unpublished])
        latest = self._adopt_outside_snapshots(table, context.latest_snapshot_id)
        bodies = {s.snapshot_id: s.body for s in unpublished}
        return self._states.at(table, latest, SnapshotLoader(self._fileio, table, bodies)), context

    def _adopt_outside_snapshots(self, table: Table, latest: int) -> int:
        """A snapshot-N+1 that another writer published is taken in, never overwritten."""
        while self._fileio.exists(table.layout.snapshot(latest + 1)):
            snapshot = Snapshot.from_json(self._fileio.read(table.layout.snapshot(latest + 1)).decode())
            with self._engine.begin() as conn:
                if not repo.advance_latest(conn, table.id, latest, snapshot.id):
                    break
                repo.insert_snapshots(conn, table.id, [adopted_row(snapshot)])
            log.info("adopted snapshot %d of %s written outside the coordinator", snapshot.id, table.id)
            latest = snapshot.id
        return latest

    # ------------------------------------------------------------ write

    def _build_snapshot(
        self, table: Table, state: TableState, plan: SnapshotPlan, member: PendingCommit
    ) -> None:
        shape = table.shape
        request = member.request
        entries = with_live_metadata(plan.entries, state.live)
        check_conflicts(
            state.live,
            entries,
            check_bucket_count=plan.check_bucket_count,
            decode_key=shape.decode_key if shape.has_primary_key else None,
        )
        member.phase("conflictCheck")
        member.enter("manifestWrite")
        manifests = state.manifests
        base = merge_manifests(state.data_manifests, state.options, manifests.read, manifests.write)
        delta = manifests.write(list(entries)) if entries else []
        base_list, base_size = manifests.write_list(base)
        delta_list, delta_size = manifests.write_list(delta)
        changelog = self._changelog_list(state, plan.changelog)
        previous = state.snapshot
        delta_count = record_count_delta(entries)
        snapshot = Snapshot(
            id=state.snapshot_id + 1,
            schema_id=shape.schema.id,
            base_manifest_list=base_list,
            delta_manifest_list=delta_list,
            total_record_count=(previous.total_record_count if previous else 0) + delta_count,
            delta_record_count=delta_count,
            commit_user=request.commit_user,
            commit_identifier=request.identifier,
            commit_kind=plan.kind,
            time_millis=int(time.time() * 1000),
            base_manifest_list_size=base_size,
            delta_manifest_list_size=delta_size,
            changelog_manifest_list=changelog[0] if changelog else None,
            changelog_manifest_list_size=changelog[1] if changelog else None,
            changelog_record_count=record_count_delta(plan.changelog) if changelog else None,
            **carry_forward(previous, schema_id=shape.schema.id, watermark=request.watermark),
            properties=dict(request.properties) or None,
            writer_version=WRITER_VERSION,
            uuid=str(uuid.uuid4()),
        )
        state.live.apply(entries, snapshot.id)
        state.snapshot = snapshot
        state.data_manifests = base + delta
        member.snapshots.append(snapshot)
        member.phase("manifestWrite")

    def _changelog_list(
        self, state: TableState, changelog: Sequence[ManifestEntry]
    ) -> tuple[str, int] | None:
        if not changelog:
            return None
        return state.manifests.write_list(state.manifests.write(list(changelog)))

    # ------------------------------------------------------------ commit point and publish

    def _commit_point(
        self, table: Table, lease: Lease, previous_id: int, committed: Sequence[PendingCommit]
    ) -> None:
        """One transaction: our lease is live, latest moves from `previous_id` to the group's last
        snapshot, and every snapshot and commit of the group is recorded."""
        snapshots = [s for member in committed for s in member.snapshots]
        with self._engine.begin() as conn:
            self._check_fence(conn, lease)
            if snapshots and not repo.advance_latest(conn, table.id, previous_id, snapshots[-1].id):
                raise Conflict(
                    "LATEST_SNAPSHOT_MOVED",
                    "another commit moved the table while this one held the lock",
                    retryable=True,
                )
            repo.insert_snapshots(conn, table.id, [_snapshot_row(s) for s in snapshots])
            now = time.time()
            repo.insert_commits(conn, table.id, [_history(member, now) for member in committed])

    def _check_fence(self, conn: Connection, lease: Lease) -> None:
        """Raise when our lease expired or was taken over: a zombie holder must not commit."""
        if not self._locks.still_held(conn, lease):
            raise Conflict(
                "LOCK_LOST",
                f"the lease on {lease.lock_id} (epoch {lease.epoch}) ran out before the commit point",
                retryable=True,
            )

    def _finish(self, table: Table, result: _GroupResult, *, release: Lease | None) -> None:
        """One transaction after publishing: mark the snapshots published, complete the history (phase
        timings, rejections) and, when given, release the lock; losing it in a crash only means
        publishing again."""
        finished = time.perf_counter()
        for member in result.committed:
            member.timings["total"] = round((finished - member.started) * 1000, 3)
        if not result.committed and not result.rejected:
            if release is not None:
                self._locks.release(release)
            return
        now = time.time()
        with self._bookkeeping.begin() as conn:
            published = [s.id for m in result.committed for s in m.snapshots]
            if published:
                repo.mark_published(conn, table.id, through=published[-1])
            repo.update_commit_timings(conn, table.id, [(*m.key, m.timings) for m in result.committed])
            repo.insert_commits(conn, table.id, [_history(m, now, c) for m, c in result.rejected])
            if release is not None:
                self._locks.release_in(conn, release)

    def _publish(self, table: Table, snapshots: Sequence[Snapshot]) -> None:
        """Write snapshot files and the LATEST hint, then mark them published."""
        self._write_snapshot_files(table, snapshots)
        with autocommit(self._bookkeeping) as conn:
            repo.mark_published(conn, table.id, through=snapshots[-1].id)

    def _write_snapshot_files(self, table: Table, snapshots: Sequence[Snapshot]) -> None:
        """snapshot-N create-if-absent (never overwritten), then the LATEST hint."""
        if not snapshots:
            return
        for snapshot in snapshots:
            path = table.layout.snapshot(snapshot.id)
            body = snapshot.to_json().encode()
            try:
                self._fileio.write_new(path, body)
            except FileExistsError:
                if self._fileio.read(path) != body:
                    log.error(
                        "snapshot-%d of %s on storage differs from the committed one", snapshot.id, table.id
                    )
        self._fileio.overwrite(table.layout.hint(LATEST), format_hint(snapshots[-1].id))

    # ------------------------------------------------------------ rejections

    def _conflict_model(
        self, table: Table, conflict: Conflict, group: Sequence[PendingCommit]
    ) -> ConflictModel:
        """The wire form of a conflict; a winning snapshot may be one this very group just built."""
        winner = None
        winning_id = conflict.winning_snapshot_id
        if winning_id:
            built = {s.id: s for member in group for s in member.snapshots}
            if winning_id in built:
                snapshot = built[winning_id]
                winner = WinningSnapshot(
                    id=snapshot.id, commit_user=snapshot.commit_user, commit_kind=snapshot.commit_kind.value
                )
            else:
                with read_only(self._engine) as conn:
                    stored = repo.get_snapshot(conn, table.id, winning_id)
                if stored is not None:
                    winner = WinningSnapshot(
                        id=stored.snapshot_id, commit_user=stored.commit_user, commit_kind=stored.commit_kind
                    )
        return ConflictModel(
            type=conflict.type,
            message=conflict.message,
            partition=table.shape.partition_json(conflict.partition)
            if conflict.partition is not None
            else None,
            bucket=conflict.bucket,
            files=list(conflict.files),
            winning_snapshot=winner,
            retryable=conflict.retryable,
        )


def _group_context(conn: Connection, table: Table, group: Sequence[PendingCommit]) -> repo.GroupContext:
    keys = [m.idempotency_key for m in group if m.idempotency_key is not None]
    context = repo.group_context(conn, table.id, [m.key for m in group], keys)
    if context is None:
        raise TableNotFound(f"table {table.id} does not exist")
    return context


def _shared_phase(members: Sequence[PendingCommit], name: str, started: float) -> None:
    ended = time.perf_counter()
    for member in members:
        member.shared_phase(name, started, ended)


def _history(member: PendingCommit, now: float, conflict: ConflictModel | None = None) -> repo.NewCommit:
    """The history row of a decided commit: committed with its snapshots, or rejected with its conflict."""
    return repo.NewCommit(
        commit_user=member.request.commit_user,
        identifier=member.request.identifier,
        outcome="committed" if conflict is None else "rejected",
        snapshots=[{"id": s.id, "commitKind": s.commit_kind.value} for s in member.snapshots]
        if conflict is None
        else [],
        timings=member.timings,
        conflict=None if conflict is None else conflict.model_dump(mode="json", by_alias=True),
        # A retryable rejection is not a terminal answer, so it is not replayed for its key.
        idempotency_key=None if conflict is not None and conflict.retryable else member.idempotency_key,
        created_at=now,
    )


def _recorded_answer(stored: repo.StoredCommit) -> CommitResponse | CommitConflict:
    """The answer a recorded commit gives a resend: its snapshots, or its terminal rejection."""
    if stored.outcome != "committed":
        return CommitConflict(ConflictModel.model_validate(stored.conflict))
    return CommitResponse(
        snapshots=[SnapshotRef.model_validate(s) for s in stored.snapshots], deduplicated=True, timings={}
    )


def _snapshot_row(snapshot: Snapshot) -> dict[str, object]:
    return {
        "snapshot_id": snapshot.id,
        "commit_user": snapshot.commit_user,
        "commit_identifier": snapshot.commit_identifier,
        "commit_kind": snapshot.commit_kind.value,
        "time_millis": snapshot.time_millis,
        "body": snapshot.to_json(),
        "published": False,
    }
