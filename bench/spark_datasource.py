"""Spark benchmark of the `paimon-coordinator` data source: 5,000,000 rows written with
`df.write.format("paimon-coordinator")` and read back with `spark.read.format(...)`, each beside the plain
Spark write or read of the same layout (`spark_cases` says which), in one Spark session (`local[2]`).

    python bench/run.py --spark [--rows 5000000] [--repeats 5]

Each action runs once on 200,000 rows to warm up, then all of them in turn `repeats` times, each of ours
next to its plain counterpart; medians are reported. Writes come first, so the reads read what the last
repeat wrote (each table holds `rows` rows: writes overwrite). `spark_timing` splits every action into
before, during and after its Spark tasks and takes the coordinator's own commit time from its /metrics.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.service import CoordinatorProcess, postgres_database
from bench.spark_cases import (
    FIELDS,
    FLOORS,
    READ_FLOOR,
    READS,
    TABLES,
    WRITES,
    Pair,
    our_writes,
    plain_writes,
    reads,
)
from bench.spark_null_sink import NullSink
from bench.spark_report import report
from bench.spark_timing import StageClock
from coordinator_client import CoordinatorClient

WARM_UP_ROWS = 200_000
REPO = Path(__file__).resolve().parent.parent


def run_spark(root: Path, rows: int, repeats: int = 5) -> dict[str, Any]:
    """Every action's timings (`repeats` of each), the load average before and after, and the row counts
    the data source read back."""
    root.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Spark's Python workers import the client and bench/ from this checkout, as the driver does.
    paths = (str(REPO / "format"), str(REPO / "client"), str(REPO), os.environ.get("PYTHONPATH"))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    from pyspark.sql import SparkSession

    from coordinator_client.spark import register

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-spark-datasource")
        .config("spark.ui.enabled", "true")  # its REST API times the stages (spark_timing)
        .config("spark.ui.port", "0")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    spark.dataSource.register(NullSink)
    out: dict[str, Any] = {"rows": rows, "repeats": repeats, "load_average_start": os.getloadavg()}
    clock = StageClock(spark)
    try:
        with (
            postgres_database() as url,
            CoordinatorProcess(url, root / "warehouse", root / "service.log") as service,
            CoordinatorClient(service.url, timeout=300) as client,
        ):
            for name, body in TABLES.items():
                for table in (name, f"{name}_warmup"):
                    client.create_table({"database": "bench", "name": table, "fields": FIELDS, **body})

            def timed(actions: dict[str, Callable[[], object]], pairs: Sequence[Pair], *extra: str) -> None:
                """Each pair's plain actions, then ours; a plain action shared by pairs runs once."""
                done: set[str] = set()
                for pair in pairs:
                    for name in (pair.plain, *pair.also, pair.ours):
                        if name not in done:
                            done.add(name)
                            coordinator = name == pair.ours and name in TABLES
                            timing = clock.time(actions[name], service.url if coordinator else None)
                            out.setdefault(name, []).append(timing.as_json())
                for name in extra:
                    out.setdefault(name, []).append(clock.time(actions[name]).as_json())

            writes = {**plain_writes(spark, root / "plain", rows), **our_writes(spark, service.url, rows)}
            warm_plain = plain_writes(spark, root / "plain-warmup", WARM_UP_ROWS)
            for action in (
                *warm_plain.values(),
                *our_writes(spark, service.url, WARM_UP_ROWS, "_warmup").values(),
            ):
                action()
            for _ in range(repeats):
                timed(writes, WRITES, *FLOORS)
            shutil.rmtree(root / "plain", ignore_errors=True)

            files = {t: _live_files(client, f"bench.{t}") for n in TABLES for t in (n, f"{n}_warmup")}
            for action in reads(spark, service.url, files, WARM_UP_ROWS, "_warmup").values():
                action()
            read_actions = reads(spark, service.url, files, rows)
            for _ in range(repeats):
                timed(read_actions, READS, READ_FLOOR)
            out["files"] = {
                t: {"files": len(f), "bytes": sum(size for _, size in f)}
                for t, f in files.items()
                if not t.endswith("_warmup")
            }
            out["rows_read"] = {
                t: spark.read.format("paimon-coordinator")
                .option("url", service.url)
                .load(f"bench.{t}")
                .count()
                for t in ("append", "primary_key")
            }
    finally:
        clock.close()
        spark.stop()
    out["load_average_end"] = os.getloadavg()
    return out


def _live_files(client: CoordinatorClient, table: str) -> list[tuple[str, int]]:
    return [(f.path, f.file_size) for f in client.live_files(table).files]


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench/run.py --spark", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000, help="rows per write (default 5,000,000)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each action (default 5)")
    args = parser.parse_args(argv)
    if args.rows < WARM_UP_ROWS or args.repeats < 1:
        parser.error(f"--rows at least {WARM_UP_ROWS:,}, --repeats at least 1")
    result: dict[str, Any] = {
        "command": [sys.executable, *sys.argv],
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    with tempfile.TemporaryDirectory(prefix="coordinator-bench-spark-") as tmp:
        result.update(run_spark(Path(tmp), args.rows, args.repeats))
    results = REPO / "bench" / "results"
    results.mkdir(exist_ok=True)
    path = results / f"spark-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(report(result))
    print(f"\nraw numbers: {path}")
    return 0
