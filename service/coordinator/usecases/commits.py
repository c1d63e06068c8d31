"""Committing a ManifestCommittable: lock -> reconcile -> plan -> check -> write -> commit point -> publish.

The commit point is one database transaction that checks our lock epoch is still live, moves the
table's latest-snapshot pointer from N-1 to N and records the outcome. Only after it does snapshot-N
appear on storage (create-if-absent, never overwritten); a crash in between is rolled forward by the
next commit's reconcile, which also adopts snapshots that writers outside the coordinator published.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import IntegrityError

from coordinator.db import repositories as repo
from coordinator.db.engine import read_only, skip_commit_flush
from coordinator.domain.committable import ResolvedCommittable, resolve_committable
from coordinator.domain.conflicts import Conflict, check_base_snapshot, check_conflicts
from coordinator.domain.manifest_merge import merge_manifests
from coordinator.domain.plan import SnapshotPlan, plan_snapshots, record_count_delta, with_live_metadata
from coordinator.errors import CommitConflict, TableNotFound
from coordinator.locks.base import Lease
from coordinator.locks.lock_table import LockTable
from coordinator.locks.renewal import LeaseKeeper
from coordinator.storage.fileio import FileIO
from coordinator.usecases.table_state import SnapshotLoader, TableState, TableStates
from coordinator.usecases.tables import Table, Tables, adopted_row
from coordinator_client.format.manifest import ManifestEntry
from coordinator_client.format.snapshot import LATEST, Snapshot, carry_forward, format_hint
from coordinator_client.models import (
    CommitRequest,
    CommitResponse,
    ConflictModel,
    SnapshotRef,
    WinningSnapshot,
)

log = logging.getLogger(__name__)

WRITER_VERSION = "paimon-coordinator-0.1.0"


def local_millis() -> int:
    """Paimon stores creation times as local wall-clock millis (LocalDateTime.now()), not UTC."""
    now = time.time()
    return int((now + time.localtime(now).tm_gmtoff) * 1000)


@dataclass
class _Attempt:
    """One commit under the lock: the snapshots it built and the time each phase took."""

    timings: dict[str, float] = field(default_factory=dict)
    snapshots: list[Snapshot] = field(default_factory=list)

    def phase(self, name: str, started: float) -> float:
        now = time.perf_counter()
        self.timings[name] = round(self.timings.get(name, 0.0) + (now - started) * 1000, 3)
        return now


class Committer:
    """Commits to every table; safe to call from many threads and many service processes."""

    def __init__(
        self,
        engine: Engine,
        fileio: FileIO,
        tables: Tables,
        locks: LockTable,
        *,
        lease_seconds: float,
        acquire_timeout_seconds: float,
    ) -> None:
        self._engine = engine
        self._fileio = fileio
        self._tables = tables
        self._locks = locks
        self._lease_seconds = lease_seconds
        self._acquire_timeout = acquire_timeout_seconds
        self._states = TableStates(fileio)
        self._instance = f"{os.uname().nodename}-{os.getpid()}"

    def commit(
        self, table_id: str, request: CommitRequest, *, idempotency_key: str | None = None
    ) -> CommitResponse:
        """Commit one committable; a resend of a committed one returns its snapshots with deduplicated=true.

        Raises:
            TableNotFound, InvalidRequest, CommitConflict, LockUnavailable.
        """
        started = time.perf_counter()
        table = self._tables.get(table_id)
        resolved = resolve_committable(request, table.shape, now_millis=local_millis())
        if idempotency_key is not None:
            # A terminal answer recorded for this key is replayed without waiting for the lock; the
            # commitUser + identifier check happens under the lock, where it cannot race.
            replay = self._replay(table, request, idempotency_key)
            if replay is not None:
                return replay
        attempt = _Attempt()
        t = attempt.phase("validate", started)
        lease = self._locks.acquire(
            table.lock_id, f"{self._instance}-{uuid.uuid4().hex[:12]}", self._acquire_timeout
        )
        t = attempt.phase("lockWait", t)
        released = False
        try:
            with LeaseKeeper(self._locks, lease, self._lease_seconds):
                response = self._commit_locked(table, request, resolved, lease, idempotency_key, attempt, t)
            if not response.deduplicated:
                attempt.timings["total"] = round((time.perf_counter() - started) * 1000, 3)
                self._finish(table, request, response, attempt, release=lease)
                released = True
        finally:
            if not released:
                self._locks.release(lease)
        return response.model_copy(update={"timings": attempt.timings})

    def commit_holding(
        self, lease: Lease, table_id: str, request: CommitRequest, *, idempotency_key: str | None = None
    ) -> CommitResponse:
        """Commit while already holding `lease` on the table's lock; the commit point re-checks the lease.

        Raises:
            TableNotFound, InvalidRequest, CommitConflict (LOCK_LOST when the lease ran out).
        """
        table = self._tables.get(table_id)
        resolved = resolve_committable(request, table.shape, now_millis=local_millis())
        attempt = _Attempt()
        response = self._commit_locked(
            table, request, resolved, lease, idempotency_key, attempt, time.perf_counter()
        )
        if not response.deduplicated:
            self._finish(table, request, response, attempt, release=None)
        return response

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

    def _replay(
        self, table: Table, request: CommitRequest, idempotency_key: str | None
    ) -> CommitResponse | None:
        """The recorded answer when this commit (or this Idempotency-Key) was already decided."""
        with self._engine.connect() as conn:
            if idempotency_key is not None:
                stored = repo.find_by_idempotency_key(conn, table.id, idempotency_key)
                if stored is not None:
                    if stored.outcome != "committed":
                        raise CommitConflict(ConflictModel.model_validate(stored.conflict))
                    return _deduplicated(stored.snapshots)
            committed = repo.find_committed(conn, table.id, request.commit_user, request.identifier)
        return _deduplicated(committed.snapshots) if committed is not None else None

    def _commit_locked(
        self,
        table: Table,
        request: CommitRequest,
        resolved: ResolvedCommittable,
        lease: Lease,
        idempotency_key: str | None,
        attempt: _Attempt,
        t: float,
    ) -> CommitResponse:
        state, committed = self._reconcile(table, request)
        t = attempt.phase("reconcile", t)
        if committed is not None:
            return _deduplicated(committed.snapshots)  # a concurrent resend won the lock first
        previous_id = state.snapshot_id
        manifests = state.manifests
        try:
            check_base_snapshot(request.base_snapshot_id, previous_id)
            plans = plan_snapshots(resolved, state.live, table.shape)
            for plan in plans:
                t = self._build_snapshot(table, state, plan, request, attempt, t)
            self._commit_point(table, lease, previous_id, request, idempotency_key, attempt)
            t = attempt.phase("commitPoint", t)
        except Conflict as conflict:
            manifests.discard_written()
            self._states.invalidate(table.id)
            model = self._conflict_model(table, conflict)
            self._record_rejection(table, request, idempotency_key, model, attempt)
            raise CommitConflict(model) from None
        except _AlreadyCommitted:
            manifests.discard_written()
            self._states.invalidate(table.id)
            return self._replay(table, request, idempotency_key) or _deduplicated([])
        except BaseException:
            manifests.discard_written()
            self._states.invalidate(table.id)
            raise
        manifests.keep_written()
        self._write_snapshot_files(table, attempt.snapshots)
        attempt.phase("publish", t)
        return CommitResponse(
            snapshots=[SnapshotRef(id=s.id, commit_kind=s.commit_kind.value) for s in attempt.snapshots],
            deduplicated=False,
        )

    # ------------------------------------------------------------ reconcile

    def _reconcile(self, table: Table, request: CommitRequest) -> tuple[TableState, repo.StoredCommit | None]:
        """Publish what a crash left unpublished, adopt outside snapshots, then bring the state up to date."""
        with read_only(self._engine) as conn:
            context = repo.commit_context(conn, table.id, request.commit_user, request.identifier)
            if context is None:
                raise TableNotFound(f"table {table.id} does not exist")
            latest = context.latest_snapshot_id
            unpublished = repo.unpublished_snapshots(conn, table.id) if context.has_unpublished else []
            committed = repo.get_commit(conn, context.committed_id) if context.committed_id else None
        if unpublished:
            self._publish(table, [Snapshot.from_json(s.body) for s in unpublished])
        latest = self._adopt_outside_snapshots(table, latest)
        bodies = {s.snapshot_id: s.body for s in unpublished}
        return self._states.at(table, latest, SnapshotLoader(self._fileio, table, bodies)), committed

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
        self,
        table: Table,
        state: TableState,
        plan: SnapshotPlan,
        request: CommitRequest,
        attempt: _Attempt,
        t: float,
    ) -> float:
        shape = table.shape
        entries = with_live_metadata(plan.entries, state.live)
        check_conflicts(
            state.live,
            entries,
            check_bucket_count=plan.check_bucket_count,
            decode_key=shape.decode_key if shape.has_primary_key else None,
        )
        t = attempt.phase("conflictCheck", t)
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
        attempt.snapshots.append(snapshot)
        return attempt.phase("manifestWrite", t)

    def _changelog_list(
        self, state: TableState, changelog: Sequence[ManifestEntry]
    ) -> tuple[str, int] | None:
        if not changelog:
            return None
        return state.manifests.write_list(state.manifests.write(list(changelog)))

    # ------------------------------------------------------------ commit point and publish

    def _commit_point(
        self,
        table: Table,
        lease: Lease,
        previous_id: int,
        request: CommitRequest,
        idempotency_key: str | None,
        attempt: _Attempt,
    ) -> None:
        snapshots = attempt.snapshots
        refs = [{"id": s.id, "commitKind": s.commit_kind.value} for s in snapshots]
        try:
            with self._engine.begin() as conn:
                self._check_fence(conn, lease)
                if snapshots and not repo.advance_latest(conn, table.id, previous_id, snapshots[-1].id):
                    raise Conflict(
                        "LATEST_SNAPSHOT_MOVED",
                        "another commit moved the table while this one held the lock",
                        retryable=True,
                    )
                repo.insert_snapshots(conn, table.id, [_snapshot_row(s) for s in snapshots])
                repo.insert_commit(
                    conn,
                    table_id=table.id,
                    commit_user=request.commit_user,
                    identifier=request.identifier,
                    outcome="committed",
                    snapshots=refs,  # type: ignore[arg-type]
                    timings=attempt.timings,
                    conflict=None,
                    idempotency_key=idempotency_key,
                    created_at=time.time(),
                )
        except IntegrityError:
            # The unique (commitUser, identifier) index: a concurrent resend committed first.
            raise _AlreadyCommitted() from None

    def _check_fence(self, conn: Connection, lease: Lease) -> None:
        """Raise when our lease expired or was taken over: a zombie holder must not commit."""
        matched = conn.execute(
            text(self._locks.fence_statement),
            {"lock_id": lease.lock_id, "owner": lease.owner, "epoch": lease.epoch},
        ).rowcount
        if matched != 1:
            raise Conflict(
                "LOCK_LOST",
                f"the lease on {lease.lock_id} (epoch {lease.epoch}) ran out before the commit point",
                retryable=True,
            )

    def _finish(
        self,
        table: Table,
        request: CommitRequest,
        response: CommitResponse,
        attempt: _Attempt,
        *,
        release: Lease | None,
    ) -> None:
        """One transaction after publishing: mark the snapshots published, complete the history's phase
        timings and (when given) release the lock; losing it in a crash only means publishing again."""
        with self._engine.begin() as conn:
            skip_commit_flush(conn)
            repo.mark_published(conn, table.id, [s.id for s in response.snapshots])
            repo.update_commit_timings(
                conn, table.id, request.commit_user, request.identifier, attempt.timings
            )
            if release is not None:
                self._locks.release_in(conn, release)

    def _publish(self, table: Table, snapshots: Sequence[Snapshot]) -> None:
        """Write snapshot files and the LATEST hint, then mark them published."""
        self._write_snapshot_files(table, snapshots)
        with self._engine.begin() as conn:
            skip_commit_flush(conn)
            repo.mark_published(conn, table.id, [s.id for s in snapshots])

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

    def _conflict_model(self, table: Table, conflict: Conflict) -> ConflictModel:
        winner = None
        if conflict.winning_snapshot_id:
            with self._engine.connect() as conn:
                stored = repo.get_snapshot(conn, table.id, conflict.winning_snapshot_id)
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

    def _record_rejection(
        self,
        table: Table,
        request: CommitRequest,
        idempotency_key: str | None,
        conflict: ConflictModel,
        attempt: _Attempt,
    ) -> None:
        # A retryable rejection is not a terminal answer, so it is not replayed for its Idempotency-Key.
        key = None if conflict.retryable else idempotency_key
        with self._engine.begin() as conn:
            repo.insert_commit(
                conn,
                table_id=table.id,
                commit_user=request.commit_user,
                identifier=request.identifier,
                outcome="rejected",
                snapshots=[],
                timings=attempt.timings,
                conflict=conflict.model_dump(mode="json", by_alias=True),
                idempotency_key=key,
                created_at=time.time(),
            )


class _AlreadyCommitted(Exception):
    pass


def _deduplicated(snapshots: list[dict[str, object]]) -> CommitResponse:
    return CommitResponse(
        snapshots=[SnapshotRef.model_validate(s) for s in snapshots], deduplicated=True, timings={}
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
