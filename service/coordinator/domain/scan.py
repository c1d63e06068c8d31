"""The pure half of a streamed scan plan: which manifests a partition filter must read, and which ADD
entries are still live once the snapshot's DELETE entries are known.

A snapshot's live files are the ADD entries of its base and delta manifests, read in order, less each ADD
that a later DELETE with the same identifier cancels (Paimon's FileEntry.mergeEntries, the project's
`merge_entries`). Merging everything in memory costs the whole table; here the DELETE entries are noted
first (they sit in the few manifests with `num_deleted_files > 0`) with their position in the read order,
and the ADD entries are then streamed one manifest at a time: an ADD is live unless a DELETE of the same
file comes after it. For the same reason a file deleted and added again (an ADD after its DELETE) stays
live, as in `merge_entries`. One case differs: a file ADDed twice with no DELETE between (which the
commit path refuses as DUPLICATE_FILE, and Paimon's own merge rejects) would be listed twice here.

Manifests are pruned with the manifest list's partition statistics (min, max and null count of each
partition field): a manifest whose statistics exclude the requested value is never read. Statistics
that cannot be interpreted (another arity, values of another type, NaN) keep the manifest: pruning may
only skip what surely holds nothing of the partition.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol, cast

from coordinator.domain.table_schema import TableShape
from coordinator_client.format.binary_row import decode_row
from coordinator_client.format.manifest import FileIdentifier, FileKind, ManifestEntry, ManifestFileMeta


class _Ordered(Protocol):
    def __lt__(self, other: object, /) -> bool: ...


Position = tuple[int, int]
"""Where an entry sits in a snapshot's read order: (index of its manifest, index within the manifest)."""


def manifest_may_contain(meta: ManifestFileMeta, spec: Mapping[int, object], shape: TableShape) -> bool:
    """False only when the manifest's partition statistics prove it holds no entry whose partition
    has every value of `spec` (partition field index -> value; a prefix of the keys is fine)."""
    if not spec:
        return True
    stats = meta.partition_stats
    types = shape.partition_types
    try:
        mins = decode_row(stats.min_values, types)
        maxs = decode_row(stats.max_values, types)
    except ValueError:  # another arity or malformed statistics: they prove nothing
        return True
    counts = stats.null_counts
    entries = meta.num_added_files + meta.num_deleted_files
    for index, value in spec.items():
        nulls = counts[index] if counts is not None and index < len(counts) else None
        if not _field_may_hold(value, mins[index], maxs[index], nulls, entries):
            return False
    return True


def _field_may_hold(value: object, lo: object, hi: object, nulls: int | None, entries: int) -> bool:
    if value is None:
        return nulls is None or nulls > 0
    if lo is None or hi is None:
        # No min/max: every value of the field is null, unless the writer kept no statistics.
        all_null = nulls is not None and nulls > 0 and nulls >= entries
        return not all_null
    if any(isinstance(v, float) and math.isnan(v) for v in (value, lo, hi)):
        return True
    try:
        return not (cast(_Ordered, value) < lo or cast(_Ordered, hi) < value)
    except TypeError:
        return True


class Deletions:
    """The DELETE entries of a snapshot, each file's latest one with its position in the read order."""

    def __init__(self) -> None:
        self._latest: dict[FileIdentifier, Position] = {}

    def __len__(self) -> int:
        return len(self._latest)

    def note(self, entry: ManifestEntry, position: Position) -> None:
        """Remember a DELETE entry (ADD entries are ignored)."""
        if entry.kind != FileKind.DELETE:
            return
        ident = entry.identifier
        known = self._latest.get(ident)
        if known is None or known < position:
            self._latest[ident] = position

    def cancels(self, entry: ManifestEntry, position: Position) -> bool:
        """Whether a DELETE after `position` removes the file this ADD entry adds."""
        deleted_at = self._latest.get(entry.identifier)
        return deleted_at is not None and deleted_at > position


def live_adds(
    positioned: Iterable[tuple[Position, ManifestEntry]], deletions: Deletions
) -> Iterator[ManifestEntry]:
    """The ADD entries no later DELETE cancels, in read order."""
    for position, entry in positioned:
        if entry.kind == FileKind.ADD and not deletions.cancels(entry, position):
            yield entry
