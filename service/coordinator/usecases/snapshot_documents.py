"""Snapshots as the JSON documents they were recorded as: what Paimon's REST catalog clients load.

The documents are served as recorded, never rendered again from a parsed snapshot: a client's own
snapshot (unknown keys, an int64 commitIdentifier, Java's `operation`) comes back exactly as it sent it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import Engine

from coordinator.db import repositories as repo
from coordinator.db.engine import read_only
from coordinator.errors import SnapshotNotFound, TableNotFound, TagNotFound
from coordinator.storage.fileio import FileIO
from coordinator.usecases.tables import Tables
from coordinator_client.format.snapshot import Snapshot

SnapshotDocument = dict[str, object]

EARLIEST = "EARLIEST"
LATEST = "LATEST"


@dataclass(frozen=True)
class TableHead:
    """The table's latest snapshot and the table's size at it, as the commit point recorded them."""

    snapshot: SnapshotDocument
    record_count: int
    file_bytes: int
    file_count: int
    last_file_creation_millis: int


class SnapshotDocuments:
    def __init__(self, engine: Engine, fileio: FileIO, tables: Tables) -> None:
        self._engine = engine
        self._fileio = fileio
        self._tables = tables

    def head(self, table_id: str) -> TableHead:
        """The latest snapshot with the table's size, from the database (storage only if its row is gone).

        Raises:
            TableNotFound, SnapshotNotFound: the table has no snapshot yet.
        """
        with read_only(self._engine) as conn:
            row = repo.get_table(conn, table_id)
            if row is None:
                raise TableNotFound(f"table {table_id} does not exist")
            if row.latest_snapshot_id == 0:
                raise SnapshotNotFound(f"table {table_id} has no snapshot yet")
            stored = repo.get_snapshot(conn, table_id, row.latest_snapshot_id)
        body = stored.body if stored is not None else self._file(table_id, row.latest_snapshot_id)
        document = _document(body)
        snapshot = Snapshot.from_json(body)
        return TableHead(
            document,
            # A size not known yet (a row older than revision 0005, before the backfill reaches it):
            # the snapshot's own record count, and no files rather than a guess.
            row.total_record_count if row.total_record_count is not None else snapshot.total_record_count,
            row.file_bytes or 0,
            row.file_count or 0,
            # Files are written before the commit that adds them: its time bounds their creation.
            snapshot.time_millis,
        )

    def version(self, table_id: str, version: str) -> SnapshotDocument:
        """EARLIEST, LATEST, a snapshot id, or a tag's name.

        Raises:
            TableNotFound, SnapshotNotFound (TagNotFound for a name that is no tag).
        """
        self._tables.get(table_id)
        if version.isdigit():
            return self._recorded(table_id, int(version))
        if version in (EARLIEST, LATEST):
            with read_only(self._engine) as conn:
                found = (
                    repo.earliest_recorded_id(conn, table_id)
                    if version == EARLIEST
                    else (repo.latest_snapshot_id(conn, table_id) or None)
                )
            if found is None:
                raise SnapshotNotFound(f"table {table_id} has no snapshot yet")
            return self._recorded(table_id, found)
        return self.tag(table_id, version)

    def tag(self, table_id: str, name: str) -> SnapshotDocument:
        """The snapshot a tag holds, as its `tag/tag-<name>` file has it (`name` is a checked tag name).

        Raises: TableNotFound, TagNotFound.
        """
        table = self._tables.get(table_id)
        try:
            return _document(self._fileio.read(table.layout.tag(name)).decode())
        except (FileNotFoundError, ValueError):
            raise TagNotFound(f"{table_id} has no tag {name!r}") from None

    def page(
        self, table_id: str, *, limit: int, before: int | None
    ) -> tuple[list[SnapshotDocument], int | None]:
        """Recorded snapshots newest first, those older than `before`; and where the next page starts.

        Raises: TableNotFound.
        """
        table = self._tables.get(table_id)
        with read_only(self._engine) as conn:
            stored = repo.list_snapshots(conn, table.id, limit + 1, before)
        more = len(stored) > limit
        return [_document(s.body) for s in stored[:limit]], stored[limit - 1].snapshot_id if more else None

    def _recorded(self, table_id: str, snapshot_id: int) -> SnapshotDocument:
        with read_only(self._engine) as conn:
            stored = repo.get_snapshot(conn, table_id, snapshot_id)
        if stored is None:
            raise SnapshotNotFound(f"snapshot {snapshot_id} of {table_id} does not exist (or has expired)")
        return _document(stored.body)

    def _file(self, table_id: str, snapshot_id: int) -> str:
        table = self._tables.get(table_id)
        try:
            return self._fileio.read(table.layout.snapshot(snapshot_id)).decode()
        except FileNotFoundError:
            raise SnapshotNotFound(f"snapshot {snapshot_id} of {table_id} is not on storage") from None


def _document(body: str) -> SnapshotDocument:
    document = json.loads(body)
    if not isinstance(document, dict):
        raise ValueError("a snapshot is a JSON object")
    return document
