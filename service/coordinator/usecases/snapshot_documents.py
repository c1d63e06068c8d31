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
from paimon_format.snapshot import Snapshot

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
        """The latest snapshot on storage, with the table's size, from the database (storage only if
        its row is gone).

        A snapshot the commit point recorded but has not published yet is not answered: Paimon's clients
        read snapshot files by id (their check for their own commit after a failed attempt fails on a
        missing one), so they are told of the newest published snapshot, and their commit on top of it
        is answered `success: false` until they see the new one. Published means on storage: a commit is
        answered before its row is marked (usecases/hold_ends.py), and its writer reads it back at once.

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
            if stored is not None and not self._published(table_id, stored):
                stored = repo.latest_published(conn, table_id)
                if stored is None:
                    raise SnapshotNotFound(f"table {table_id} has no published snapshot yet")
        body = stored.body if stored is not None else self._file(table_id, row.latest_snapshot_id)
        snapshot = Snapshot.from_json(body)
        records = row.total_record_count if snapshot.id == row.latest_snapshot_id else None
        return TableHead(
            _document(body),
            # A size not known yet (a row older than revision 0005, before the backfill reaches it), or
            # the head's while it is being published: the snapshot's own record count. Files and bytes
            # are the head's (0 while not known) rather than a guess.
            records if records is not None else snapshot.total_record_count,
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
        if version == LATEST:
            return self.head(table_id).snapshot
        if version == EARLIEST:
            with read_only(self._engine) as conn:
                found = repo.earliest_recorded_id(conn, table_id)
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
        # Only the newest can be unpublished still (snapshots are published in order).
        page = [_document(s.body) for s in stored[:limit] if self._published(table.id, s)]
        return page, stored[limit - 1].snapshot_id if more else None

    def _recorded(self, table_id: str, snapshot_id: int) -> SnapshotDocument:
        with read_only(self._engine) as conn:
            stored = repo.get_snapshot(conn, table_id, snapshot_id)
        if stored is None or not self._published(table_id, stored):
            raise SnapshotNotFound(f"snapshot {snapshot_id} of {table_id} does not exist (or has expired)")
        return _document(stored.body)

    def _published(self, table_id: str, stored: repo.StoredSnapshot) -> bool:
        """Marked published, or not yet marked while snapshot-N on storage holds its text (written, and
        its finish still to come or lost in a crash; not a snapshot an outside writer put under its id)."""
        if stored.published:
            return True
        try:
            on_storage = self._fileio.read(self._tables.cached(table_id).layout.snapshot(stored.snapshot_id))
        except (FileNotFoundError, TableNotFound):
            return False
        return on_storage.decode() == stored.body

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
