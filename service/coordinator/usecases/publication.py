"""Publication: snapshot files appear on storage only after the commit point recorded them.

`snapshot-N` is created if absent, never overwritten, then the LATEST hint moves. A crash between the
commit point and publication is rolled forward by the next commit's catch-up or at start-up, from the
text the database recorded. A `snapshot-N+1` that a writer outside the coordinator published is adopted:
the table's head moves to it, it is never overwritten, and the table's recorded size moves by its delta
manifest list (the only manifests read for it).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy import Engine

from coordinator.db import repositories as repo
from coordinator.db.engine import autocommit
from coordinator.storage.fileio import FileIO
from coordinator.usecases.live_index import LiveIndex
from coordinator.usecases.snapshot_file import SnapshotFile
from coordinator.usecases.table_hold import TableHolds
from coordinator.usecases.table_state import SnapshotLoader, TableState, TableStates
from coordinator.usecases.table_stats import delta_on_storage
from coordinator.usecases.tables import Table, Tables
from coordinator_client.format.snapshot import LATEST, format_hint

log = logging.getLogger(__name__)


class Publication:
    def __init__(
        self,
        engine: Engine,
        bookkeeping: Engine,
        fileio: FileIO,
        tables: Tables,
        holds: TableHolds,
        states: TableStates,
        live_index: LiveIndex,
    ) -> None:
        self._engine = engine
        self._bookkeeping = bookkeeping
        self._fileio = fileio
        self._tables = tables
        self._holds = holds
        self._states = states
        self._live_index = live_index

    def catch_up(self, table: Table, latest: int, unpublished: Sequence[repo.StoredSnapshot]) -> TableState:
        """Under the lock: publish what a crash left unpublished, adopt outside snapshots, and bring the
        in-memory state and the live-file index up to the table's head."""
        files = [SnapshotFile(s.snapshot_id, s.body) for s in unpublished]
        if files:
            self.publish(table, files)
        latest = self._adopt_outside_snapshots(table, latest)
        loader = SnapshotLoader(self._fileio, table, {f.id: f.body for f in files})
        state = self._states.at(table, latest, loader)
        self._live_index.catch_up(table, latest, loader, state.manifests)
        return state

    def publish(self, table: Table, files: Sequence[SnapshotFile]) -> None:
        """Write snapshot files and the LATEST hint, then mark them published."""
        self.write(table, files)
        with autocommit(self._bookkeeping) as conn:
            repo.mark_published(conn, table.id, through=files[-1].id)

    def write(self, table: Table, files: Sequence[SnapshotFile]) -> None:
        """snapshot-N create-if-absent (never overwritten), then the LATEST hint."""
        if not files:
            return
        for file in files:
            path = table.layout.snapshot(file.id)
            body = file.body.encode()
            try:
                self._fileio.write_new(path, body)
            except FileExistsError:
                if self._fileio.read(path) != body:
                    log.error(
                        "snapshot-%d of %s on storage differs from the committed one", file.id, table.id
                    )
        self._fileio.overwrite(table.layout.hint(LATEST), format_hint(files[-1].id))

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
                self.publish(table, [SnapshotFile(s.snapshot_id, s.body) for s in unpublished])
                recovered.append(table_id)
            finally:
                self._holds.release(lease)
        return recovered

    def _adopt_outside_snapshots(self, table: Table, latest: int) -> int:
        while self._fileio.exists(table.layout.snapshot(latest + 1)):
            adopted = SnapshotFile.read(self._fileio.read(table.layout.snapshot(latest + 1)).decode())
            snapshot = adopted.snapshot
            assert snapshot is not None  # read from its text
            delta = delta_on_storage(self._fileio, table, snapshot)  # bounded by the delta
            with self._engine.begin() as conn:
                if not repo.advance_latest_with_stats(
                    conn,
                    table.id,
                    latest,
                    adopted.id,
                    total_record_count=snapshot.total_record_count,
                    files=delta.files,
                    size=delta.bytes,
                    at=snapshot.time_millis / 1000,
                ):
                    break
                repo.insert_snapshots(conn, table.id, [adopted.row(published=True)])
            log.info("adopted snapshot %d of %s written outside the coordinator", adopted.id, table.id)
            latest = adopted.id
        return latest
