"""The latest snapshot of each table and its data manifests, kept in memory between commits.

What a commit builds on besides the live-file index: the previous snapshot (ids, counters) and the
manifest list the merge works on. Both come from two manifest-list reads when the table moved (a
restart, another replica, a writer outside the coordinator), never from reading every manifest.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from coordinator.db.repositories import TableVersion
from coordinator.domain.manifest_merge import MergeOptions
from coordinator.storage.fileio import FileIO
from coordinator.usecases.manifests import ManifestStore
from coordinator.usecases.tables import Table, version_of
from paimon_format.manifest import ManifestFileMeta
from paimon_format.snapshot import Snapshot


@dataclass
class TableState:
    """What a commit builds on: the latest snapshot and its data manifests."""

    snapshot: Snapshot | None
    data_manifests: list[ManifestFileMeta]
    manifests: ManifestStore
    options: MergeOptions
    version: TableVersion
    """The table and schema it was built for: the merge options come from that schema's options."""

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.id if self.snapshot is not None else 0


class TableStates:
    """One TableState per table; only the holder of the table's lock reads or advances it."""

    def __init__(self, fileio: FileIO) -> None:
        self._fileio = fileio
        self._states: dict[str, TableState] = {}
        self._lock = threading.Lock()

    def invalidate(self, table_id: str) -> None:
        with self._lock:
            self._states.pop(table_id, None)

    def discard(self, table_id: str, state: TableState) -> None:
        """Nothing decided on `state` stands: the manifests written since it was built go, and the next
        holder builds the state again from what is committed."""
        state.manifests.discard_since(0)
        self.invalidate(table_id)

    def at(self, table: Table, latest: int, load_snapshot: SnapshotLoader) -> TableState:
        """The table's state at snapshot `latest`.

        A state built for another version of the table (dropped and created again, or its options
        changed, perhaps by another replica) is dropped, never built on.
        """
        version = version_of(table)
        with self._lock:
            state = self._states.get(table.id)
        if state is not None and state.version != version:
            state = None
        if state is None:
            options = MergeOptions.from_table_options(table.shape.schema.options)
            state = TableState(None, [], ManifestStore.for_table(self._fileio, table), options, version)
        if state.snapshot_id != latest:
            state.snapshot = load_snapshot(latest) if latest else None
            state.data_manifests = []
            if state.snapshot is not None:
                state.data_manifests = state.manifests.data_manifests(state.snapshot)
            state.manifests.retain(m.file_name for m in state.data_manifests)
        with self._lock:
            self._states[table.id] = state
        return state


class SnapshotLoader:
    """Reads snapshot JSON: the database keeps our bodies, storage has everyone's."""

    def __init__(self, fileio: FileIO, table: Table, stored: dict[int, str]) -> None:
        self._fileio = fileio
        self._table = table
        self._stored = stored

    def __call__(self, snapshot_id: int) -> Snapshot:
        body = self._stored.get(snapshot_id)
        if body is None:
            body = self._fileio.read(self._table.layout.snapshot(snapshot_id)).decode()
        return Snapshot.from_json(body)
