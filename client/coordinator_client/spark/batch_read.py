"""Batch reads of the `paimon-coordinator` data source: `spark.read.format(...).load("db.t")`.

Spark makes the reader, pushes filters and asks for partitions in one Python worker on the driver; the
reader is then pickled to the tasks, which read files only (no client). Planning:

1. the snapshot is pinned (`time_travel`: `snapshot-id`, `tag`, `timestamp`; else the scan plan's
   first answer), so every partition filter sent to the coordinator sees the same snapshot;
2. the coordinator plans the live files, of only the partitions the equalities and INs on partition
   keys allow (`filters`); the other partition filters drop files by their partition values, and on
   primary-key tables filters on key columns drop files by their key statistics;
3. the files become splits (`splits`): one per (partition, bucket) of a primary-key table, merged on
   read in its task (newest sequence number per key wins, no Spark shuffle); append files cut and
   packed into splits of about `split-size` bytes, or fewer when that spreads the read over
   `parallelism` tasks; tasks read row groups in batches (`row_groups`).

Every planned scan logs one line at INFO (logger `coordinator_client.spark.batch_read`), e.g.
"scan of db.t at snapshot 7: 3 of 30 files (...) in 1 of 10 partitions". It runs in a Spark worker,
not the user's process: with `spark.sql.pyspark.worker.logging.enabled` set, the line is in
`spark.tvf.python_worker_logs()`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from coordinator_client.models import LiveFileModel
from coordinator_client.spark.evolution import FileSchemas
from coordinator_client.spark.file_reads import for_spark, inserts, spark_arrow_schema
from coordinator_client.spark.filters import Pushdown
from coordinator_client.spark.layout import SparkTable
from coordinator_client.spark.options import Connection, OptionError, flag, optional_int
from coordinator_client.spark.row_groups import BATCH_ROWS, read_split
from coordinator_client.spark.source import ROWKIND
from coordinator_client.spark.splits import DEFAULT_SPLIT_SIZE, Split, plan_splits
from coordinator_client.spark.time_travel import BEFORE_FIRST, pinned_snapshot
from paimon_format.memory_size import parse_memory_size

if TYPE_CHECKING:
    from pyspark.sql.datasource import Filter, InputPartition
    from pyspark.sql.types import StructType

from pyspark.sql.datasource import DataSourceReader

FILTER_PUSHDOWN = "filter-pushdown"
SPLIT_SIZE = "split-size"
PARALLELISM = "parallelism"
"""At least how many tasks a small append table's read is spread over, as Spark's defaultParallelism
does for `spark.read.parquet`; the driver's cores by default (the planning worker cannot ask Spark; in
local mode that is the same number). `read()` passes Spark's own."""

log = logging.getLogger(__name__)
if log.level == logging.NOTSET:
    # The planning worker is Spark's process, not the user's: nobody there can lower the root logger's
    # WARNING, so without this the files-read line would never reach Spark's worker log.
    log.setLevel(logging.INFO)


class TableReader(DataSourceReader):
    """A batch read of one table at one snapshot; picklable (options and plans, no open client).
    Spark filters its rows; `FilteringTableReader` takes filters and prunes files."""

    def __init__(
        self, connection: Connection, layout: SparkTable, options: Mapping[str, str], schema: StructType
    ) -> None:
        layout.check_mergeable()  # merged on read as the deduplicate engine does: refuse other engines
        self.connection = connection
        self.layout = layout
        self.schema = schema
        self.rowkind = flag(options, ROWKIND)
        self.split_size = _split_size(options)
        self.parallelism = optional_int(options, PARALLELISM, minimum=1) or os.cpu_count() or 1
        with connection.client() as client:
            self.snapshot = pinned_snapshot(client, connection.table, options)
        self.pushdown = Pushdown()

    def partitions(self) -> Sequence[InputPartition]:
        planned = Tally()  # counted, not kept: a pruned query holds only the files it reads
        chosen: list[LiveFileModel] = []

        def take(file: LiveFileModel) -> None:
            planned.add(file)
            if self._wanted(file):
                chosen.append(file)

        snapshot = self._scan(take)
        splits = plan_splits(self.layout, chosen, self.split_size, self.parallelism)
        read = Tally()
        for f in chosen:
            read.add(f)
        text = f"{read.files} of {planned.files} files ({read.megabytes} of {planned.megabytes}) in "
        text += f"{len(read.partitions)} of {len(planned.partitions)} partitions"
        if self.pushdown.coordinator_partitions is not None:
            text += f"; planned for the partitions {list(self.pushdown.coordinator_partitions)} only"
        log.info("scan of %s at snapshot %s: %s", self.connection.table, snapshot, text)
        return splits

    def _scan(self, take: Callable[[LiveFileModel], None]) -> int | None:
        """Hand `take` the live files at the pinned snapshot of the partitions the coordinator is asked
        for, as they stream in; the snapshot planned (None: the table has none)."""
        snapshot = self.snapshot
        wanted = self.pushdown.coordinator_partitions
        if snapshot == BEFORE_FIRST:
            return None
        with self.connection.client() as client:
            for partition in [None] if wanted is None else wanted:
                with client.scan_plan(self.layout.table_id, snapshot, partition) as plan:
                    snapshot = plan.snapshot_id
                    for file in plan:
                        take(file)
                if snapshot is None:  # the table has no snapshot yet
                    break
        return snapshot

    def _wanted(self, file: LiveFileModel) -> bool:
        pushdown = self.pushdown
        return pushdown.partition_matches(self.layout, file.partition) and (
            not self.layout.has_primary_key or pushdown.file_may_match(self.layout, file)
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, Split)
        target = spark_arrow_schema(self.schema)
        schemas = FileSchemas.load(self.layout, {f.schema_id for f in partition.files})
        for rows in read_split(partition, schemas):
            if self.rowkind:
                rows = rows.add_column(0, ROWKIND, inserts(rows.num_rows))
            yield from for_spark(rows, target).to_batches(max_chunksize=BATCH_ROWS)


def _split_size(options: Mapping[str, str]) -> int:
    """The `split-size` option as Paimon writes sizes (`64 mb`, `134217728`)."""
    text = options.get(SPLIT_SIZE)
    if text is None:
        return DEFAULT_SPLIT_SIZE
    try:
        size = parse_memory_size(text)
    except ValueError as e:
        raise OptionError(SPLIT_SIZE, str(e)) from None
    if size < 1:
        raise OptionError(SPLIT_SIZE, f"must be at least 1 byte, got {text!r}")
    return size


class Tally:
    """How many files, bytes and partitions a scan planned or reads: the files-read line."""

    def __init__(self) -> None:
        self.files = 0
        self.bytes = 0
        self.partitions: set[tuple[tuple[str, object], ...]] = set()

    def add(self, file: LiveFileModel) -> None:
        self.files += 1
        self.bytes += file.file_size
        self.partitions.add(tuple(sorted((k, repr(v)) for k, v in file.partition.items())))

    @property
    def megabytes(self) -> str:
        return f"{self.bytes / 2**20:.1f} MB"


class FilteringTableReader(TableReader):
    """A batch read that takes Spark's filters (option `filter-pushdown`): pruned files are never opened.

    Opt-in because PySpark 4.3 keeps one read plan per relation (a DataFrame from `load()`, a view): a
    later query on the same relation that has no filter at all is not planned again and gets the pruned
    plan of the earlier one, i.e. too few rows. With pushdown on, `load()` a DataFrame per query.
    """

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        self.pushdown, remaining = Pushdown.of(self.layout, filters)
        return remaining
