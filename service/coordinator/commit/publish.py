"""Publication: snapshot files appear on storage only after the commit point recorded them.

`snapshot-N` is created if absent, never overwritten, then the LATEST hint moves. A crash between the
commit point and publication is rolled forward by the next commit's catch-up or at start-up, from the
text the database recorded. A `snapshot-N+1` that a writer outside the coordinator published is adopted:
the table's head moves to it, it is never overwritten, and the table's recorded size moves by its delta
manifest list (the only manifests read for it).

An outside writer can also take a snapshot id between our commit point and our publication (on an
object store the create is conditional, so it cannot take it later without overwriting, see below).
Then our snapshot from that id on was never visible and is not acknowledged: `forget_taken` moves the
head back, forgets those commits' rows and the caller decides them again on top of the outsider's
snapshot (counted in coordinator_snapshots_taken, and logged).

An outside writer without a conditional create (pypaimon checks that snapshot-N is absent, then copies
its file there) can still overwrite a snapshot we published and acknowledged. Every catch-up, and a
periodic check (`Committer.reconcile`), compares the table's latest snapshot on storage with the text we
recorded: when they differ, the outsider's snapshot is taken in as that id, our commit is marked
`overwritten`, and its changes are applied again on top as a new snapshot from the manifests it wrote
(`Reapplication`), so the rows of an acknowledged commit come back.
"""

import logging
import time
from collections.abc import Sequence

from sqlalchemy import Engine

from coordinator.commit.member import TableDecisions
from coordinator.commit.table_state import TableStates
from coordinator.db import repositories as repo
from coordinator.db.engine import autocommit
from coordinator.db.repositories import live_files as index
from coordinator.errors import StorageUnavailable
from coordinator.observability.metrics import Metrics
from coordinator.storage.fileio import FileIO
from coordinator.usecases.snapshot_file import SnapshotFile
from coordinator.usecases.table_hold import TableHolds
from coordinator.usecases.table_stats import delta_on_storage
from coordinator.usecases.tables import Table, Tables
from paimon_format.snapshot import LATEST, Snapshot, format_hint

log = logging.getLogger(__name__)


class SnapshotTaken(Exception):
    """A writer outside the coordinator created `snapshot-<snapshot_id>` before our publication."""

    def __init__(self, snapshot_id: int) -> None:
        super().__init__(f"snapshot-{snapshot_id} was created by another writer")
        self.snapshot_id = snapshot_id


class Publication:
    def __init__(
        self,
        engine: Engine,
        bookkeeping: Engine,
        fileio: FileIO,
        tables: Tables,
        holds: TableHolds,
        states: TableStates,
        metrics: Metrics,
    ) -> None:
        self._engine = engine
        self._bookkeeping = bookkeeping
        self._fileio = fileio
        self._tables = tables
        self._holds = holds
        self._states = states
        self._metrics = metrics

    def publish(self, table: Table, files: Sequence[SnapshotFile]) -> None:
        """Write snapshot files and the LATEST hint, then mark them published."""
        self.write(table, files)
        with autocommit(self._bookkeeping) as conn:
            repo.mark_published(conn, table.id, through=files[-1].id)

    def publish_group(self, decided: TableDecisions, files: Sequence[SnapshotFile]) -> None:
        """After a group's commit point: its snapshot files on storage. When an outside writer took one
        of their ids first, the members from there on are forgotten and decided again on top of it.

        Raises:
            StorageUnavailable: the store failed; the snapshots stand recorded, and the next commit to
                the table (or a resend) publishes them.
        """
        table = decided.table
        try:
            self.write(table, files)
        except SnapshotTaken as taken:
            # Our snapshots from the taken id on were never visible: forgotten, and their members
            # decided again on top of the outsider's snapshot.
            self.forget_taken(table, taken.snapshot_id)
            decided.requeue_from(taken.snapshot_id)
        except StorageUnavailable as failed:
            raise StorageUnavailable(
                f"recorded as snapshot(s) up to {files[-1].id}, but publishing failed "
                f"({failed.message}); the next commit to the table, or a resend of this one, "
                "publishes it",
                retry_after_seconds=failed.retry_after_seconds,
            ) from failed

    def write(self, table: Table, files: Sequence[SnapshotFile]) -> None:
        """snapshot-N create-if-absent (never overwritten), then the LATEST hint.

        Raises:
            SnapshotTaken: a writer outside the coordinator created one of the snapshot files first; the
                ones before it are published (LATEST names the last of them).
        """
        published: SnapshotFile | None = None
        for file in files:
            path = table.layout.snapshot(file.id)
            body = file.body.encode()
            try:
                self._fileio.write_new(path, body)
            except FileExistsError:
                if self._fileio.read(path) != body:  # the same text: our own earlier, interrupted publish
                    if published is not None:
                        self._fileio.overwrite(table.layout.hint(LATEST), format_hint(published.id))
                    raise SnapshotTaken(file.id) from None
            published = file
        if published is not None:
            self._fileio.overwrite(table.layout.hint(LATEST), format_hint(published.id))

    def forget_taken(self, table: Table, taken: int) -> list[tuple[str, int]]:
        """Under the lock, after SnapshotTaken: forget our snapshots from `taken` on, which no reader ever
        saw. The head moves back to `taken - 1` (the next catch-up adopts the outsider's snapshot there),
        the table's size back by their deltas, the live-file index is rebuilt by the next commit, and
        their history rows are forgotten (they were never visible nor acknowledged: deciding them again
        records them anew); returns those commits' keys.
        """
        with self._engine.connect() as conn:
            latest = repo.latest_snapshot_id(conn, table.id) or 0
            forgotten = [repo.get_snapshot(conn, table.id, i) for i in range(taken, latest + 1)]
            before = repo.get_snapshot(conn, table.id, taken - 1) if taken > 1 else None
        snapshots = [Snapshot.from_json(s.body) for s in forgotten if s is not None]
        deltas = [delta_on_storage(self._fileio, table, s) for s in snapshots]
        keys = sorted({(s.commit_user, s.commit_identifier) for s in snapshots})
        ours = [(s.commit_user, s.commit_identifier, s.id) for s in snapshots]
        with self._engine.begin() as conn:
            moved = repo.advance_latest_with_stats(
                conn,
                table.id,
                latest,
                taken - 1,
                total_record_count=Snapshot.from_json(before.body).total_record_count if before else 0,
                files=-sum(d.files for d in deltas),
                size=-sum(d.bytes for d in deltas),
                at=time.time(),
            )
            if not moved:
                raise RuntimeError(f"the head of {table.id} moved while its lock was held")
            repo.delete_snapshots(conn, table.id, above=taken - 1)
            index.reset_index(conn, table.id)
            repo.delete_committed(conn, table.id, ours)
        self._states.invalidate(table.id)
        self._metrics.snapshots_taken.inc(len(snapshots))
        log.error(
            "snapshot %d of %s was created by a writer outside the coordinator between our commit point "
            "and our publication; %d commit(s) of ours are decided again on top of it: %s",
            taken,
            table.id,
            len(keys),
            ", ".join(f"{user}/{identifier}" for user, identifier in keys),
        )
        return keys

    def recover(self) -> list[str]:
        """At start-up: publish snapshots a crash left committed but unpublished; returns the tables fixed.

        A table whose lock is busy is left to its holder, whose catch-up does the same.
        """
        with self._engine.connect() as conn:
            pending = repo.tables_with_unpublished(conn)
        recovered = []
        for table_id in pending:
            table = self._tables.get(table_id)
            lease = self._holds.try_hold_one(table.lock_id, "recovery")
            if lease is None:
                continue
            try:
                with self._engine.connect() as conn:
                    unpublished = repo.unpublished_snapshots(conn, table_id)
                if not unpublished:
                    continue  # another replica published them between the two looks
                self.publish(table, [SnapshotFile(s.snapshot_id, s.body) for s in unpublished])
                recovered.append(table_id)
            finally:
                self._holds.release(lease)
        return recovered
