"""What every maintenance use case shares: holding the table, the fenced and recorded change, finding
the table's snapshots and tags on storage, and deleting only inside the table's folder."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from sqlalchemy import Connection

from coordinator.clock import Clock
from coordinator.db.repositories.events import insert_events
from coordinator.domain.file_references import FileReferences
from coordinator.domain.table_paths import (
    check_inside,
    external_problem,
    external_roots,
    has_control,
    inside,
)
from coordinator.errors import PathOutsideTable, SnapshotNotFound
from coordinator.observability.metrics import Metrics
from coordinator.storage.fileio import FileIO
from coordinator.usecases.path_refusals import audit_refusal
from coordinator.usecases.reads import Reads
from coordinator.usecases.snapshots_on_storage import find_earliest_snapshot_id
from coordinator.usecases.table_events import maintenance_event
from coordinator.usecases.table_files import TableFiles
from coordinator.usecases.table_hold import Hold, TableHolds
from coordinator.usecases.tables import Table, Tables
from coordinator_client.models import DeletedFiles
from paimon_format.snapshot import Snapshot

log = logging.getLogger(__name__)


@dataclass
class Deleted:
    """What an action deleted, counted per kind (the DeletedFiles of its answer and history row)."""

    snapshots: int = 0
    data_files: int = 0
    changelog_files: int = 0
    manifests: int = 0

    @classmethod
    def of(cls, files: FileReferences, *, snapshots: int = 0) -> Deleted:
        return cls(snapshots, len(files.data), len(files.changelog), len(files.manifests))

    def add(self, other: Deleted) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def model(self) -> DeletedFiles:
        return DeletedFiles(**dataclasses.asdict(self))


class TableActions:
    """The table lock, the history and the storage lookups of maintenance actions."""

    def __init__(
        self,
        fileio: FileIO,
        tables: Tables,
        reads: Reads,
        holds: TableHolds,
        *,
        metrics: Metrics,
        clock: Clock,
    ) -> None:
        self.fileio = fileio
        self.tables = tables
        self.clock = clock
        self.metrics = metrics
        self._reads = reads
        self._holds = holds

    @property
    def acquire_timeout(self) -> float:
        return self._holds.acquire_timeout

    def hold(self, table: Table) -> AbstractContextManager[Hold]:
        """Hold the table for one action; a lease lost before the action is written is a 409 LOCK_LOST.

        Raises:
            LockUnavailable, CommitConflict (LOCK_LOST).
        """
        return self._holds.hold([table], "maintenance")

    @contextmanager
    def recorded(
        self, hold: Hold, table: Table, *, actor: str, action: str, details: dict[str, object]
    ) -> Iterator[Connection]:
        """The action's fenced transaction, with its row in the table's history and its event in the
        outbox (usecases/table_events.py); counted once written."""
        with hold.fenced() as conn:
            hold.record(conn, table.id, actor=actor, action=action, details=details)
            event = maintenance_event(table, action, actor, details, self.clock.now())
            if event is not None:
                insert_events(conn, [event])
            yield conn
        self.metrics.maintenance.labels(action).inc()

    def record(
        self, hold: Hold, table: Table, *, actor: str, action: str, details: dict[str, object]
    ) -> None:
        """An action that changed storage only: its history row, fenced."""
        with self.recorded(hold, table, actor=actor, action=action, details=details):
            pass

    def files(self, table: Table) -> TableFiles:
        return TableFiles(self.fileio, table)

    def snapshot(self, table: Table, snapshot_id: int) -> Snapshot:
        return self._reads.snapshot(table.id, snapshot_id)

    def retained_snapshot(self, table: Table, snapshot_id: int | None) -> Snapshot:
        """A snapshot expiration has not removed (the latest when `snapshot_id` is None).

        Raises:
            SnapshotNotFound.
        """
        latest = self.tables.latest_snapshot_id(table.id)
        if snapshot_id is None:
            if latest == 0:
                raise SnapshotNotFound(f"table {table.id} has no snapshot yet")
            snapshot_id = latest
        earliest = self.earliest_id(table)
        if earliest is None or not earliest <= snapshot_id <= latest:
            raise SnapshotNotFound(
                f"snapshot {snapshot_id} of {table.id} does not exist (retained: "
                f"{f'{earliest}..{latest}' if earliest is not None else 'none'})"
            )
        return self.snapshot(table, snapshot_id)

    def earliest_id(self, table: Table) -> int | None:
        return find_earliest_snapshot_id(self.fileio, table.layout)

    def tags(self, table: Table) -> dict[str, Snapshot]:
        """Every tag of the table by name, read from its `tag/tag-<name>` file."""
        tags = {}
        for stored in self.fileio.walk(table.layout.tag_dir):
            name = stored.path.rsplit("/", 1)[-1]
            if name.startswith("tag-"):
                try:
                    tags[name[len("tag-") :]] = Snapshot.from_json(self.fileio.read(stored.path))
                except FileNotFoundError:
                    continue
        return tags

    @contextmanager
    def audited(self, hold: Hold, table: Table, *, actor: str, action: str) -> Iterator[None]:
        """A refused path (PathOutsideTable) raised in the block goes into the audit log first."""
        try:
            yield
        except PathOutsideTable as refused:
            with hold.fenced() as conn:
                audit_refusal(conn, self.clock.now(), table.id, refused, door=action, actor=actor)
            raise

    @staticmethod
    def deletable(table: Table, files: FileReferences) -> FileReferences:
        """What of `files` the coordinator deletes: all of them but the files under the table's external
        roots (`data-file.external-paths`), which it leaves where they are, since other tables may write
        under the same roots. Checked before anything is deleted, so a refusal leaves the table as it was.

        Raises:
            PathOutsideTable: a path lies neither inside the table's folder nor under its external roots
                (metadata an outside writer left; the commit doors refuse such names).
        """
        root, roots = table.layout.root, external_roots(table.shape.schema.options)

        def kept(paths: frozenset[str], what: str) -> frozenset[str]:
            out = set()
            for path in paths:
                if inside(root, path):
                    if has_control(path):  # a native extra file's odd name: left, never guessed at
                        log.warning("left %r of %s: its name has control characters", path, table.id)
                        continue
                    out.add(path)
                elif external_problem(path, roots) is None:
                    continue
                else:
                    check_inside(root, path, what)
            return frozenset(out)

        return FileReferences(
            kept(files.data, "a data file"),
            kept(files.changelog, "a changelog file"),
            kept(files.manifests, "a manifest"),
        )

    def delete(self, table: Table, paths: Iterable[str]) -> int:
        """Delete the files, each only if it lies inside the table's folder; returns how many.

        Raises:
            PathOutsideTable: before deleting the path (callers check with `deletable` first).
        """
        count = 0
        for path in paths:
            check_inside(table.layout.root, path, "a file")
            self.fileio.delete(path)
            count += 1
        return count
