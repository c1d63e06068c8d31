"""What the Spark benchmark times: each write and read of the data source, and the plain Spark action it is
compared with. Every action is a zero-argument callable; `spark_datasource` runs and times them in turn.

The rows: `spark.range(n, numPartitions=4)` made into `dt, id, name, amount, qty` (two `dt` values, ids
unique), generated in the tasks, so no input file is read by either side.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import spark_null_sink as null_sink
from coordinator_client.spark.source import NAME

FIELDS = [
    {"name": "dt", "type": "STRING NOT NULL"},
    {"name": "id", "type": "BIGINT NOT NULL"},
    {"name": "name", "type": "STRING"},
    {"name": "amount", "type": "DOUBLE"},
    {"name": "qty", "type": "INT"},
]
COLUMNS = [f["name"] for f in FIELDS]
BUCKETS = 4
TABLES: dict[str, dict[str, Any]] = {
    # Our tables (database `bench`) and their bodies beside FIELDS.
    "append": {},
    "append_partitioned": {"partitionKeys": ["dt"]},
    "primary_key": {
        "partitionKeys": ["dt"],
        "primaryKeys": ["dt", "id"],
        "options": {"bucket": str(BUCKETS)},
    },
}


@dataclass(frozen=True)
class Pair:
    """One of our actions, the plain action it is measured against, and the target of ours / plain."""

    ours: str
    plain: str
    target: float | None
    also: tuple[str, ...] = ()
    """Further plain actions reported beside `plain` (not what the target refers to)."""


WRITES = (
    Pair("append", "plain", 1.3),
    Pair("append_partitioned", "plain_partitioned", 1.3),
    Pair("primary_key", "plain_sorted", 1.3, also=("plain_shuffled", "plain_partitioned")),
)
READS = (
    Pair("read_append", "read_append_plain", 1.2),
    Pair("read_primary_key", "read_primary_key_plain", None),
)
HANDOFF = "arrow_handoff"
READ_FLOOR = "read_null"
"""A Python data source read of rows it already holds (bench-null): what Spark charges any Python reader."""
NULL_SINK = "null_sink"
FLOORS = (HANDOFF, NULL_SINK)
"""Plain actions that write nothing: what Spark charges any Python writer before it encodes a byte."""


def frame(spark: Any, rows: int) -> Any:
    return spark.range(rows, numPartitions=4).selectExpr(
        "case when id % 2 = 0 then '2026-11-20' else '2026-11-21' end as dt",
        "id",
        "concat('customer-', id % 100003) as name",
        "(id % 10007) / 100.0 as amount",
        "cast(id % 1000 as int) as qty",
    )


def plain_writes(spark: Any, root: Path, rows: int) -> dict[str, Callable[[], object]]:
    """Spark's own writes of the same rows, each into a fresh directory under `root`.

    plain_sorted is the baseline of our primary-key write, which does not shuffle: each of its tasks sorts
    its own rows by partition, bucket and key and writes a file per (partition, bucket). So does this
    one, with Spark's hash of `id` modulo the bucket count standing in for Paimon's bucket (a partition
    directory of its own, as ours is). plain_shuffled is the older baseline, from when our writer
    shuffled rows to their bucket first: a shuffle into 4 groups by (dt, id), each sorted by key.
    """

    def parquet(name: str, frame_of: Callable[[], Any], *partition_by: str) -> Callable[[], object]:
        def action() -> None:
            writer = frame_of().write.mode("overwrite")
            if partition_by:
                writer = writer.partitionBy(*partition_by)
            writer.parquet(str(root / name))

        return action

    def sorted_per_task() -> Any:
        with_bucket = frame(spark, rows).selectExpr("*", f"pmod(hash(id), {BUCKETS}) as bucket")
        return with_bucket.sortWithinPartitions("dt", "bucket", "id")

    def shuffled() -> Any:
        return frame(spark, rows).repartition(4, "dt", "id").sortWithinPartitions("dt", "id")

    return {
        "plain": parquet("plain", lambda: frame(spark, rows)),
        "plain_partitioned": parquet("plain_partitioned", lambda: frame(spark, rows), "dt"),
        "plain_sorted": parquet("plain_sorted", sorted_per_task, "dt", "bucket"),
        "plain_shuffled": parquet("plain_shuffled", shuffled, "dt"),
        HANDOFF: lambda: frame(spark, rows).mapInArrow(_count_rows, "rows long").collect(),
        NULL_SINK: lambda: frame(spark, rows).write.format(null_sink.NAME).mode("append").save(),
    }


def our_writes(spark: Any, url: str, rows: int, suffix: str = "") -> dict[str, Callable[[], object]]:
    """`df.write.format("paimon-coordinator")` into each of TABLES (mode overwrite: a table does not grow
    between repeats); `suffix` picks the warm-up's tables."""

    def write(table: str) -> Callable[[], object]:
        return lambda: frame(spark, rows).write.format(NAME).option("url", url).mode("overwrite").save(table)

    return {name: write(f"bench.{name}{suffix}") for name in TABLES}


def reads(
    spark: Any, url: str, files: dict[str, list[tuple[str, int]]], rows: int, suffix: str = ""
) -> dict[str, Callable[[], object]]:
    """Full reads, materialised the same way on both sides: every column of every row goes to Spark's
    `noop` sink (nothing is written, nothing pruned). The plain side reads the files of the table's latest
    snapshot (`files`: table name -> (path, size)) with `spark.read.parquet`; for the primary-key table
    it selects the table's columns of them, without merging (its files hold each key once, so the rows
    are the same). Ours takes the data source's defaults (its `parallelism` is the driver's core count,
    as Spark's default parallelism on local[2])."""

    def ours(table: str) -> Callable[[], object]:
        source = spark.read.format(NAME).option("url", url)
        return lambda: _noop(source.load(f"bench.{table}{suffix}"))

    def plain(table: str) -> Callable[[], object]:
        paths = [path for path, _ in files[f"{table}{suffix}"]]
        return lambda: _noop(spark.read.parquet(*paths).select(*COLUMNS))

    return {
        "read_append": ours("append"),
        "read_append_plain": plain("append"),
        "read_primary_key": ours("primary_key"),
        "read_primary_key_plain": plain("primary_key"),
        READ_FLOOR: lambda: _noop(spark.read.format(null_sink.NAME).option("rows", str(rows)).load()),
    }


def _noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def _count_rows(batches: Iterator[Any]) -> Iterator[Any]:
    """The Arrow hand-off alone: a Python worker that only counts the rows Spark sends it."""
    import pyarrow as pa

    yield pa.RecordBatch.from_pydict({"rows": [sum(batch.num_rows for batch in batches)]})
