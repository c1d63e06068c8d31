"""The benchmark run: pypaimon's baseline once, then the coordinator on each database; tables and JSON.

For each database the coordinator runs as a real `coordinator serve` subprocess on a fresh warehouse;
pypaimon's baseline runs once per run in its own process. Prints one table per database and writes every
raw number to bench/results/<timestamp>.json. See bench/README.md for what is measured and how.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import coordinator_bench, floor, many_tables, pypaimon_bench
from bench.data import FULL, PARTITIONS, QUICK, Counts
from bench.procs import exit_on_sigterm, progress, run_isolated
from bench.replicas import DEFAULT_BASELINE, run_replicas
from bench.report import (
    breakdown,
    floor_lines,
    pypaimon_notes,
    render,
    replica_report,
    replica_rows,
    rows_for,
)
from bench.service import CoordinatorProcess, postgres_database, sqlite_url
from bench.spark_datasource import run_spark
from bench.spark_report import report as spark_report

DATABASES = ("sqlite", "postgres")
BUSY_LOAD = 1.5
RESULTS = Path(__file__).resolve().parent / "results"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/run.py", description="The commit coordinator beside pypaimon's own filesystem commit."
    )
    parser.add_argument("--quick", action="store_true", help="smaller counts: a smoke run under 2 minutes")
    parser.add_argument(
        "--databases",
        default=",".join(DATABASES),
        help="comma-separated, of: sqlite, postgres (default: both)",
    )
    parser.add_argument(
        "--spark-rows",
        type=int,
        default=None,
        help="rows of the Spark write benchmark (default 5,000,000; 500,000 with --quick; 0 skips it)",
    )
    parser.add_argument(
        "--many-tables",
        type=int,
        default=0,
        metavar="N",
        help="instead of the commit benchmarks: N tables with one commit each, then the overview and the "
        "table list (bench/many_tables.py; issue 14 uses 10000)",
    )
    parser.add_argument(
        "--replica-baseline",
        default=DEFAULT_BASELINE,
        metavar="REV",
        help="the revision whose service the replica case compares with, same load, same run (default: "
        f"{DEFAULT_BASELINE}, main before issue 18); the case needs PostgreSQL",
    )
    args = parser.parse_args(argv)
    if args.many_tables < 0:
        parser.error("--many-tables: a table count >= 1")
    if args.spark_rows is None:
        args.spark_rows = 500_000 if args.quick else 5_000_000
    args.databases = [d.strip() for d in args.databases.split(",") if d.strip()]
    unknown = set(args.databases) - set(DATABASES)
    if unknown or not args.databases:
        parser.error(f"--databases: choose from {', '.join(DATABASES)}")
    return args


def run_pypaimon(root: Path, counts: Counts) -> dict[str, Any]:
    """The baseline, once per run, in a clean process of its own."""
    progress("pypaimon baseline: sequential, big commit, contention")
    started = time.perf_counter()
    result = run_isolated(pypaimon_bench.baseline, str(root), counts)
    result["elapsed_s"] = time.perf_counter() - started
    return result


def run_coordinator(database: str, root: Path, counts: Counts) -> dict[str, Any]:
    """The three measurements and the floor against one service process on a fresh database and
    warehouse."""
    warehouse = root / "warehouse"
    warehouse.mkdir(parents=True)
    started = time.perf_counter()
    # ExitStack unwinds in reverse: the service stops before its PostgreSQL database is dropped.
    with ExitStack() as stack:
        url = sqlite_url(root) if database == "sqlite" else stack.enter_context(postgres_database())
        service = stack.enter_context(CoordinatorProcess(url, warehouse, root / "service.log"))
        progress(f"coordinator on {database}: {counts.sequential_commits} sequential commits")
        # Recorded per database: the service imports the code when it starts, and the code may move.
        result: dict[str, Any] = {"database": database, "revision": revision()}
        result["sequential"] = coordinator_bench.sequential(service.url, counts)
        progress(f"coordinator on {database}: one commit of {counts.big_files:,} messages")
        result["big_commit"] = coordinator_bench.big_commit(service.url, counts, PARTITIONS)
        progress(f"the floor on {database}: empty POSTs, the commit point's transaction, a commit's files")
        result["floor"] = floor.measure(service.url, url, root / "floor", counts.big_files)
        result["contention"] = []
        for run in range(1, counts.contention_runs + 1):
            progress(f"coordinator on {database}: contention run {run}/{counts.contention_runs}")
            result["contention"].append(coordinator_bench.contention([service.url], warehouse, counts, run))
    result["elapsed_s"] = time.perf_counter() - started
    return result


def replica_case(root: Path, args: argparse.Namespace, counts: Counts) -> tuple[dict[str, Any], bool]:
    """2 replicas x the contention load, this checkout and the baseline revision; whether it failed."""
    if "postgres" not in args.databases:
        return {
            "skipped": "several replicas share a PostgreSQL database; run with --databases postgres"
        }, False
    try:
        return run_replicas(root, counts, args.replica_baseline), False
    except Exception:
        progress("replica case FAILED")
        return {"error": traceback.format_exc()}, True


def revision() -> dict[str, Any]:
    """The commit measured, and whether the service or client code differs from it."""
    repo = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else "?"

    return {
        "commit": git("rev-parse", "--short", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--", "service", "client", "format")),
    }


def environment() -> dict[str, Any]:
    """What the numbers depend on: machine, versions and the code's revision."""
    from importlib.metadata import version

    return {
        "revision": revision(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "versions": {
            p: version(p)
            for p in ("pypaimon", "pyarrow", "httpx", "uvicorn", "fastapi", "sqlalchemy", "psycopg")
        },
    }


def report(results: dict[str, Any], counts: Counts) -> str:
    """All tables of the run, one per database that completed."""
    pypaimon = results["pypaimon"]
    revisions = {revision_text(o["revision"]) for o in results["coordinator"].values() if "revision" in o}
    parts = [
        f"coordinator at {', '.join(sorted(revisions)) or '?'}; pypaimon {pypaimon['version']} baseline "
        f"measured in this run. Targets are issue 18's, set for PostgreSQL (shown for SQLite for "
        f"reference). ratio > 1 favours the coordinator; x floor is the coordinator's figure over the "
        f"physical floor of the same commit on this machine (bench/floor.py).",
        *busy_warning(results),
        "",
    ]
    if len(revisions) > 1:
        parts[-1:] = ["WARNING: the code changed between the databases' runs; compare them with care.", ""]
    for database, outcome in results["coordinator"].items():
        if "error" in outcome:
            parts += [f"coordinator on {database}: FAILED\n{outcome['error']}", ""]
            continue
        rows = rows_for(outcome, pypaimon, counts)
        results.setdefault("summary", {})[database] = [r.as_json() for r in rows]
        parts += [
            render(f"coordinator on {database} vs pypaimon filesystem commit", rows),
            "",
            floor_lines(outcome["floor"]),
            "",
            breakdown(outcome),
            "",
        ]
    parts += [pypaimon_notes(pypaimon), ""]
    replicas = results["replicas"]
    if "error" in replicas:
        parts.append(f"replica case: FAILED\n{replicas['error']}")
    elif "skipped" in replicas:
        parts.append(f"replica case: skipped ({replicas['skipped']})")
    else:
        results.setdefault("summary", {})["replicas"] = [r.as_json() for r in replica_rows(replicas, counts)]
        parts.append(replica_report(replicas, counts))
    spark = results.get("spark")
    if spark is not None:
        parts += [
            "",
            f"Spark write benchmark: FAILED\n{spark['error']}" if "error" in spark else spark_report(spark),
        ]
    return "\n".join(parts)


def busy_warning(results: dict[str, Any]) -> list[str]:
    """A warning line when the machine was busy at the start of the run, else none.

    Two cores: another process using one of them halves what the benchmark measures. (The load at the
    end is recorded but not judged: by then it counts the benchmark's own writer processes.)
    """
    load = results["load_average_start"][0]
    if load <= BUSY_LOAD:
        return []
    return [f"WARNING: the machine was busy at the start (1-min load average {load:.1f})."]


def revision_text(revision: dict[str, Any]) -> str:
    """The commit the service ran from, and whether service/ or client/ had uncommitted changes."""
    return f"{revision['commit']}{' (+ uncommitted changes)' if revision['dirty'] else ''}"


def save(results: dict[str, Any], prefix: str = "") -> Path:
    """bench/results/<prefix><timestamp>.json."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{prefix}{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=1, default=str) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    # SIGTERM (a CI timeout, `kill`): still stop the services and drop the PostgreSQL database.
    exit_on_sigterm()
    args = parse_args(argv)
    if args.many_tables:
        with tempfile.TemporaryDirectory(prefix="coordinator-bench-") as tmp:
            return many_tables.main(args.databases, args.many_tables, Path(tmp), RESULTS)
    counts = QUICK if args.quick else FULL
    results: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "quick": args.quick,
        "command": [sys.executable, *sys.argv],
        "counts": asdict(counts),
        "environment": environment(),
        "load_average_start": os.getloadavg(),
        "coordinator": {},
    }
    started = time.perf_counter()
    failed = False
    with tempfile.TemporaryDirectory(prefix="coordinator-bench-") as tmp:
        results["pypaimon"] = run_pypaimon(Path(tmp) / "pypaimon", counts)
        for database in args.databases:
            try:
                results["coordinator"][database] = run_coordinator(database, Path(tmp) / database, counts)
            except Exception:
                # Keep going: the other database's numbers are still worth having.
                failed = True
                results["coordinator"][database] = {"error": traceback.format_exc()}
                progress(f"coordinator on {database} FAILED")
        results["replicas"], failed_replicas = replica_case(Path(tmp) / "replicas", args, counts)
        failed = failed or failed_replicas
        if args.spark_rows:
            try:
                results["spark"] = run_spark(Path(tmp) / "spark", args.spark_rows)
            except Exception:
                failed = True
                results["spark"] = {"error": traceback.format_exc()}
                progress("Spark write benchmark FAILED")
    results["elapsed_s"] = time.perf_counter() - started
    results["load_average_end"] = os.getloadavg()
    text = report(results, counts)
    path = save(results)
    print(text)
    print(f"\nraw numbers: {path}  (total {results['elapsed_s']:.0f} s)")
    return 1 if failed else 0
