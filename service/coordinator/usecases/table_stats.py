"""Table sizes read from storage, for the few places that may read it: never a request that only asks.

The commit point moves a table's recorded size by each snapshot's delta entries, which it has in
memory. The other ways a head moves read storage, each bounded by what changed or run as maintenance:

- a snapshot adopted from a writer outside the coordinator: its delta manifest list only
  (`delta_on_storage`);
- registration of an existing table and rollback: the live files of the new head (`stats_on_storage`);
- rows recorded before revision 0005 (size NULL): `Backfill`, once, on a background thread at start-up.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from sqlalchemy import Engine

from coordinator.db import repositories as repo
from coordinator.domain.table_stats import EMPTY, FileDelta, TableStats, file_delta, stats_of_live
from coordinator.errors import CoordinatorError
from coordinator.storage.fileio import FileIO
from coordinator.usecases.manifests import ManifestStore
from paimon_format.manifest import decode_manifest, decode_manifest_list
from paimon_format.snapshot import Snapshot

if TYPE_CHECKING:
    from coordinator.usecases.tables import Table, Tables

log = logging.getLogger(__name__)


def delta_on_storage(fileio: FileIO, table: Table, snapshot: Snapshot) -> FileDelta:
    """What `snapshot` did to the live data files, from its delta manifest list alone."""
    layout = table.layout
    metas = decode_manifest_list(fileio.read(layout.manifest(snapshot.delta_manifest_list)))
    return file_delta(e for m in metas for e in decode_manifest(fileio.read(layout.manifest(m.file_name))))


def stats_on_storage(fileio: FileIO, table: Table, snapshot: Snapshot | None) -> TableStats:
    """The size of `snapshot` (None: no snapshot yet) from all its live files."""
    if snapshot is None:
        return EMPTY
    return stats_of_live(snapshot.total_record_count, ManifestStore.for_table(fileio, table).scan(snapshot))


def write_stats(engine: Engine, table_id: str, stats: TableStats, *, at_snapshot: int | None = None) -> bool:
    with engine.begin() as conn:
        return repo.set_stats(
            conn,
            table_id,
            total_record_count=stats.total_record_count,
            file_count=stats.file_count,
            file_bytes=stats.file_bytes,
            at_snapshot=at_snapshot,
        )


class Backfill:
    """Fills in, once, the size of every table whose size is not known (rows older than revision 0005).

    Runs on a background thread so that start-up does not wait for storage. A table's size is written
    only if its head is still the snapshot that was read; a table whose head moved meanwhile is read
    again, up to `ATTEMPTS` passes. Until then the overview shows its size as unknown (null).
    """

    ATTEMPTS = 3

    def __init__(self, engine: Engine, fileio: FileIO, tables: Tables) -> None:
        self._engine = engine
        self._fileio = fileio
        self._tables = tables
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the background pass if any table needs one."""
        with self._engine.connect() as conn:
            if not repo.tables_without_stats(conn):
                return
        self._thread = threading.Thread(target=self.run, name="table-stats-backfill", daemon=True)
        self._thread.start()

    def run(self) -> int:
        """Backfill every table that needs it; returns how many were filled."""
        filled = 0
        for _ in range(self.ATTEMPTS):
            with self._engine.connect() as conn:
                pending = repo.tables_without_stats(conn)
            if not pending:
                break
            for table_id, latest in pending:
                if self._stop.is_set():
                    return filled
                filled += self._fill(table_id, latest)
        return filled

    def wait(self, timeout: float = 60) -> None:
        """Until the background pass is over (tests, and tools that need every size)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def close(self) -> None:
        """Stop after the table being read, and wait for that."""
        self._stop.set()
        self.wait(30)

    def _fill(self, table_id: str, latest: int) -> int:
        try:
            table = self._tables.get(table_id)
            snapshot = None
            if latest:
                with self._engine.connect() as conn:
                    stored = repo.get_snapshot(conn, table_id, latest)
                body = stored.body if stored is not None else self._fileio.read(table.layout.snapshot(latest))
                snapshot = Snapshot.from_json(body if isinstance(body, str) else body.decode())
            stats = stats_on_storage(self._fileio, table, snapshot)
        except (CoordinatorError, OSError, ValueError) as error:
            log.warning("could not compute the size of %s at snapshot %d: %r", table_id, latest, error)
            return 0
        return int(write_stats(self._engine, table_id, stats, at_snapshot=latest))
