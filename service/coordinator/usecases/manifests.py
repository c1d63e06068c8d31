"""Reading and writing one table's manifests and manifest lists, with an in-memory cache of entries."""

from __future__ import annotations

import math
import struct
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from coordinator.domain.live_files import merge_entries
from coordinator.domain.manifest_merge import MergeOptions
from coordinator.domain.table_paths import check_name
from coordinator.domain.table_schema import TableShape
from coordinator.storage.fileio import FileIO
from coordinator.storage.layout import TableLayout
from paimon_format.binary_row import EMPTY_ROW
from paimon_format.entry_encoding import encode_entries
from paimon_format.manifest import (
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    concatenate_manifests,
    decode_manifest,
    decode_manifest_list,
    encode_manifest_list,
    manifest_container,
)
from paimon_format.manifest_meta import combined_meta, manifest_file_meta, partition_stats
from paimon_format.snapshot import Snapshot

if TYPE_CHECKING:
    from coordinator.usecases.tables import Table


CACHED_ENTRIES = 200_000
"""Entries of small manifests kept decoded per table (a few hundred bytes each)."""

_SAMPLE = 512
"""Entries compressed to estimate an entry's size in a manifest before the first cut."""


def roll(
    entries: Sequence[ManifestEntry], target: int, records: Sequence[bytes] | None = None
) -> Iterator[tuple[list[ManifestEntry], bytes]]:
    """Encoded manifests of `entries` in order, as Paimon's rolling writer cuts them: a manifest is
    closed once it reaches `target` bytes, so only the last may be smaller. A manifest just short of
    the target would count as small forever and keep the merge busy on every commit.

    Every entry is encoded once (not at all when the caller passes its `records`); trying a cut only
    compresses the records again.
    """
    start, total = 0, len(entries)
    if not total:
        return
    if records is None:
        records = encode_entries(entries)
    sample = records[:_SAMPLE]
    data = manifest_container(sample)
    if total <= _SAMPLE and len(data) < target:
        yield list(entries), data
        return
    per_entry = len(data) / max(1, len(sample))
    while start < total:
        end = min(total, start + max(1, math.ceil(target / per_entry)))
        data = manifest_container(records[start:end])
        while len(data) < target and end < total:
            # Compression makes the size per entry vary: grow by the estimated shortfall, plus a margin.
            per_entry = len(data) / (end - start)
            end = min(total, end + max(1, math.ceil((target - len(data)) / per_entry * 1.1)))
            data = manifest_container(records[start:end])
        yield list(entries[start:end]), data
        per_entry = len(data) / (end - start)
        start = end


class ManifestStore:
    """Manifest I/O of one table; files get Paimon-style names `manifest-<uuid>-<n>`."""

    def __init__(self, fileio: FileIO, layout: TableLayout, shape: TableShape, target_file_size: int) -> None:
        self._fileio = fileio
        self._layout = layout
        self._shape = shape
        self._target = target_file_size
        self._entries: OrderedDict[str, list[ManifestEntry]] = OrderedDict()
        self._cached_entries = 0
        self._lists: dict[str, list[ManifestFileMeta]] = {}
        self._lock = threading.Lock()
        self._prefix = f"{uuid.uuid4()}"
        self._counter = 0
        self.written: list[str] = []
        """Names written since the last `keep_written`; deleted again if their commit fails."""

    @classmethod
    def for_table(cls, fileio: FileIO, table: Table) -> ManifestStore:
        """The store of `table`, rolling manifests at the table's manifest.target-file-size."""
        options = MergeOptions.from_table_options(table.shape.schema.options)
        return cls(fileio, table.layout, table.shape, options.target_file_size)

    def scan(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """The live files of `snapshot` (ADD entries only): its data manifests read and merged, a DELETE
        cancelling the ADD it names."""
        merged = merge_entries(e for meta in self.data_manifests(snapshot) for e in self.read(meta))
        return [e for e in merged if e.kind == FileKind.ADD]

    def data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        """The manifests a reader of `snapshot` reads: its base list's, then its delta list's."""
        return self.read_list(snapshot.base_manifest_list) + self.read_list(snapshot.delta_manifest_list)

    def _next_name(self, kind: str) -> str:
        with self._lock:
            n = self._counter
            self._counter += 1
        return f"{kind}-{self._prefix}-{n}"

    def read(self, meta: ManifestFileMeta) -> list[ManifestEntry]:
        """The entries of a manifest; small ones are cached, as the next merges read them again."""
        cached = self._entries.get(meta.file_name)
        if cached is None:
            cached = decode_manifest(self.read_bytes(meta.file_name))
            self._cache(meta.file_name, meta.file_size, cached)
        return cached

    def _cache(self, name: str, size: int, entries: list[ManifestEntry]) -> None:
        # Only manifests below the target size are merged again; a full one is read again only by a
        # full compaction a delete triggers. The bound keeps memory flat however the table grows.
        if size >= self._target:
            return
        self._entries[name] = entries
        self._cached_entries += len(entries)
        while self._cached_entries > CACHED_ENTRIES and len(self._entries) > 1:
            _, evicted = self._entries.popitem(last=False)
            self._cached_entries -= len(evicted)

    def write(
        self, entries: list[ManifestEntry], records: Sequence[bytes] | None = None
    ) -> list[ManifestFileMeta]:
        """Write entries as manifests rolled at the target size: each one but the last reaches it.

        `records`: the entries' Avro records, when the caller encoded them already."""
        return [self._write_one(chunk, data) for chunk, data in roll(entries, self._target, records)]

    def concatenate(self, group: Sequence[ManifestFileMeta]) -> list[ManifestFileMeta] | None:
        """Manifests of ADDs merged by copying their Avro blocks, none of their entries decoded: the
        minor merge of an append-only tail costs I/O, not a decode and encode of every entry. None when
        a manifest's schema or statistics are not ours to copy."""
        files = [self.read_bytes(m.file_name) for m in group]
        data = concatenate_manifests(files)
        if data is None:
            return None
        shape = self._shape
        try:
            meta = combined_meta(
                self._next_name("manifest"),
                len(data),
                group,
                shape.decode_partition,
                shape.encode_partition,
                len(shape.partition_types),
            )
        except (ValueError, IndexError, struct.error):
            return None
        self._fileio.write_unique(self._path(meta.file_name), data)
        self.written.append(meta.file_name)
        return [meta]

    def _write_one(self, entries: list[ManifestEntry], data: bytes) -> ManifestFileMeta:
        name = self._next_name("manifest")
        self._fileio.write_unique(self._path(name), data)
        self.written.append(name)
        self._cache(name, len(data), entries)
        return manifest_file_meta(
            name,
            len(data),
            entries,
            self._shape.schema.id,
            self.partition_stats(e.partition for e in entries),
        )

    def write_list(self, metas: Sequence[ManifestFileMeta]) -> tuple[str, int]:
        """Write a manifest list; returns its name and size."""
        name = self._next_name("manifest-list")
        data = encode_manifest_list(metas)
        self._fileio.write_unique(self._path(name), data)
        self.written.append(name)
        return name, len(data)

    def read_list(self, name: str) -> list[ManifestFileMeta]:
        """A manifest list, cached until the next `retain`: lists are immutable too."""
        cached = self._lists.get(name)
        if cached is None:
            cached = self._lists[name] = decode_manifest_list(self.read_bytes(name))
        return cached

    def read_bytes(self, name: str) -> bytes:
        """The bytes of a file of `manifest/` (a manifest, a manifest list, an index manifest)."""
        return self._fileio.read(self._path(name))

    def published(self, snapshot_id: int) -> Snapshot | None:
        """Snapshot `snapshot_id` as its file on storage has it; None when there is none (or it does not
        parse): what a proposal says it builds on is compared against it."""
        try:
            return Snapshot.from_json(self._fileio.read(self._layout.snapshot(snapshot_id)))
        except (FileNotFoundError, ValueError):
            return None

    def checkpoint(self) -> int:
        """A mark for `discard_since`: one committable of a group can be undone without the others."""
        return len(self.written)

    def discard_since(self, mark: int = 0) -> None:
        """Delete what was written after `mark`: a rejected commit leaves no manifests behind."""
        for name in self.written[mark:]:
            self._fileio.delete(self._path(name))
            self._forget(name)
            self._lists.pop(name, None)
        del self.written[mark:]

    def _path(self, name: str) -> str:
        """Where the file `name` of `manifest/` is. Every read, write and delete goes through here, so a
        name that is not bare (domain/table_paths) never reaches the store, whoever wrote it.

        Raises:
            PathOutsideTable.
        """
        return self._layout.manifest(check_name(name, "manifest", "manifest"))

    def keep_written(self) -> None:
        self.written = []

    def retain(self, names: Iterable[str]) -> None:
        """Drop cached entries of manifests the latest snapshot no longer references, and every cached
        manifest list: a long-lived store holds no more than its table's latest manifests."""
        self._lists.clear()
        keep = set(names)
        for name in [n for n in self._entries if n not in keep]:
            self._forget(name)

    def _forget(self, name: str) -> None:
        entries = self._entries.pop(name, None)
        if entries is not None:
            self._cached_entries -= len(entries)

    def partition_stats(self, partitions: Iterable[bytes]) -> SimpleStats:
        """Min, max and null count per partition field: manifests are pruned by these, so they must hold."""
        shape = self._shape
        if not shape.partition_types:
            return SimpleStats(EMPTY_ROW, EMPTY_ROW, ())
        return partition_stats(
            partitions, shape.decode_partition, shape.encode_partition, len(shape.partition_types)
        )
