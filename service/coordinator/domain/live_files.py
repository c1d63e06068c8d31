"""Live data files of a table (all of them, or the slice a commit touches), advanced by delta entries."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from paimon_format.manifest import FileKind, ManifestEntry

Identifier = tuple[object, ...]
BucketKey = tuple[bytes, int]

_REMEMBERED_REMOVALS = 100_000


@dataclass
class LiveFiles:
    """Live entries keyed by Paimon's file identifier, indexed by (partition, bucket).

    It also remembers which snapshot added or removed a file, so a conflict can name the snapshot that won.
    """

    snapshot_id: int = 0
    entries: dict[Identifier, ManifestEntry] = field(default_factory=dict)
    by_bucket: dict[BucketKey, dict[Identifier, ManifestEntry]] = field(default_factory=dict)
    added_in: dict[Identifier, int] = field(default_factory=dict)
    removed_in: OrderedDict[Identifier, int] = field(default_factory=OrderedDict)
    _bucket_counts: dict[bytes, dict[int, int]] = field(default_factory=dict)

    @classmethod
    def indexed(
        cls, live: Iterable[tuple[ManifestEntry, int | None]], removed: Iterable[tuple[Identifier, int]]
    ) -> LiveFiles:
        """A slice of a table's files as the index recorded them: live entries with the snapshot that
        added each (when known), and files recently removed with the snapshot that removed them."""
        files = cls()
        unique = {entry.identifier: (entry, added_in) for entry, added_in in live}
        files.apply((entry for entry, _ in unique.values()), None)
        files.added_in.update((ident, added) for ident, (_, added) in unique.items() if added is not None)
        files.removed_in.update(removed)
        return files

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[ManifestEntry]:
        return iter(self.entries.values())

    def total_buckets(self, partition: bytes) -> int | None:
        """The bucket count the live files of a partition agree on; None for an empty partition."""
        counts = self._bucket_counts.get(partition)
        if not counts:
            return None
        return next(iter(counts))

    def in_bucket(self, partition: bytes, bucket: int) -> Iterable[ManifestEntry]:
        return self.by_bucket.get((partition, bucket), {}).values()

    def apply(self, delta: Iterable[ManifestEntry], snapshot_id: int | None) -> None:
        """Advance by one snapshot's entries (ADD inserts, DELETE removes); the caller checked them."""
        for entry in delta:
            ident = entry.identifier
            key = (entry.partition, entry.bucket)
            if entry.kind == FileKind.ADD:
                self.entries[ident] = entry
                self.by_bucket.setdefault(key, {})[ident] = entry
                counts = self._bucket_counts.setdefault(entry.partition, {})
                counts[entry.total_buckets] = counts.get(entry.total_buckets, 0) + 1
                if snapshot_id is not None:
                    self.added_in[ident] = snapshot_id
            else:
                removed = self.entries.pop(ident, None)
                if removed is None:
                    continue
                bucket = self.by_bucket[key]
                del bucket[ident]
                if not bucket:
                    del self.by_bucket[key]
                counts = self._bucket_counts[entry.partition]
                counts[removed.total_buckets] -= 1
                if counts[removed.total_buckets] == 0:
                    del counts[removed.total_buckets]
                    if not counts:
                        del self._bucket_counts[entry.partition]
                self.added_in.pop(ident, None)
                if snapshot_id is not None:
                    self.removed_in[ident] = snapshot_id
                    if len(self.removed_in) > _REMEMBERED_REMOVALS:
                        self.removed_in.popitem(last=False)
        if snapshot_id is not None:
            self.snapshot_id = snapshot_id


def merge_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """Paimon's FileEntry.mergeEntries: a DELETE cancels an earlier ADD; unmatched DELETEs are kept."""
    merged: dict[Identifier, ManifestEntry] = {}
    for entry in entries:
        ident = entry.identifier
        if entry.kind == FileKind.ADD:
            merged[ident] = entry
        elif ident in merged and merged[ident].kind == FileKind.ADD:
            del merged[ident]
        else:
            merged[ident] = entry
    return list(merged.values())
