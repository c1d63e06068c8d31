"""The scan plan of a snapshot, streamed: a table of a million files is answered in constant memory.

Why a stream and not pages: a reader wants every live file of one snapshot, and the manifests are
read in order anyway. One pass over them, encoding each file as it is read, costs one manifest's worth of
memory and reads every manifest once. Keyset pages would need the snapshot's DELETE entries again for every
page and a manifest decoded up to the page's offset, and a page token pinned to its snapshot, for no gain
to a reader that reads to the end. So `GET /tables/{id}/files` streams; a client that breaks off simply
asks again with `?snapshot=` pinned to the id it was told first.

How: `plan` does everything that can fail with a clear answer before the first byte goes out (the table,
the snapshot, the partition filter, both manifest lists, the DELETE entries); `ScanPlan.files` then reads
the manifests that may hold the partition one at a time and yields each live file. What stays in memory is
the manifest lists, the DELETE identifiers (few: a merged table keeps its deletes in a few small
manifests) and one manifest's bytes. Manifests are read straight from storage, never through
ManifestStore's entry cache, which would keep the whole table.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from coordinator.domain.manifest_pruning import manifest_may_contain
from coordinator.domain.scan import Deletions, Position, live_adds
from coordinator.domain.table_paths import check_name
from coordinator.domain.table_schema import TableShape
from coordinator.storage.fileio import FileIO
from coordinator.usecases.tables import Table
from coordinator_client.models import KeyStatsModel, LiveFileModel
from paimon_format.manifest import (
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    decode_manifest_list,
    iter_manifest,
)
from paimon_format.partition_path import bucket_dir
from paimon_format.snapshot import Snapshot


@dataclass(frozen=True)
class ScanPlan:
    """The live files of one snapshot (of one partition when `spec` is set), read when iterated."""

    table: Table
    fileio: FileIO
    snapshot_id: int | None
    manifests: tuple[tuple[int, ManifestFileMeta], ...]
    """The manifests to read, each with its index in the snapshot's full read order (base, then delta)."""
    deletions: Deletions
    spec: Mapping[int, object] | None

    def entries(self) -> Iterator[ManifestEntry]:
        """The live ADD entries, manifest by manifest, in the snapshot's read order."""
        for index, meta in self.manifests:
            yield from live_adds(self._positioned(index, meta), self.deletions)

    def files(self) -> Iterator[LiveFileModel]:
        """The live files as a reader sees them."""
        for entry in self.entries():
            yield live_file_model(self.table, entry)

    def _positioned(self, index: int, meta: ManifestFileMeta) -> Iterator[tuple[Position, ManifestEntry]]:
        shape = self.table.shape
        for offset, entry in enumerate(read_manifest(self.fileio, self.table, meta)):
            if self.spec is None or _in_partition(entry, self.spec, shape):
                yield (index, offset), entry


def plan(
    fileio: FileIO,
    table: Table,
    snapshot: Snapshot | None,
    spec: Mapping[int, object] | None,
    *,
    delta: bool = False,
) -> ScanPlan:
    """Read the manifest lists of `snapshot` (None: the table has none yet), prune them by `spec` and note
    the DELETE entries of the manifests left; the ADD entries are read later, by ScanPlan.files.

    With `delta`, only the snapshot's delta manifest list is read: the files the snapshot itself adds,
    less those its own DELETE entries remove again (what a streaming reader takes of each new snapshot).
    """
    if snapshot is None:
        return ScanPlan(table, fileio, None, (), Deletions(), spec)
    metas = read_manifest_list(fileio, table, snapshot.delta_manifest_list)
    if not delta:
        metas = read_manifest_list(fileio, table, snapshot.base_manifest_list) + metas
    shape = table.shape
    kept = tuple(
        (index, meta)
        for index, meta in enumerate(metas)
        if spec is None or manifest_may_contain(meta, spec, shape)
    )
    deletions = Deletions()
    for index, meta in kept:
        if meta.num_deleted_files > 0:
            for offset, entry in enumerate(read_manifest(fileio, table, meta)):
                if entry.kind == FileKind.DELETE and (spec is None or _in_partition(entry, spec, shape)):
                    deletions.note(entry, (index, offset))
    return ScanPlan(table, fileio, snapshot.id, kept, deletions, spec)


def read_manifest_list(fileio: FileIO, table: Table, name: str) -> list[ManifestFileMeta]:
    """Raises: PathOutsideTable for a name that is not bare (an outside writer's): never read."""
    return decode_manifest_list(fileio.read(table.layout.manifest(check_name(name, "manifestList"))))


def read_manifest(fileio: FileIO, table: Table, meta: ManifestFileMeta) -> Iterator[ManifestEntry]:
    """The entries of one manifest, decoded lazily from its bytes; nothing is cached.

    Raises: PathOutsideTable for a name that is not bare (an outside writer's): never read."""
    name = check_name(meta.file_name, "manifest")
    return iter_manifest(fileio.read(table.layout.manifest(name)))


def _in_partition(entry: ManifestEntry, spec: Mapping[int, object], shape: TableShape) -> bool:
    values = shape.decode_partition(entry.partition)
    return all(values[i] == v for i, v in spec.items())


def live_file_model(table: Table, e: ManifestEntry) -> LiveFileModel:
    """A live file as the API answers it: its path and metadata, partition and keys as JSON values."""
    shape = table.shape
    return LiveFileModel(
        partition=shape.partition_json(e.partition),
        bucket=e.bucket,
        total_buckets=e.total_buckets,
        # Where readers read it: under an external root when it was written there.
        path=e.file.external_path
        or table.layout.data_file(shape.partition_dir(e.partition), bucket_dir(e.bucket), e.file.file_name),
        file_name=e.file.file_name,
        file_size=e.file.file_size,
        row_count=e.file.row_count,
        level=e.file.level,
        min_key=shape.key_json(e.file.min_key),
        max_key=shape.key_json(e.file.max_key),
        min_sequence_number=e.file.min_sequence_number,
        max_sequence_number=e.file.max_sequence_number,
        delete_row_count=e.file.delete_row_count,
        key_stats=_key_stats(shape, e.file.key_stats),
        schema_id=e.file.schema_id,
        extra_files=list(e.file.extra_files),
        creation_time=e.file.creation_time,
        file_source=e.file.file_source,
    )


def _key_stats(shape: TableShape, stats: SimpleStats) -> KeyStatsModel | None:
    """Key statistics as JSON values; append tables (no key) have none, nor files without them."""
    if not shape.key_types or stats == SimpleStats.EMPTY:
        return None
    return KeyStatsModel(
        min_values=shape.key_json(stats.min_values),
        max_values=shape.key_json(stats.max_values),
        null_counts=list(stats.null_counts or [None] * len(shape.key_types)),
    )
