"""Spark write benchmark: 5,000,000 rows through the coordinator vs Spark's plain `df.write.parquet`.

Every write of ours is paired with the plain write that produces the same layout from the same rows:
an unpartitioned append table against `df.write.parquet`, the append table partitioned by `dt` against
`df.write.partitionBy("dt").parquet` (which must group rows by partition just as our writer does). The
primary-key table is compared with the partitioned plain write, and also with a plain write that does
the same shuffle and sort (by partition and 4 hash groups, sorted by key), which isolates our own cost
from that of clustering rows by key. The Arrow hand-off is a `mapInArrow` that only counts the rows:
what any Python writer pays Spark to see the rows, before it writes a byte. All run in one Spark
session (`local[2]`), in turn, `repeats` times after one warm-up of each; medians are reported. The
commit's share is the time spent in `client.commit` over the whole `write()`.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from bench.service import CoordinatorProcess, postgres_database
from coordinator_client import CommitRequest, CommitResponse, CoordinatorClient

FIELDS = [
    {"name": "dt", "type": "STRING NOT NULL"},
    {"name": "id", "type": "BIGINT NOT NULL"},
    {"name": "name", "type": "STRING"},
    {"name": "amount", "type": "DOUBLE"},
    {"name": "qty", "type": "INT"},
]


class TimedClient(CoordinatorClient):
    """The real client, noting how long each commit call took (bench instrumentation only)."""

    commit_seconds: list[float]

    def commit(
        self, table_id: str, request: CommitRequest | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> CommitResponse:
        started = time.perf_counter()
        try:
            return super().commit(table_id, request, idempotency_key=idempotency_key)
        finally:
            self.commit_seconds.append(time.perf_counter() - started)


PLAIN = ("plain", "plain_partitioned", "plain_clustered", "arrow_handoff")
OURS: dict[str, tuple[dict[str, Any], str]] = {
    # name: (table body, the plain write it is compared with)
    "append": ({}, "plain"),
    "append_partitioned": ({"partitionKeys": ["dt"]}, "plain_partitioned"),
    "primary_key": (
        {"partitionKeys": ["dt"], "primaryKeys": ["dt", "id"], "options": {"bucket": "4"}},
        "plain_partitioned",
    ),
}


def run_spark(root: Path, rows: int, repeats: int = 5) -> dict[str, Any]:
    root.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Spark's Python workers import the client from this checkout, as the driver does (run.py's sys.path).
    client_dir = str(Path(__file__).resolve().parent.parent / "client")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (client_dir, os.environ.get("PYTHONPATH")) if p)
    from pyspark.sql import SparkSession

    from coordinator_client.spark import write

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-spark-write")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")

    def frame(n: int) -> Any:
        return spark.range(n, numPartitions=4).selectExpr(
            "case when id % 2 = 0 then '2026-11-20' else '2026-11-21' end as dt",
            "id",
            "concat('customer-', id % 100003) as name",
            "(id % 10007) / 100.0 as amount",
            "cast(id % 1000 as int) as qty",
        )

    def count_rows(batches: Iterator[Any]) -> Iterator[Any]:
        # Nested, so Spark pickles it by value: its Python workers cannot import `bench`.
        import pyarrow as pa

        yield pa.RecordBatch.from_pydict({"rows": [sum(batch.num_rows for batch in batches)]})

    def plain(name: str, n: int) -> float:
        path = root / f"{name}.parquet"
        started = time.perf_counter()
        if name == "arrow_handoff":
            frame(n).mapInArrow(count_rows, "rows long").collect()
        else:
            rows = frame(n)
            if name == "plain_clustered":
                rows = rows.repartition(4, "dt", "id").sortWithinPartitions("dt", "id")
            writer = rows.write.mode("overwrite")
            if name != "plain":
                writer = writer.partitionBy("dt")
            writer.parquet(str(path))
        elapsed = time.perf_counter() - started
        shutil.rmtree(path, ignore_errors=True)
        return elapsed

    out: dict[str, Any] = {"rows": rows, "repeats": repeats, **{name: [] for name in (*PLAIN, *OURS)}}
    with (
        postgres_database() as url,
        CoordinatorProcess(url, root / "warehouse", root / "service.log") as service,
    ):
        client = TimedClient(service.url, timeout=300)
        client.commit_seconds = []
        for name, (body, _) in OURS.items():
            for table_name in (name, f"{name}_warmup"):
                client.create_table({"database": "bench", "name": table_name, "fields": FIELDS, **body})

        def ours(name: str, n: int) -> tuple[float, float]:
            client.commit_seconds.clear()
            started = time.perf_counter()
            write(frame(n), f"bench.{name}", client=client, mode="overwrite")
            return time.perf_counter() - started, sum(client.commit_seconds)

        for name in PLAIN:
            plain(name, 200_000)
        for name in OURS:
            ours(f"{name}_warmup", 200_000)
        for _ in range(repeats):
            for name in PLAIN:
                out[name].append(plain(name, rows))
            for name in OURS:
                out[name].append(ours(name, rows))
        client.close()
    spark.stop()
    return out


def report(result: Mapping[str, Any]) -> str:
    medians = {name: statistics.median(result[name]) for name in PLAIN}
    lines = [
        f"Spark write of {result['rows']:,} rows, local[2], median of {result['repeats']} "
        "(ratio = ours / the plain write of the same layout; target <= 1.3x)",
        f"  plain df.write.parquet                      {medians['plain']:7.2f} s",
        f"  plain df.write.partitionBy('dt').parquet    {medians['plain_partitioned']:7.2f} s",
        f"  Arrow hand-off only (mapInArrow, no write)  {medians['arrow_handoff']:7.2f} s  "
        f"{medians['arrow_handoff'] / medians['plain']:4.2f}x plain",
    ]
    labels = {
        "append": "append table",
        "append_partitioned": "append table, by dt",
        "primary_key": "primary key, by dt, 4 buckets",
    }
    for name, (_, baseline) in OURS.items():
        runs = result[name]
        total = statistics.median(t for t, _ in runs)
        commit = statistics.median(c for _, c in runs)
        lines.append(
            f"  coordinator, {labels[name]:<30} {total:7.2f} s  ratio {total / medians[baseline]:4.2f}x "
            f"{'plain' if baseline == 'plain' else 'partitioned':<11} commit {commit * 1000:6.1f} ms "
            f"({commit / total:.1%})"
        )
    clustered = medians["plain_clustered"]
    key_write = statistics.median(t for t, _ in result["primary_key"])
    lines.append(
        f"  plain write shuffled and sorted like it      {clustered:7.2f} s  "
        f"(primary key / this: {key_write / clustered:4.2f}x)"
    )
    return "\n".join(lines)
