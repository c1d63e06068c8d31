"""What a table's snapshots and tags reference on storage: the sets expiration, rollback, tag deletion and
orphan cleanup subtract from one another before they delete anything."""

from __future__ import annotations

from collections.abc import Iterable

from coordinator.storage.fileio import FileIO
from coordinator.usecases.manifests import ManifestStore
from coordinator.usecases.tables import Table
from paimon_format.manifest import FileKind, ManifestEntry
from paimon_format.partition_path import bucket_dir
from paimon_format.snapshot import Snapshot


class TableFiles:
    """Reads one table's manifests (each once) and answers with absolute paths."""

    def __init__(self, fileio: FileIO, table: Table) -> None:
        self._table = table
        self._store = ManifestStore.for_table(fileio, table)

    def manifest_paths(self, snapshot: Snapshot) -> set[str]:
        """The snapshot's manifest lists, every manifest in them (data and changelog), its index manifest."""
        names = set()
        for list_name in self._list_names(snapshot):
            names.add(list_name)
            names.update(m.file_name for m in self._store.read_list(list_name))
        if snapshot.index_manifest:
            # Carried forward from tables Paimon wrote with an index; the index files it names live in
            # index/, which maintenance leaves alone.
            names.add(snapshot.index_manifest)
        return {self._table.layout.manifest(n) for n in names}

    def live_paths(self, snapshot: Snapshot) -> set[str]:
        """The data files a reader of the snapshot reads (with their extra files)."""
        return self._paths(self._store.scan(snapshot))

    def delta_paths(self, snapshot: Snapshot, kind: FileKind) -> set[str]:
        """The data files the snapshot itself added (ADD) or removed (DELETE)."""
        return self._paths(e for e in self._delta(snapshot) if e.kind == kind)

    def changelog_paths(self, snapshot: Snapshot) -> set[str]:
        if not snapshot.changelog_manifest_list:
            return set()
        metas = self._store.read_list(snapshot.changelog_manifest_list)
        return self._paths(e for m in metas for e in self._store.read(m))

    def _delta(self, snapshot: Snapshot) -> list[ManifestEntry]:
        return [e for m in self._store.read_list(snapshot.delta_manifest_list) for e in self._store.read(m)]

    def _list_names(self, snapshot: Snapshot) -> list[str]:
        names = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
        return names + ([snapshot.changelog_manifest_list] if snapshot.changelog_manifest_list else [])

    def _paths(self, entries: Iterable[ManifestEntry]) -> set[str]:
        layout, shape = self._table.layout, self._table.shape
        out = set()
        for e in entries:
            external = e.file.external_path
            if external:
                # Written under an external root, not in its bucket's folder; Paimon puts the extra
                # files beside the data file (DataFilePathFactory.toAlignedPath).
                directory = external[: external.rfind("/") + 1]
                out.add(external)
            else:
                directory = layout.data_file(shape.partition_dir(e.partition), bucket_dir(e.bucket), "")
                out.add(directory + e.file.file_name)
            out.update(directory + extra for extra in e.file.extra_files)
        return out
