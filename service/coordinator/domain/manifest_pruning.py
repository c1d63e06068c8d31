"""Which manifests may hold a given partition (or (partition, bucket)), from the manifest list alone.

A manifest list records, per manifest, the min, max and null count of each partition field over its
entries, and its bucket range. A manifest whose ranges exclude what is wanted cannot hold it, so it
need not be read: the streamed scan plan prunes with it for a partition filter, and the full compaction
reads only the manifests a delete can touch, as Paimon's ManifestFileMerger does with its partition
predicate. Statistics that cannot be interpreted (another arity, values of another type, NaN) keep
the manifest: pruning may only skip what surely holds nothing wanted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Protocol, cast

from coordinator.domain.table_schema import TableShape
from paimon_format.binary_row import decode_row
from paimon_format.manifest import ManifestFileMeta


class _Ordered(Protocol):
    def __lt__(self, other: object, /) -> bool: ...


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


class FileKeys:
    """A set of (partition, bucket) pairs, each partition decoded once."""

    def __init__(self, keys: Iterable[tuple[bytes, int]], shape: TableShape) -> None:
        buckets: dict[bytes, set[int]] = {}
        for partition, bucket in keys:
            buckets.setdefault(partition, set()).add(bucket)
        self._shape = shape
        self._wanted = [
            (dict(enumerate(shape.decode_partition(p))), frozenset(b)) for p, b in buckets.items()
        ]

    def __bool__(self) -> bool:
        return bool(self._wanted)

    def may_be_in(self, meta: ManifestFileMeta) -> bool:
        """False only when the manifest's statistics rule out every wanted (partition, bucket)."""
        return any(
            _bucket_in_range(buckets, meta.min_bucket, meta.max_bucket)
            and manifest_may_contain(meta, spec, self._shape)
            for spec, buckets in self._wanted
        )


def _bucket_in_range(buckets: frozenset[int], low: int | None, high: int | None) -> bool:
    if low is None or high is None:
        return True
    return any(low <= b <= high for b in buckets)
