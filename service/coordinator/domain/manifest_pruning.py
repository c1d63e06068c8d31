"""Which manifests may hold a file of given (partition, bucket)s, decided from the manifest list alone.

A manifest list records, per manifest, the min, max and null count of each partition field over its
entries, and its bucket range. A manifest whose ranges exclude every wanted (partition, bucket) cannot
hold one of those files, so it need not be read: the full compaction uses this to read only the
manifests a delete can touch, as Paimon's ManifestFileMerger does with its partition predicate.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, cast

from coordinator_client.format.manifest import ManifestFileMeta

PartitionDecoder = Callable[[bytes], Sequence[object]]


class _Ordered(Protocol):
    def __le__(self, other: object, /) -> bool: ...


class FileKeys:
    """A set of (partition, bucket) pairs, each partition decoded once."""

    def __init__(self, keys: Iterable[tuple[bytes, int]], decode: PartitionDecoder) -> None:
        buckets: dict[bytes, set[int]] = {}
        for partition, bucket in keys:
            buckets.setdefault(partition, set()).add(bucket)
        self._decode = decode
        self._wanted = [(decode(p), frozenset(b)) for p, b in buckets.items()]

    def __bool__(self) -> bool:
        return bool(self._wanted)

    def may_be_in(self, meta: ManifestFileMeta) -> bool:
        """False only when the manifest's statistics rule out every wanted (partition, bucket)."""
        stats = meta.partition_stats
        try:
            lows, highs = self._decode(stats.min_values), self._decode(stats.max_values)
        except (ValueError, IndexError, struct.error):
            return True  # statistics that do not decode as this table's partition say nothing
        nulls = stats.null_counts
        for values, buckets in self._wanted:
            if not _bucket_in_range(buckets, meta.min_bucket, meta.max_bucket):
                continue
            if len(lows) != len(values) or len(highs) != len(values):
                return True  # statistics of another shape say nothing
            if all(_field_may_hold(i, v, lows, highs, nulls) for i, v in enumerate(values)):
                return True
        return False


def _bucket_in_range(buckets: frozenset[int], low: int | None, high: int | None) -> bool:
    if low is None or high is None:
        return True
    return any(low <= b <= high for b in buckets)


def _field_may_hold(
    i: int,
    value: object,
    lows: Sequence[object],
    highs: Sequence[object],
    nulls: Sequence[int | None] | None,
) -> bool:
    if value is None:
        count = nulls[i] if nulls is not None and i < len(nulls) else None
        return count is None or count > 0
    low, high = lows[i], highs[i]
    if low is None or high is None:
        # Every value of the field in the manifest is null, if the null counts are known at all.
        return nulls is None
    try:
        return cast(_Ordered, low) <= value and cast(_Ordered, value) <= high
    except TypeError:
        return True
