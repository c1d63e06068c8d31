"""Read-only views: snapshots, live files at a snapshot, commit history and outcomes."""

from __future__ import annotations

import json

from sqlalchemy import Engine

from coordinator.db import repositories as repo
from coordinator.db.engine import read_only
from coordinator.db.repositories import live_files as index
from coordinator.domain.committable import OverwriteTarget, partition_spec_target
from coordinator.errors import InvalidRequest, SnapshotNotFound
from coordinator.storage.fileio import FileIO
from coordinator.usecases.hold_ends import HoldEnds
from coordinator.usecases.manifests import ManifestStore
from coordinator.usecases.scan_plan import ScanPlan
from coordinator.usecases.scan_plan import plan as plan_scan
from coordinator.usecases.tables import Table, Tables
from coordinator_client.models import (
    BucketSequenceModel,
    CommitOutcomeResponse,
    CommitRecordModel,
    ConflictModel,
    SequenceNumbersResponse,
    SnapshotModel,
    SnapshotRef,
)
from paimon_format.manifest import ManifestEntry
from paimon_format.snapshot import Snapshot


class Reads:
    def __init__(self, engine: Engine, fileio: FileIO, tables: Tables, ends: HoldEnds) -> None:
        self._engine = engine
        self._fileio = fileio
        self._tables = tables
        self._ends = ends

    def snapshot(self, table_id: str, snapshot_id: int | None) -> Snapshot:
        """One snapshot (the latest when `snapshot_id` is None).

        Raises:
            TableNotFound, SnapshotNotFound.
        """
        table = self._tables.get(table_id)
        if snapshot_id is None:
            snapshot_id = self._tables.latest_snapshot_id(table_id)
            if snapshot_id == 0:
                raise SnapshotNotFound(f"table {table_id} has no snapshot yet")
        with self._engine.connect() as conn:
            stored = repo.get_snapshot(conn, table.id, snapshot_id)
        if stored is not None:
            return Snapshot.from_json(stored.body)
        path = table.layout.snapshot(snapshot_id)
        if not self._fileio.exists(path):
            raise SnapshotNotFound(f"snapshot {snapshot_id} of {table_id} does not exist")
        return Snapshot.from_json(self._fileio.read(path).decode())

    def snapshots(self, table_id: str, *, limit: int, before: int | None) -> list[SnapshotModel]:
        """Newest first."""
        table = self._tables.get(table_id)
        with self._engine.connect() as conn:
            stored = repo.list_snapshots(conn, table.id, limit, before)
        return [snapshot_model(Snapshot.from_json(s.body)) for s in stored]

    def live_entries(
        self, table_id: str, snapshot_id: int | None
    ) -> tuple[Snapshot | None, list[ManifestEntry]]:
        """The live files at a snapshot (the latest by default) as manifest entries; none before the first.

        Raises:
            TableNotFound, SnapshotNotFound.
        """
        table = self._tables.get(table_id)
        if snapshot_id is None:
            snapshot_id = self._tables.latest_snapshot_id(table_id)
            if snapshot_id == 0:
                return None, []
        snapshot = self.snapshot(table_id, snapshot_id)
        return snapshot, ManifestStore.for_table(self._fileio, table).scan(snapshot)

    def files(
        self, table_id: str, snapshot_id: int | None, partition: str | None, scope: str = "all"
    ) -> ScanPlan:
        """The live data files at a snapshot (a reader's scan plan), optionally of one partition: planned
        now (manifest lists read and pruned by the partition, DELETE entries noted), files read as the
        plan is iterated. With `scope` "delta", only the files that snapshot adds (scan_plan.plan); the
        snapshot must then be named, as "the latest" would race with the next commit.

        Raises:
            TableNotFound, SnapshotNotFound, InvalidRequest (a bad `partition`; `scope` delta without
            `snapshot`).
        """
        table = self._tables.get(table_id)
        target = _partition_filter(table, partition)
        delta = scope == "delta"
        if delta and snapshot_id is None:
            raise InvalidRequest("scope=delta needs the snapshot whose added files to list", field="snapshot")
        snapshot = self._snapshot_or_none(table_id, snapshot_id)
        spec = target.spec if target is not None else None
        return plan_scan(self._fileio, table, snapshot, spec, delta=delta)

    def _snapshot_or_none(self, table_id: str, snapshot_id: int | None) -> Snapshot | None:
        """The snapshot asked for; the latest when None, and None if the table has none yet."""
        if snapshot_id is None:
            snapshot_id = self._tables.latest_snapshot_id(table_id)
            if snapshot_id == 0:
                return None
        return self.snapshot(table_id, snapshot_id)

    def sequence_numbers(self, table_id: str, partition: str | None) -> SequenceNumbersResponse:
        """The highest sequence number of each bucket's live files at the latest snapshot, optionally of
        one partition: what a writer numbers its new files after, without listing every file.

        The database computes it from the live-file index; only while the index lags the table (a
        snapshot adopted from an outside writer, not yet committed on top of) are manifests read.
        """
        table = self._tables.get(table_id)
        target = _partition_filter(table, partition)
        shape = table.shape
        highest: dict[tuple[bytes, int], int] | None = None
        with read_only(self._engine) as conn:
            latest = repo.latest_snapshot_id(conn, table.id)
            if latest is not None and latest == index.index_snapshot(conn, table.id):
                partitions = None
                if target is not None:
                    partitions = [
                        p for p in index.live_partitions(conn, table.id) if target.matches(p, shape)
                    ]
                found = index.max_sequence_numbers(conn, table.id, partitions)
                highest = {(b.partition, b.bucket): b.max_sequence_number for b in found}
        if highest is None:
            # Opened after the read above is closed: SQLite would wait on this thread's own lock.
            latest, highest = self._scanned_sequence_numbers(table, target)
        return SequenceNumbersResponse(
            snapshot_id=latest or None,
            buckets=[
                BucketSequenceModel(partition=shape.partition_json(row), bucket=bucket, max_sequence_number=n)
                for (row, bucket), n in sorted(highest.items())
            ],
        )

    def _scanned_sequence_numbers(
        self, table: Table, target: OverwriteTarget | None
    ) -> tuple[int | None, dict[tuple[bytes, int], int]]:
        snapshot, entries = self.live_entries(table.id, None)
        highest: dict[tuple[bytes, int], int] = {}
        for e in entries:
            if target is None or target.matches(e.partition, table.shape):
                key = (e.partition, e.bucket)
                highest[key] = max(highest.get(key, e.file.max_sequence_number), e.file.max_sequence_number)
        return (snapshot.id if snapshot else None), highest

    def commits(
        self, table_id: str, *, limit: int, search: repo.HistoryFilter | None = None
    ) -> list[CommitRecordModel]:
        table = self._tables.get(table_id)
        self._ends.settled([table.id])  # the timings and rejections of commits answered here are recorded
        with self._engine.connect() as conn:
            stored = repo.list_commits(conn, table.id, limit, search=search)
        return [commit_record(c) for c in stored]

    def outcome(
        self, table_id: str, commit_user: str, identifier: int, idempotency_key: str | None = None
    ) -> CommitOutcomeResponse:
        """committed, rejected or unknown (never received).

        With the request's Idempotency-Key the answer is about that very request: not about an earlier
        retryable rejection of the same identifier, nor another commit under the same name (a batch
        commit's identifier names none), so a client may safely resend on `unknown`: the resend is
        answered from the record if it is the same changes. Without a key, the latest attempt of that
        commitUser and identifier answers.
        """
        table = self._tables.get(table_id)
        self._ends.settled([table.id])  # a rejection answered here is recorded
        with self._engine.connect() as conn:
            if idempotency_key is not None:
                found = repo.find_by_idempotency_key(conn, table.id, idempotency_key)
                if found is not None and (found.commit_user, found.identifier) != (commit_user, identifier):
                    found = None  # the key of another commit: nothing is known of this one by it
            else:
                found = repo.find_committed(conn, table.id, commit_user, identifier)
                if found is None:
                    found = repo.find_latest_attempt(conn, table.id, commit_user, identifier)
        if found is None:
            return CommitOutcomeResponse(commit_user=commit_user, identifier=identifier, status="unknown")
        return CommitOutcomeResponse(
            commit_user=commit_user,
            identifier=identifier,
            status="committed" if found.outcome == "committed" else "rejected",
            snapshots=[SnapshotRef.model_validate(s) for s in found.snapshots],
            conflict=ConflictModel.model_validate(found.conflict) if found.conflict else None,
        )


def commit_record(c: repo.StoredCommit) -> CommitRecordModel:
    return CommitRecordModel(
        id=c.id,
        table_id=c.table_id,
        commit_user=c.commit_user,
        identifier=c.identifier,
        outcome=c.outcome,
        snapshots=[SnapshotRef.model_validate(s) for s in c.snapshots],
        timings=c.timings,
        conflict=ConflictModel.model_validate(c.conflict) if c.conflict else None,
        created_at=c.created_at,
        action=c.action,
        details=c.details,
    )


def snapshot_model(s: Snapshot) -> SnapshotModel:
    return SnapshotModel(
        id=s.id,
        schema_id=s.schema_id,
        commit_user=s.commit_user,
        commit_identifier=s.commit_identifier,
        commit_kind=s.commit_kind.value,
        time_millis=s.time_millis,
        total_record_count=s.total_record_count,
        delta_record_count=s.delta_record_count,
        base_manifest_list=s.base_manifest_list,
        delta_manifest_list=s.delta_manifest_list,
        watermark=s.watermark,
    )


def _partition_filter(table: Table, partition: str | None) -> OverwriteTarget | None:
    """`?partition={"dt": "2024-01-01"}` -> a filter on the partition values (a prefix of keys is fine)."""
    if partition is None:
        return None
    try:
        spec = json.loads(partition)
    except json.JSONDecodeError:
        raise InvalidRequest("partition must be a JSON object", field="partition") from None
    if not isinstance(spec, dict):
        raise InvalidRequest("partition must be a JSON object", field="partition")
    try:
        return partition_spec_target(spec, table.shape, [])
    except InvalidRequest as e:
        raise InvalidRequest(e.message, field="partition") from None
