"""The latest snapshot of each table kept in memory, and brought up to date from storage on a miss."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from coordinator.domain.live_files import LiveFiles
from coordinator.domain.manifest_merge import MergeOptions
from coordinator.storage.fileio import FileIO
from coordinator.usecases.manifests import ManifestStore
from coordinator.usecases.tables import Table
from coordinator_client.format.manifest import ManifestFileMeta
from coordinator_client.format.snapshot import Snapshot

# Past this many snapshots behind, a rebuild from the latest manifests is cheaper than replaying deltas.
_MAX_REPLAY = 64


@dataclass
class TableState:
    """What a commit builds on: the latest snapshot, its live files and its data manifests."""

    snapshot: Snapshot | None
    live: LiveFiles
    data_manifests: list[ManifestFileMeta]
    manifests: ManifestStore
    options: MergeOptions
    lock: threading.Lock = field(default_factory=threading.Lock)

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

    def at(self, table: Table, latest: int, load_snapshot: SnapshotLoader) -> TableState:
        """The table's state at snapshot `latest`, replaying deltas or rebuilding as needed."""
        with self._lock:
            state = self._states.get(table.id)
        if state is None:
            options = MergeOptions.from_table_options(table.shape.schema.options)
            state = TableState(None, LiveFiles(), [], ManifestStore.for_table(self._fileio, table), options)
        if state.snapshot_id != latest:
            if state.snapshot_id < latest <= state.snapshot_id + _MAX_REPLAY and state.snapshot_id > 0:
                _replay(state, latest, load_snapshot)
            else:
                _rebuild(state, latest, load_snapshot)
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


def _replay(state: TableState, latest: int, load: SnapshotLoader) -> None:
    snapshot = state.snapshot
    for snapshot_id in range(state.snapshot_id + 1, latest + 1):
        snapshot = load(snapshot_id)
        for meta in state.manifests.read_list(snapshot.delta_manifest_list):
            state.live.apply(state.manifests.read(meta), snapshot_id)
    assert snapshot is not None
    state.snapshot = snapshot
    state.data_manifests = _data_manifests(state, snapshot)


def _rebuild(state: TableState, latest: int, load: SnapshotLoader) -> None:
    state.live = LiveFiles()
    state.snapshot = None
    state.data_manifests = []
    if latest == 0:
        return
    snapshot = load(latest)
    state.snapshot = snapshot
    live = state.manifests.scan(snapshot)
    state.data_manifests = _data_manifests(state, snapshot)
    state.live.apply(live, None)
    state.live.snapshot_id = latest


def _data_manifests(state: TableState, snapshot: Snapshot) -> list[ManifestFileMeta]:
    metas = state.manifests.data_manifests(snapshot)
    state.manifests.retain(m.file_name for m in metas)
    return metas
