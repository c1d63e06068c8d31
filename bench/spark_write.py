"""Spark write benchmark: 5,000,000 rows through the coordinator vs Spark's plain `df.write.parquet`.

Both sides write the same generated DataFrame in the same Spark session (`local[2]`), alternating, each
three times after one warm-up of each; the median is reported. Ours is measured for an append table
(no shuffle, as plain parquet) and for a primary-key table (4 buckets, 2 partitions: shuffle by bucket,
sort by key, sequence numbers). The commit's share is the time spent in `client.commit` over the
whole `write()`.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
from collections.abc import Mapping
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


def run_spark(root: Path, rows: int, repeats: int = 3) -> dict[str, Any]:
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

    out: dict[str, Any] = {"rows": rows, "repeats": repeats, "plain": [], "append": [], "primary_key": []}
    with (
        postgres_database() as url,
        CoordinatorProcess(url, root / "warehouse", root / "service.log") as service,
    ):
        client = TimedClient(service.url, timeout=300)
        client.commit_seconds = []
        for name, body in (
            ("append", {}),
            ("primary_key", {"primaryKeys": ["dt", "id"], "options": {"bucket": "4"}}),
        ):
            for table in (f"bench.{name}", f"bench.{name}_warmup"):
                database, table_name = table.split(".")
                client.create_table(
                    {
                        "database": database,
                        "name": table_name,
                        "fields": FIELDS,
                        "partitionKeys": ["dt"],
                        **body,
                    }
                )

        def plain(n: int, path: Path) -> float:
            started = time.perf_counter()
            frame(n).write.mode("overwrite").parquet(str(path))
            return time.perf_counter() - started

        def ours(n: int, table: str) -> tuple[float, float]:
            client.commit_seconds.clear()
            started = time.perf_counter()
            write(frame(n), table, client=client, mode="overwrite")
            return time.perf_counter() - started, sum(client.commit_seconds)

        plain(200_000, root / "warmup.parquet")
        ours(200_000, "bench.append_warmup")
        ours(200_000, "bench.primary_key_warmup")
        for _ in range(repeats):
            out["plain"].append(plain(rows, root / "plain.parquet"))
            shutil.rmtree(root / "plain.parquet", ignore_errors=True)
            out["append"].append(ours(rows, "bench.append"))
            out["primary_key"].append(ours(rows, "bench.primary_key"))
        client.close()
    spark.stop()
    return out


def report(result: Mapping[str, Any]) -> str:
    plain = statistics.median(result["plain"])
    lines = [
        f"Spark write of {result['rows']:,} rows, local[2], median of {result['repeats']} "
        "(ratio = ours / plain df.write.parquet; target <= 1.3x)",
        f"  plain df.write.parquet       {plain:7.2f} s",
    ]
    for name, label in (("append", "append table"), ("primary_key", "primary-key table, 4 buckets")):
        runs = result[name]
        total = statistics.median(t for t, _ in runs)
        commit = statistics.median(c for _, c in runs)
        lines.append(
            f"  coordinator, {label:<29} {total:7.2f} s  ratio {total / plain:4.2f}x  "
            f"commit {commit * 1000:6.1f} ms ({commit / total:.1%} of the write)"
        )
    return "\n".join(lines)
