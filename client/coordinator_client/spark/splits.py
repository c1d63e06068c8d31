"""The files of a planned scan grouped into the splits Spark runs as tasks (one task per split).

A primary-key table's rows of one key may be in any file of their (partition, bucket): such a split
holds all of that bucket's files, and its task merges them (newest sequence number per key wins).

An append table's files are independent, so they are cut and packed as `spark.read.parquet` does with
the same files: pieces of at most `split-size` bytes (128 MB by default, Spark's own
`spark.sql.files.maxPartitionBytes`: tasks big enough that their start-up cost does not count, small
enough to spread a table over the cluster), smaller when the table is small so that it still spreads
over `parallelism` tasks, a file costing OPEN_COST bytes more (Spark's `openCostInBytes`) so that
thousands of small files do not land in one task. A piece of a file is a byte range: its task reads
the row groups whose middle lies in it (`row_groups`), so every row group is read by exactly one task.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from coordinator_client.models import LiveFileModel
from coordinator_client.spark.layout import SparkTable

DEFAULT_SPLIT_SIZE = 128 * 2**20
OPEN_COST = 4 * 2**20


@dataclass(frozen=True)
class SplitFile:
    """A data file, or the byte range [start, start + length) of one, to read: its path as the
    coordinator names it, and the schema it was written with."""

    path: str
    schema_id: int
    size: int
    start: int = 0
    length: int | None = None
    """None: the whole file."""

    @property
    def bytes(self) -> int:
        return self.size if self.length is None else self.length


class Split(InputPartition):
    """One task's files; `merge`: rows of several files to merge by key (a primary-key bucket)."""

    def __init__(self, files: Sequence[SplitFile], merge: bool) -> None:
        super().__init__(None)
        self.files = tuple(files)
        self.merge = merge

    def __repr__(self) -> str:
        return f"Split({len(self.files)} files, merge={self.merge})"


def plan_splits(
    layout: SparkTable, files: Sequence[LiveFileModel], split_size: int, parallelism: int | None = None
) -> list[Split]:
    """The splits of `files`: by (partition, bucket) on a primary-key table, else packed by size (and
    with `parallelism`, cut: see `unmerged_splits`); one empty split when there are no files (Spark
    reads a data source without partitions as one task of `InputPartition(None)`)."""
    if not files:
        return [Split((), merge=False)]
    if layout.has_primary_key:
        buckets: dict[tuple[str, int], list[SplitFile]] = {}
        for f in files:
            buckets.setdefault((layout.directory_of(f), f.bucket), []).append(_split_file(f))
        return [Split(bucket_files, merge=True) for _, bucket_files in sorted(buckets.items())]
    return unmerged_splits(files, split_size, parallelism)


def unmerged_splits(
    files: Sequence[LiveFileModel], split_size: int, parallelism: int | None = None
) -> list[Split]:
    """Files read as they are, packed by size: an append table's, or the changes a streaming read
    delivers of any table (a primary-key table's rows unmerged, each with its kind). With
    `parallelism`, files are also cut into byte ranges, pieces of at most min(split_size,
    total / parallelism) bytes: a reader of such splits reads pieces with `row_groups.read_piece`."""
    whole = [_split_file(f) for f in files]
    if parallelism is None:
        return [Split(chunk, merge=False) for chunk in _packed(whole, split_size)]
    total = sum(f.size + OPEN_COST for f in whole)
    piece = min(split_size, max(OPEN_COST, total // parallelism))
    pieces = [p for f in whole for p in _pieces(f, piece)]
    return [Split(chunk, merge=False) for chunk in _packed(pieces, piece)]


def _split_file(f: LiveFileModel) -> SplitFile:
    return SplitFile(f.path, f.schema_id, f.file_size)


def _pieces(f: SplitFile, piece: int) -> list[SplitFile]:
    """A file cut into byte ranges of `piece` bytes (the last one takes a remainder under a tenth of a
    piece along, as Spark does), or whole when it is not bigger."""
    if f.size <= piece:
        return [f]
    out = []
    start = 0
    while start < f.size:
        length = f.size - start if f.size - start <= piece * 11 // 10 else piece
        out.append(SplitFile(f.path, f.schema_id, f.size, start, length))
        start += length
    return out


def _packed(files: Sequence[SplitFile], split_size: int) -> list[list[SplitFile]]:
    """Largest first, each added to the open split unless it would overflow it (Spark's next-fit
    packing of file splits)."""
    packed: list[list[SplitFile]] = []
    current: list[SplitFile] = []
    size = 0
    for f in sorted(files, key=lambda f: f.bytes, reverse=True):
        if current and size + f.bytes > split_size:
            packed.append(current)
            current, size = [], 0
        current.append(f)
        size += f.bytes + OPEN_COST
    if current:
        packed.append(current)
    return packed
