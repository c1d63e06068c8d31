"""How a manifest is described in its manifest list: counts, bucket/level/row-id ranges, partition statistics.

`manifest_file_meta` takes the partition `SimpleStats` ready-made, because comparing partition values
needs the partition types, which the format does not know: `partition_stats` computes them from the
partition BinaryRows given a row decoder and encoder (e.g. `binary_row.decode_row`/`encode_row` bound to
the partition types). `combined_meta` describes a manifest joined from others without reading them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, cast

from paimon_format.manifest_model import (
    EMPTY_ROW,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)


class _Ordered(Protocol):
    def __lt__(self, other: object, /) -> bool: ...


def partition_stats(
    partitions: Iterable[bytes],
    decode: Callable[[bytes], Sequence[object]],
    encode: Callable[[Sequence[object]], bytes],
    arity: int,
) -> SimpleStats:
    """Min/max (ignoring nulls) and null counts per partition field over one partition row per entry."""
    mins: list[object] = [None] * arity
    maxs: list[object] = [None] * arity
    nulls = [0] * arity
    # Entries share few partitions: decode each distinct row once, but count nulls per entry.
    for raw, count in Counter(partitions).items():
        values = decode(raw)
        if len(values) != arity:
            raise ValueError(f"partition row has {len(values)} fields, expected {arity}")
        for i, value in enumerate(values):
            if value is None:
                nulls[i] += count
                continue
            lo, hi = mins[i], maxs[i]
            if lo is None or cast(_Ordered, value) < lo:
                mins[i] = value
            if hi is None or cast(_Ordered, hi) < value:
                maxs[i] = value
    return SimpleStats(encode(mins), encode(maxs), tuple(nulls))


def _row_id_range(entries: Sequence[ManifestEntry]) -> tuple[int | None, int | None]:
    # Only meaningful when every file carries row ids (row tracking); otherwise unknown.
    firsts = [e.file.first_row_id for e in entries]
    if not entries or any(first is None for first in firsts):
        return None, None
    starts = cast(list[int], firsts)
    ends = [start + e.file.row_count - 1 for start, e in zip(starts, entries, strict=True)]
    return min(starts), max(ends)


def manifest_file_meta(
    file_name: str,
    file_size: int,
    entries: Sequence[ManifestEntry],
    schema_id: int,
    partition_stats: SimpleStats,
) -> ManifestFileMeta:
    """Describe a manifest file of ``entries`` for a manifest list: counts, bucket/level/row-id ranges."""
    added = sum(1 for e in entries if e.kind == FileKind.ADD)
    buckets = [e.bucket for e in entries]
    levels = [e.file.level for e in entries]
    # pypaimon prunes manifests by bucket only with one common positive bucket count; anything else
    # (bucket-unaware -1, postpone -2, or rescaled partitions) must stay unknown.
    counts = {e.total_buckets for e in entries}
    total_buckets = next(iter(counts)) if len(counts) == 1 else None
    if total_buckets is not None and total_buckets <= 0:
        total_buckets = None
    min_row_id, max_row_id = _row_id_range(entries)
    return ManifestFileMeta(
        file_name=file_name,
        file_size=file_size,
        num_added_files=added,
        num_deleted_files=len(entries) - added,
        partition_stats=partition_stats,
        schema_id=schema_id,
        min_bucket=min(buckets, default=None),
        max_bucket=max(buckets, default=None),
        min_level=min(levels, default=None),
        max_level=max(levels, default=None),
        min_row_id=min_row_id,
        max_row_id=max_row_id,
        total_buckets=total_buckets,
    )


def combined_meta(
    file_name: str,
    file_size: int,
    metas: Sequence[ManifestFileMeta],
    decode: Callable[[bytes], Sequence[object]],
    encode: Callable[[Sequence[object]], bytes],
    arity: int,
) -> ManifestFileMeta:
    """Describe a manifest that holds exactly the entries of `metas` (see `concatenate_manifests`), from
    their own descriptions: counts add up, ranges widen, partition statistics combine field by field."""

    def widest(values: Sequence[int | None], pick: Callable[[Sequence[int]], int]) -> int | None:
        return None if any(v is None for v in values) else pick(cast(Sequence[int], values))

    buckets = {m.total_buckets for m in metas}
    return ManifestFileMeta(
        file_name=file_name,
        file_size=file_size,
        num_added_files=sum(m.num_added_files for m in metas),
        num_deleted_files=sum(m.num_deleted_files for m in metas),
        partition_stats=_combined_stats([m.partition_stats for m in metas], decode, encode, arity),
        schema_id=max(m.schema_id for m in metas),
        min_bucket=widest([m.min_bucket for m in metas], min),
        max_bucket=widest([m.max_bucket for m in metas], max),
        min_level=widest([m.min_level for m in metas], min),
        max_level=widest([m.max_level for m in metas], max),
        min_row_id=widest([m.min_row_id for m in metas], min),
        max_row_id=widest([m.max_row_id for m in metas], max),
        total_buckets=next(iter(buckets)) if len(buckets) == 1 else None,
    )


def _combined_stats(
    stats: Sequence[SimpleStats],
    decode: Callable[[bytes], Sequence[object]],
    encode: Callable[[Sequence[object]], bytes],
    arity: int,
) -> SimpleStats:
    if arity == 0:
        return SimpleStats(EMPTY_ROW, EMPTY_ROW, ())
    lows: list[object] = [None] * arity
    highs: list[object] = [None] * arity
    nulls: list[int | None] = [0] * arity
    for stat in stats:
        low, high = decode(stat.min_values), decode(stat.max_values)
        counts = stat.null_counts
        for i in range(arity):
            if low[i] is not None and (lows[i] is None or cast(_Ordered, low[i]) < lows[i]):
                lows[i] = low[i]
            if high[i] is not None and (highs[i] is None or cast(_Ordered, highs[i]) < high[i]):
                highs[i] = high[i]
            count = counts[i] if counts is not None and i < len(counts) else None
            total = nulls[i]
            nulls[i] = None if total is None or count is None else total + count
    return SimpleStats(encode(lows), encode(highs), tuple(nulls))
