"""The files of a planned scan grouped into the splits Spark runs as tasks (one task per split).

A primary-key table's rows of one key may be in any file of their (partition, bucket): such a split
holds all of that bucket's files, and its task merges them (newest sequence number per key wins). An
append table's files are independent: they are packed into splits of about `split-size` bytes, 128 MB
by default as Spark's own `spark.sql.files.maxPartitionBytes`, so a read is as parallel as
`spark.read.parquet` of the same files, with each file costing as much as OPEN_COST bytes more (Spark's
`spark.sql.files.openCostInBytes`) so that thousands of small files do not land in one task.
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
    """A data file to read: its path as the coordinator names it, and the schema it was written with."""

    path: str
    schema_id: int
    size: int


class Split(InputPartition):
    """One task's files; `merge`: rows of several files to merge by key (a primary-key bucket)."""

    def __init__(self, files: Sequence[SplitFile], merge: bool) -> None:
        super().__init__(None)
        self.files = tuple(files)
        self.merge = merge

    def __repr__(self) -> str:
        return f"Split({len(self.files)} files, merge={self.merge})"


def plan_splits(layout: SparkTable, files: Sequence[LiveFileModel], split_size: int) -> list[Split]:
    """The splits of `files`: by (partition, bucket) on a primary-key table, else packed by size."""
    if layout.has_primary_key:
        buckets: dict[tuple[str, int], list[SplitFile]] = {}
        for f in files:
            buckets.setdefault((layout.directory_of(f), f.bucket), []).append(_split_file(f))
        return [Split(bucket_files, merge=True) for _, bucket_files in sorted(buckets.items())]
    return [Split(chunk, merge=False) for chunk in _packed([_split_file(f) for f in files], split_size)]


def _split_file(f: LiveFileModel) -> SplitFile:
    return SplitFile(f.path, f.schema_id, f.file_size)


def _packed(files: Sequence[SplitFile], split_size: int) -> list[list[SplitFile]]:
    """Largest files first, each added to the open split unless it would overflow it (Spark's
    next-fit packing of file splits)."""
    packed: list[list[SplitFile]] = []
    current: list[SplitFile] = []
    size = 0
    for f in sorted(files, key=lambda f: f.size, reverse=True):
        if current and size + f.size > split_size:
            packed.append(current)
            current, size = [], 0
        current.append(f)
        size += f.size + OPEN_COST
    if current:
        packed.append(current)
    return packed
