"""Reading a coordinator-managed Paimon table into a DataFrame, at any snapshot: a thin layer over the
`paimon-coordinator` data source (`batch_read`), which plans from the coordinator, prunes partitions and
files by the query's filters and merges primary-key tables on read.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from coordinator_client.client import CoordinatorClient
from coordinator_client.models import LiveFileModel
from coordinator_client.spark.layout import SparkTable
from paimon_format.values import from_json_value

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType


def read(
    spark: SparkSession,
    table: str,
    *,
    client: CoordinatorClient,
    snapshot: int | None = None,
    partitions: Sequence[Mapping[str, Any]] | None = None,
) -> DataFrame:
    """The table's rows at `snapshot` (the latest by default), optionally of some partitions only (each
    a mapping of partition keys to JSON values, as the coordinator's answers carry them), in the table's
    current schema: `spark.read.format("paimon-coordinator")` with the partitions as a filter."""
    from coordinator_client.spark.source import NAME, client_options, register

    register(spark)
    options = {**client_options(client), "parallelism": str(spark.sparkContext.defaultParallelism)}
    if snapshot is not None:
        options["snapshot-id"] = str(snapshot)
    if partitions is None:
        return spark.read.format(NAME).options(**options).load(table)
    layout = SparkTable.of(client.get_table(table))
    if any(_named_by_all(name, partitions) for name in layout.partition_keys):
        # Every query on the answer then carries a pushable IN, so Spark plans each one anew (see
        # batch_read.FilteringTableReader for why a query without one could reuse another's plan).
        options["filter-pushdown"] = "true"
    return spark.read.format(NAME).options(**options).load(table).where(_in_partitions(layout, partitions))


def _named_by_all(name: str, partitions: Sequence[Mapping[str, Any]]) -> bool:
    return bool(partitions) and all(p.get(name) is not None for p in partitions)


def _in_partitions(layout: SparkTable, partitions: Sequence[Mapping[str, Any]]) -> Column:
    """Rows of any of `partitions`; each key named by every partition also as an IN of its values,
    which Spark pushes down (it does not push an OR across columns) and which the OR implies."""
    from pyspark.sql import functions as F

    def value(name: str, raw: Any) -> Any:
        return from_json_value(raw, layout.types[name], field=f"partitions.{name}")

    def one(partition: Mapping[str, Any]) -> Column:
        tests = [F.col(_quoted(n)).eqNullSafe(F.lit(value(n, v))) for n, v in partition.items()]
        return functools.reduce(operator.and_, tests, F.lit(True))

    condition = functools.reduce(operator.or_, map(one, partitions), F.lit(False))
    for name in layout.partition_keys:
        if _named_by_all(name, partitions):
            values = {value(name, p[name]) for p in partitions}
            condition = F.col(_quoted(name)).isin(*values) & condition
    return condition


def _quoted(name: str) -> str:
    """A column name as Spark resolves it literally (no dots as struct access)."""
    return "`" + name.replace("`", "``") + "`"


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
