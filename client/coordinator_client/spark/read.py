"""Reading a coordinator-managed Paimon table into a DataFrame, at any snapshot.

The coordinator plans the scan (the live files at the snapshot). Spark's own Parquet reader reads local
files; files on another filesystem (S3, GCS, HDFS) are read by Python tasks through pyarrow, configured
from the standard environment like the writer, so a job needs no Hadoop connector for the table's store.
Primary-key tables are merged on read: per key, the row with the highest sequence number wins, and the
key is gone when that row is a delete (`-D`) or a retraction (`-U`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from coordinator_client.client import CoordinatorClient
from coordinator_client.format.location import local_path
from coordinator_client.models import LiveFileModel
from coordinator_client.spark.layout import INSERT, SEQUENCE_NUMBER, UPDATE_AFTER, VALUE_KIND, SparkTable

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


def read(
    spark: SparkSession,
    table: str,
    *,
    client: CoordinatorClient,
    snapshot: int | None = None,
    partitions: Sequence[Mapping[str, Any]] | None = None,
) -> DataFrame:
    """The table's rows at `snapshot` (the latest by default), optionally of some partitions only."""
    from pyspark.sql import functions as F

    layout = SparkTable.of(client.get_table(table))
    paths = [f.path for f in scan(client, layout, snapshot, partitions)]
    columns = list(layout.column_names)
    if not paths:
        return spark.createDataFrame([], spark_schema(layout.value_schema))
    if local_path(layout.location) is not None:
        rows = spark.read.schema(spark_schema(layout.file_schema)).parquet(*(f"file://{p}" for p in paths))
    else:
        listed = spark.createDataFrame([(p,) for p in paths], "path string")
        tasks = min(len(paths), spark.sparkContext.defaultParallelism * 4)
        rows = listed.repartition(tasks).mapInArrow(ReadFiles(layout), spark_schema(layout.file_schema))
    if not layout.has_primary_key:
        return rows.select(*columns)
    newest = F.max_by(F.struct(VALUE_KIND, *columns), SEQUENCE_NUMBER).alias("newest")
    merged = rows.groupBy(*layout.primary_keys).agg(newest).select("newest.*")
    return merged.where(F.col(VALUE_KIND).isin(INSERT, UPDATE_AFTER)).select(*columns)


class ReadFiles:
    """A task: the rows of each data file it is handed, read from the table's filesystem by pyarrow."""

    def __init__(self, layout: SparkTable) -> None:
        self.layout = layout

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq

        fs, root = self.layout.filesystem()
        schema = self.layout.file_schema
        for batch in batches:
            for path in batch.column(0).to_pylist():
                own = root + path[len(self.layout.location) :]  # the filesystem's spelling of the path
                rows = pq.read_table(own, filesystem=fs, columns=schema.names, partitioning=None)
                yield from rows.cast(schema).to_batches()


def scan(
    client: CoordinatorClient,
    layout: SparkTable,
    snapshot: int | None,
    partitions: Sequence[Mapping[str, Any]] | None,
) -> Iterator[LiveFileModel]:
    """The live files at one snapshot as the coordinator streams them (the driver keeps only what its
    caller keeps): pinned by the first answer, so every partition sees the same snapshot."""
    if partitions is None:
        with client.scan_plan(layout.table_id, snapshot) as plan:
            yield from plan
        return
    seen: set[str] = set()  # partitions given twice, or overlapping prefixes
    for partition in partitions:
        with client.scan_plan(layout.table_id, snapshot, partition) as plan:
            snapshot = plan.snapshot_id
            for f in plan:
                if f.path not in seen:
                    seen.add(f.path)
                    yield f
        if snapshot is None:  # the table has no snapshot yet
            return


def live_files(
    client: CoordinatorClient,
    layout: SparkTable,
    snapshot: int | None,
    partitions: Sequence[Mapping[str, Any]] | None,
) -> list[LiveFileModel]:
    """The live files at one snapshot in one list (a compaction plans from them): pinned by the first
    answer, so every partition sees the same one."""
    if partitions is None:
        return list(client.live_files(layout.table_id, snapshot).files)
    files: dict[str, LiveFileModel] = {}
    for partition in partitions:
        answer = client.live_files(layout.table_id, snapshot, partition)
        snapshot = answer.snapshot_id
        files.update((f.path, f) for f in answer.files)
        if snapshot is None:  # the table has no snapshot yet
            break
    return list(files.values())


def spark_schema(schema: pa.Schema) -> StructType:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema, prefer_timestamp_ntz=True)
