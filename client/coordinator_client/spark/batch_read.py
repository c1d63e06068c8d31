"""Batch reads of the `paimon-coordinator` data source: `spark.read.format(...).load("db.t")`.

Spark makes the reader, pushes filters and asks for partitions in one Python worker on the driver; the
reader is then pickled to the tasks, which read files only (no client). Planning:

1. the snapshot is pinned (`time_travel`: `snapshot-id`, `tag`, `timestamp`; else the scan plan's
   first answer), so every partition filter sent to the coordinator sees the same snapshot;
2. the coordinator plans the live files, of only the partitions the equalities and INs on partition
   keys allow (`filters`); the other partition filters drop files by their partition values, and on
   primary-key tables filters on key columns drop files by their key statistics;
3. the files become splits (`splits`): one per (partition, bucket) of a primary-key table, merged on
   read in its task (newest sequence number per key wins, no Spark shuffle); append files packed into
   splits of about `split-size` bytes.

Every planned scan logs one line at INFO (logger `coordinator_client.spark.batch_read`), e.g.
"scan of db.t at snapshot 7: 3 of 30 files (...) in 1 of 10 partitions". It runs in a Spark worker,
not the user's process: with `spark.sql.pyspark.worker.logging.enabled` set, the line is in
`spark.tvf.python_worker_logs()`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from coordinator_client.models import LiveFileModel
from coordinator_client.spark.evolution import FileSchemas
from coordinator_client.spark.file_reads import for_spark, read_data_file, spark_arrow_schema
from coordinator_client.spark.filters import Pushdown
from coordinator_client.spark.layout import SparkTable
from coordinator_client.spark.merge import merge_by_key
from coordinator_client.spark.options import Connection, flag, optional_int
from coordinator_client.spark.source import ROWKIND
from coordinator_client.spark.splits import DEFAULT_SPLIT_SIZE, Split, plan_splits
from coordinator_client.spark.time_travel import pinned_snapshot

if TYPE_CHECKING:
    from pyspark.sql.datasource import Filter, InputPartition
    from pyspark.sql.types import StructType

from pyspark.sql.datasource import DataSourceReader

SPLIT_SIZE = "split-size"
INSERT_KIND = "+I"

log = logging.getLogger(__name__)
if log.level == logging.NOTSET:
    # The planning worker is Spark's process, not the user's: nobody there can lower the root logger's
    # WARNING, so without this the files-read line would never reach Spark's worker log.
    log.setLevel(logging.INFO)


class TableReader(DataSourceReader):
    """A batch read of one table at one snapshot; picklable (options and plans, no open client)."""

    def __init__(
        self, connection: Connection, layout: SparkTable, options: Mapping[str, str], schema: StructType
    ) -> None:
        self.connection = connection
        self.layout = layout
        self.schema = schema
        self.rowkind = flag(options, ROWKIND)
        self.split_size = optional_int(options, SPLIT_SIZE, minimum=1) or DEFAULT_SPLIT_SIZE
        with connection.client() as client:
            self.snapshot = pinned_snapshot(client, connection.table, options)
        self.pushdown = Pushdown()

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        self.pushdown, remaining = Pushdown.of(self.layout, filters)
        return remaining

    def partitions(self) -> Sequence[InputPartition]:
        snapshot, planned = self._plan()
        chosen = [f for f in planned if self._wanted(f)]
        splits = plan_splits(self.layout, chosen, self.split_size)
        log.info(
            "scan of %s at snapshot %s: %s",
            self.connection.table,
            snapshot,
            _summary(planned, chosen, self.pushdown),
        )
        return splits

    def _plan(self) -> tuple[int | None, list[LiveFileModel]]:
        """The pinned snapshot and its live files of the partitions the coordinator is asked for."""
        snapshot = self.snapshot
        wanted = self.pushdown.coordinator_partitions
        with self.connection.client() as client:
            if wanted is None:
                with client.scan_plan(self.layout.table_id, snapshot) as plan:
                    return plan.snapshot_id, list(plan)
            files: list[LiveFileModel] = []
            for partition in wanted:
                with client.scan_plan(self.layout.table_id, snapshot, partition) as plan:
                    snapshot = plan.snapshot_id
                    files.extend(plan)
                if snapshot is None:  # the table has no snapshot yet
                    break
            return snapshot, files

    def _wanted(self, file: LiveFileModel) -> bool:
        pushdown = self.pushdown
        return pushdown.partition_matches(self.layout, file.partition) and (
            not self.layout.has_primary_key or pushdown.file_may_match(self.layout, file)
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, Split)
        target = spark_arrow_schema(self.schema)
        schemas = FileSchemas.load(self.layout, {f.schema_id for f in partition.files})
        fs, root = self.layout.filesystem()
        parts: Iterator[pa.Table] = (
            read_data_file(schemas, fs, root, f.path, f.schema_id) for f in partition.files
        )
        if partition.merge:
            parts = iter([merge_by_key(self.layout, pa.concat_tables(list(parts)))])
        for rows in parts:
            if self.rowkind:
                kinds = pa.array([INSERT_KIND] * rows.num_rows, pa.string())
                rows = rows.add_column(0, ROWKIND, kinds)
            yield from for_spark(rows, target).to_batches()


def _summary(planned: Sequence[LiveFileModel], chosen: Sequence[LiveFileModel], pushdown: Pushdown) -> str:
    """'3 of 30 files (1.2 MB of 9.8 MB) in 1 of 10 partitions; the coordinator was asked for ...'."""

    def partitions(files: Sequence[LiveFileModel]) -> int:
        return len({tuple(sorted(f.partition.items(), key=lambda kv: kv[0])) for f in files})

    def megabytes(files: Sequence[LiveFileModel]) -> str:
        return f"{sum(f.file_size for f in files) / 2**20:.1f} MB"

    text = (
        f"{len(chosen)} of {len(planned)} files ({megabytes(chosen)} of {megabytes(planned)}) "
        f"in {partitions(chosen)} of {partitions(planned)} partitions"
    )
    if pushdown.coordinator_partitions is not None:
        text += f"; planned for the partitions {list(pushdown.coordinator_partitions)} only"
    return text
