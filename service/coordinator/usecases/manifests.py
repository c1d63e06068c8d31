"""Reading and writing one table's manifests and manifest lists, with an in-memory cache of entries."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Sequence

from coordinator.domain.table_schema import TableShape
from coordinator.storage.fileio import FileIO
from coordinator.storage.layout import TableLayout
from coordinator_client.format.binary_row import EMPTY_ROW
from coordinator_client.format.manifest import (
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    decode_manifest,
    decode_manifest_list,
    encode_manifest,
    encode_manifest_list,
    manifest_file_meta,
    partition_stats,
)


class ManifestStore:
    """Manifest I/O of one table; files get Paimon-style names `manifest-<uuid>-<n>`."""

    def __init__(self, fileio: FileIO, layout: TableLayout, shape: TableShape, target_file_size: int) -> None:
        self._fileio = fileio
        self._layout = layout
        self._shape = shape
        self._target = target_file_size
        self._entries: dict[str, list[ManifestEntry]] = {}
        self._lock = threading.Lock()
        self._prefix = f"{uuid.uuid4()}"
        self._counter = 0
        self.written: list[str] = []
        """Names written since the last `keep_written`; deleted again if their commit fails."""

    def _next_name(self, kind: str) -> str:
        with self._lock:
            n = self._counter
            self._counter += 1
        return f"{kind}-{self._prefix}-{n}"

    def read(self, meta: ManifestFileMeta) -> list[ManifestEntry]:
        """The entries of a manifest, cached: manifests are immutable."""
        cached = self._entries.get(meta.file_name)
        if cached is None:
            cached = decode_manifest(self._fileio.read(self._layout.manifest(meta.file_name)))
            self._entries[meta.file_name] = cached
        return cached

    def write(self, entries: list[ManifestEntry]) -> list[ManifestFileMeta]:
        """Write entries as one or more manifests, rolled at the target file size."""
        data = encode_manifest(entries)
        if len(data) <= self._target or len(entries) == 1:
            return [self._write_one(entries, data)]
        parts = -(-len(data) // self._target)
        size = -(-len(entries) // parts)
        chunks = [entries[i : i + size] for i in range(0, len(entries), size)]
        return [self._write_one(chunk, encode_manifest(chunk)) for chunk in chunks]

    def _write_one(self, entries: list[ManifestEntry], data: bytes) -> ManifestFileMeta:
        name = self._next_name("manifest")
        self._fileio.write_unique(self._layout.manifest(name), data)
        self.written.append(name)
        self._entries[name] = entries
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
        self._fileio.write_unique(self._layout.manifest(name), data)
        self.written.append(name)
        return name, len(data)

    def read_list(self, name: str) -> list[ManifestFileMeta]:
        return decode_manifest_list(self._fileio.read(self._layout.manifest(name)))

    def checkpoint(self) -> int:
        """A mark for `discard_since`: one committable of a group can be undone without the others."""
        return len(self.written)

    def discard_since(self, mark: int = 0) -> None:
        """Delete what was written after `mark`: a rejected commit leaves no manifests behind."""
        for name in self.written[mark:]:
            self._fileio.delete(self._layout.manifest(name))
            self._entries.pop(name, None)
        del self.written[mark:]

    def keep_written(self) -> None:
        self.written = []

    def retain(self, names: Iterable[str]) -> None:
        """Drop cached entries of manifests the latest snapshot no longer references."""
        keep = set(names)
        for name in [n for n in self._entries if n not in keep]:
            del self._entries[name]

    def partition_stats(self, partitions: Iterable[bytes]) -> SimpleStats:
        """Min, max and null count per partition field: manifests are pruned by these, so they must hold."""
        shape = self._shape
        if not shape.partition_types:
            return SimpleStats(EMPTY_ROW, EMPTY_ROW, ())
        return partition_stats(
            partitions, shape.decode_partition, shape.encode_partition, len(shape.partition_types)
        )
