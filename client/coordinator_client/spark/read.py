"""Reading a coordinator-managed Paimon table into a DataFrame, at any snapshot.

The coordinator plans the scan (the live files at the snapshot). Spark's own Parquet reader reads local
files; files on another filesystem (S3, GCS, HDFS) are read by Python tasks through pyarrow, configured
from the standard environment like the writer, so a job needs no Hadoop connector for the table's store.
Files written under an older schema of the table are read as rows of its current one (`evolution`).
Primary-key tables are merged on read: per key, the row with the highest sequence number wins, and the
key is gone when that row is a delete (`-D`) or a retraction (`-U`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from coordinator_client.client import CoordinatorClient
from coordinator_client.format.location import local_path
from coordinator_client.models import LiveFileModel
from coordinator_client.spark.evolution import FileSchemas
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
    """The table's rows at `snapshot` (the latest by default), optionally of some partitions only, in
    the table's current schema (files written under an older one are evolved, see `evolution`)."""
    from pyspark.sql import functions as F

    layout = SparkTable.of(client.get_table(table))
    files = [(f.path, f.schema_id) for f in scan(client, layout, snapshot, partitions)]
    columns = list(layout.column_names)
    if not files:
        return spark.createDataFrame([], spark_schema(layout.value_schema))
    schemas = FileSchemas.load(layout, {schema_id for _, schema_id in files})
    if local_path(layout.location) is not None:
        rows = _read_local(spark, schemas, files)
    else:
        listed = spark.createDataFrame(files, "path string, schema_id long")
        tasks = min(len(files), spark.sparkContext.defaultParallelism * 4)
        rows = listed.repartition(tasks).mapInArrow(ReadFiles(schemas), spark_schema(layout.file_schema))
    if not layout.has_primary_key:
        return rows.select(*columns)
    newest = F.max_by(F.struct(VALUE_KIND, *columns), SEQUENCE_NUMBER).alias("newest")
    merged = rows.groupBy(*layout.primary_keys).agg(newest).select("newest.*")
    return merged.where(F.col(VALUE_KIND).isin(INSERT, UPDATE_AFTER)).select(*columns)


def _read_local(spark: SparkSession, schemas: FileSchemas, files: Sequence[tuple[str, int]]) -> DataFrame:
    """Local files through Spark's own Parquet reader: each schema's files with their own names and
    types, then selected into the current file schema (by field id) and put together."""
    from pyspark.sql import functions as F

    by_schema: dict[int, list[str]] = {}
    for path, schema_id in files:
        by_schema.setdefault(schema_id, []).append(f"file://{path}")
    target = spark_schema(schemas.layout.file_schema)
    parts = []
    for schema_id, paths in sorted(by_schema.items()):
        written = spark_schema(schemas.written(schema_id).file_schema)
        rows = spark.read.schema(written).parquet(*paths)
        if not schemas.is_current(schema_id):
            rows = rows.select(
                *(
                    (F.lit(None) if source is None else F.col(_quoted(source)))
                    .cast(field.dataType)
                    .alias(name)
                    for field, (name, source) in zip(target.fields, schemas.sources(schema_id), strict=True)
                )
            )
        parts.append(rows)
    return functools.reduce(lambda a, b: a.unionByName(b), parts)


def _quoted(name: str) -> str:
    """A column name as Spark resolves it literally (no dots as struct access)."""
    return "`" + name.replace("`", "``") + "`"


class ReadFiles:
    """A task: the rows of each data file it is handed, read from the table's filesystem by pyarrow,
    in the table's current schema."""

    def __init__(self, schemas: FileSchemas) -> None:
        self.schemas = schemas

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq

        layout = self.schemas.layout
        fs, root = layout.filesystem()
        for batch in batches:
            for path, schema_id in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
                own = root + path[len(layout.location) :]  # the filesystem's spelling of the path
                written = self.schemas.written(schema_id).file_schema
                rows = pq.read_table(own, filesystem=fs, columns=written.names, partitioning=None)
                yield from self.schemas.read_as_current(rows.cast(written), schema_id).to_batches()


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
