"""Reading a coordinator-managed Paimon table into a DataFrame, at any snapshot.

The coordinator plans the scan (the live files at the snapshot); Spark's own Parquet reader reads them.
Primary-key tables are merged on read: per key, the row with the highest sequence number wins, and the
key is gone when that row is a delete (`-D`) or a retraction (`-U`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from coordinator_client.client import CoordinatorClient
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
    scheme = urlparse(layout.location).scheme
    paths = [f.path if scheme else f"file://{f.path}" for f in scan(client, layout, snapshot, partitions)]
    columns = list(layout.column_names)
    if not paths:
        return spark.createDataFrame([], spark_schema(layout.value_schema))
    rows = spark.read.schema(spark_schema(layout.file_schema)).parquet(*paths)
    if not layout.has_primary_key:
        return rows.select(*columns)
    newest = F.max_by(F.struct(VALUE_KIND, *columns), SEQUENCE_NUMBER).alias("newest")
    merged = rows.groupBy(*layout.primary_keys).agg(newest).select("newest.*")
    return merged.where(F.col(VALUE_KIND).isin(INSERT, UPDATE_AFTER)).select(*columns)


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
