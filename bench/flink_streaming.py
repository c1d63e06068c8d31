"""Flink streaming jobs committing through the coordinator beside Paimon's filesystem catalog (issue 33, 6).

usage: python bench/run.py --flink [--rate 5000] [--seconds 40] [--writers 3] [--writer-rate 1000]
                           [--writer-seconds 30]

Both sides run in the same run on the same machine, one after the other: Paimon's Flink connector with
its REST catalog at a real `coordinator serve` on a fresh PostgreSQL database and a local warehouse, and
with its filesystem catalog on a local warehouse (the baseline). The jobs are tests/flink's (its
flink_job.py run by .venv-flink's Python, started by tests/flink/jobs.py; `make flink` first).

- `single`: one streaming job, a datagen sequence 1..rate*seconds at `--rate` rows/s into a primary-key
  table (bucket 2, key = seq, so every row is a key of its own), a checkpoint a second.
- `writers`: `--writers` such jobs on one table (write-only, disjoint key ranges, each its own commit
  user), `--writer-rate` rows/s each.

Commit latency of a checkpoint, the same way on both sides: from the mtime of the checkpoint's
`_metadata` (Flink writes it last, as the checkpoint completes, before it tells the committer) to the
mtime of the last snapshot file carrying that checkpoint's id as commit identifier (Paimon writes it on
the filesystem side; the coordinator writes it at publication on the REST side). Throughput: rows the
checkpoints' snapshots added after the first one, over the time from the first to the last. Lost: keys
the source made that pypaimon does not read; doubled: rows added beyond the source's (APPEND snapshots'
deltaRecordCount) plus (commit user, identifier) pairs with more than one APPEND snapshot.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypaimon import CatalogFactory

from bench.procs import exit_on_sigterm, progress
from bench.service import CoordinatorProcess, postgres_database
from bench.stats import summarize
from bench.suite import environment, save
from tests.flink.jobs import (
    END_OF_INPUT,
    FlinkJob,
    catalog_sql,
    checkpointing,
    completed_checkpoints,
    history,
)
from tests.support.rest_writers import read_rows, rest_catalog

RATE = 5000
SECONDS = 40
WRITERS = 3
WRITER_RATE = 1000
WRITER_SECONDS = 30
DATABASE = "bench"
JOB_SLACK_S = 240
"""How long a job may take beyond its input's duration (PyFlink's start, the last commits) before the
run gives up on it: three JVMs starting at once on 2 shared cores take a minute or more."""


@dataclass
class Catalog:
    """One side: how Flink names the catalog, and how this process reads the table and its files."""

    name: str
    sql: str
    warehouse: Path
    url: str | None = None
    """The coordinator's URL on the REST side."""

    def read(self, table: str) -> list[dict[str, Any]]:
        if self.url is not None:
            catalog = rest_catalog(self.url)
        else:
            catalog = CatalogFactory.create({"warehouse": str(self.warehouse)})
        return read_rows(catalog.get_table(f"{DATABASE}.{table}"))


def filesystem_sql(warehouse: Path) -> str:
    return f"CREATE CATALOG lake WITH ('type'='paimon', 'warehouse'='{warehouse.as_uri()}')"


def create_table(catalog: Catalog, table: str, log: Path) -> None:
    FlinkJob(
        {
            "mode": "batch",
            "statements": [
                catalog.sql,
                f"CREATE DATABASE IF NOT EXISTS lake.{DATABASE}",
                f"CREATE TABLE lake.{DATABASE}.{table} (k BIGINT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) "
                "WITH ('bucket'='2')",
            ],
        },
        log,
    ).finished()


def writer(
    catalog: Catalog, table: str, offset: int, rows: int, rate: int, folder: Path, user: str, write_only: bool
) -> FlinkJob:
    """A streaming job writing keys offset+1..offset+rows at `rate` rows/s, a checkpoint a second.

    `user` prefixes the job's commit user (Paimon's `commit.user-prefix`), so its snapshots are told
    from another job's; `write_only`: Paimon's way for several writers of one primary-key table (no
    writer compacts, so none deletes files another one reads)."""
    options = f"'commit.user-prefix'='{user}'" + (", 'write-only'='true'" if write_only else "")
    return FlinkJob(
        {
            "mode": "streaming",
            "config": checkpointing(folder),
            "statements": [
                catalog.sql,
                "CREATE TEMPORARY TABLE src (seq BIGINT) WITH ('connector'='datagen', "
                f"'rows-per-second'='{rate}', 'fields.seq.kind'='sequence', 'fields.seq.start'='1', "
                f"'fields.seq.end'='{rows}')",
            ],
            "inserts": [
                f"INSERT INTO lake.{DATABASE}.{table} /*+ OPTIONS({options}) */ "
                f"SELECT {offset} + seq, seq FROM src"
            ],
        },
        folder.with_suffix(".log"),
    )


class Checkpoints(threading.Thread):
    """Each checkpoint's completion time (its `_metadata` mtime), read while the jobs run: a job that
    ends discards its checkpoints, retained or not (retention only keeps them on a cancel or a crash).
    Polled every POLL_S; the time kept is the file's, so the polling only has to see each one once, and
    the jobs retain every checkpoint until they end (tests/flink's `checkpointing`)."""

    POLL_S = 0.2

    def __init__(self, folders: list[Path]) -> None:
        super().__init__(daemon=True)
        self.folders = folders
        self.completed: list[dict[int, float]] = [{} for _ in folders]
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.POLL_S):
            self.look()

    def look(self) -> None:
        for folder, seen in zip(self.folders, self.completed, strict=True):
            for chk, path in completed_checkpoints(folder).items():
                if chk not in seen:
                    try:
                        seen[chk] = (path / "_metadata").stat().st_mtime
                    except FileNotFoundError:
                        pass  # discarded (subsumed, or the job ended) between the glob and the stat

    def __enter__(self) -> Checkpoints:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.join()


def snapshots(warehouse: Path, table: str) -> list[dict[str, Any]]:
    """Every snapshot file of the table under `warehouse` (either side writes them there), with its
    mtime as `landed` (seconds, epoch), oldest first."""
    found = []
    for path in warehouse.rglob("snapshot-*"):
        if path.parent.name != "snapshot" or path.parent.parent.name != table:
            continue
        snapshot = json.loads(path.read_text())
        snapshot["landed"] = path.stat().st_mtime
        found.append(snapshot)
    return sorted(found, key=lambda s: int(s["id"]))


def commit_latencies(snaps: list[dict[str, Any]], checkpoints: dict[int, float], user: str) -> list[float]:
    """Per checkpoint of the job whose commit user starts with `user` that made a snapshot: ms from the
    checkpoint's `_metadata` to its last snapshot file."""
    last: dict[int, float] = {}
    for s in snaps:
        if s["commitUser"].startswith(user) and s["commitIdentifier"] != END_OF_INPUT:
            last[int(s["commitIdentifier"])] = max(last.get(int(s["commitIdentifier"]), 0.0), s["landed"])
    return [(landed - checkpoints[chk]) * 1000 for chk, landed in sorted(last.items()) if chk in checkpoints]


def landed(snaps: list[dict[str, Any]], keys: set[int], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Throughput between the first and the last APPEND snapshot, and the lost / doubled checks."""
    appends = [s for s in snaps if s["commitKind"] == "APPEND"]
    added = sum(int(s.get("deltaRecordCount") or 0) for s in appends)
    pairs = Counter((s["commitUser"], s["commitIdentifier"]) for s in appends)
    read = Counter(int(r["k"]) for r in rows)
    span = appends[-1]["landed"] - appends[0]["landed"] if len(appends) > 1 else 0.0
    after_first = added - int(appends[0].get("deltaRecordCount") or 0) if appends else 0
    return {
        "rows": len(keys),
        "append_snapshots": len(appends),
        "snapshots": len(snaps),
        "span_s": span,
        "rows_per_s": after_first / span if span else None,
        "lost": len(keys - set(read)),
        "doubled": max(added - len(keys), 0) + sum(n - 1 for n in pairs.values() if n > 1),
        "foreign": len(set(read) - keys) + sum(n - 1 for n in read.values() if n > 1),
    }


def single(catalog: Catalog, root: Path, rate: int, seconds: int) -> dict[str, Any]:
    table = "single"
    rows = rate * seconds
    create_table(catalog, table, root / "create-single.log")
    progress(f"  {catalog.name}: one job, {rows:,} rows at {rate:,}/s")
    folder = root / "checkpoints-single"
    with Checkpoints([folder]) as checkpoints:
        writer(catalog, table, 0, rows, rate, folder, "w0", False).finished(seconds + JOB_SLACK_S)
    snaps = snapshots(catalog.warehouse, table)
    latencies = commit_latencies(snaps, checkpoints.completed[0], "w0")
    result = {
        "commit_ms": summarize(latencies),
        **landed(snaps, set(range(1, rows + 1)), catalog.read(table)),
    }
    progress(f"  {catalog.name}: {json.dumps(result)}")
    return result


def writers(catalog: Catalog, root: Path, count: int, rate: int, seconds: int) -> dict[str, Any]:
    table = "shared"
    rows = rate * seconds
    create_table(catalog, table, root / "create-shared.log")
    progress(f"  {catalog.name}: {count} jobs on one table, {rows:,} rows each at {rate:,}/s")
    # Paimon's way for several writers of one primary-key table: write-only, so no writer compacts (and
    # deletes files another one reads); each job's offset keeps the key ranges disjoint.
    folders = [root / f"checkpoints-shared-{n}" for n in range(count)]
    started = time.time()
    with Checkpoints(folders) as checkpoints:
        jobs = [
            writer(catalog, table, n * 10**9, rows, rate, folders[n], f"w{n}", True) for n in range(count)
        ]
        for job in jobs:
            job.finished(seconds + JOB_SLACK_S)
    wall = time.time() - started
    snaps = [s for s in snapshots(catalog.warehouse, table) if s["landed"] >= started]
    keys = {n * 10**9 + seq for n in range(count) for seq in range(1, rows + 1)}
    commits = [s for s in snaps if s["commitIdentifier"] != END_OF_INPUT]
    span = commits[-1]["landed"] - commits[0]["landed"] if len(commits) > 1 else 0.0
    latencies = [
        ms for n, seen in enumerate(checkpoints.completed) for ms in commit_latencies(snaps, seen, f"w{n}")
    ]
    result: dict[str, Any] = {
        "jobs": count,
        "wall_s": wall,
        "checkpoint_commits": len(commits),
        "commits_per_s": (len(commits) - 1) / span if span else None,
        "commit_ms": summarize(latencies),
        **landed(snaps, keys, catalog.read(table)),
    }
    if catalog.url is not None:
        refused = [c for c in history(catalog.url, f"{DATABASE}.{table}") if c["outcome"] != "committed"]
        result["refused"] = len(refused)
        result["refused_kinds"] = dict(
            Counter(f"{c['conflict']['type']} retryable={c['conflict']['retryable']}" for c in refused)
        )
    else:
        result["refused"] = None  # Paimon's filesystem commit retries leave no record we can read
    progress(f"  {catalog.name}: {json.dumps(result)}")
    return result


def run_side(catalog: Catalog, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    root.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {}
    for case in ("single", "writers"):
        try:
            if case == "single":
                result[case] = single(catalog, root, args.rate, args.seconds)
            else:
                result[case] = writers(catalog, root, args.writers, args.writer_rate, args.writer_seconds)
        except Exception:
            result[case] = {"error": traceback.format_exc()}
            progress(f"  {catalog.name}: {case} FAILED\n{result[case]['error']}")
    return result


def cell(result: dict[str, Any], text: str) -> str:
    return "failed" if "error" in result else text


def report(results: dict[str, Any]) -> str:
    rest, fs = results["sides"]["coordinator"], results["sides"]["filesystem"]
    rows = []

    def line(name: str, case: str, render: Any) -> None:
        a, b = rest[case], fs[case]
        rows.append(f"| {name} | {cell(a, render(a))} | {cell(b, render(b))} |")

    def ms(r: dict[str, Any]) -> str:
        c = r["commit_ms"]
        return f"{c['p50']:.0f} / {c['p99']:.0f} ms (n={c['n']})" if c.get("n") else "n/a"

    line("1 job: checkpoint to snapshot p50 / p99", "single", ms)
    line("1 job: rows/s landed", "single", lambda r: f"{r['rows_per_s']:,.0f} of {results['rate']:,}/s")
    line("1 job: lost / doubled", "single", lambda r: f"{r['lost']} / {r['doubled']}")
    line(f"{results['writers']} jobs: checkpoint commits/s", "writers", lambda r: f"{r['commits_per_s']:.2f}")
    line(f"{results['writers']} jobs: checkpoint to snapshot p50 / p99", "writers", ms)
    line(
        f"{results['writers']} jobs: refused as conflicts",
        "writers",
        lambda r: "n/a" if r["refused"] is None else f"{r['refused']} {r.get('refused_kinds') or ''}",
    )
    line(f"{results['writers']} jobs: lost / doubled", "writers", lambda r: f"{r['lost']} / {r['doubled']}")
    return "\n".join(["| | coordinator (REST, PostgreSQL) | filesystem catalog |", "|---|---|---|", *rows])


def ok(side: dict[str, Any]) -> bool:
    return all(
        "error" not in r and r["lost"] == 0 and r["doubled"] == 0 and r["foreign"] == 0 for r in side.values()
    )


def main(argv: Sequence[str]) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(prog="bench/run.py --flink", description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=RATE, help=f"rows/s of the single job ({RATE})")
    parser.add_argument("--seconds", type=int, default=SECONDS, help=f"its input's duration ({SECONDS})")
    parser.add_argument("--writers", type=int, default=WRITERS, help=f"jobs on one table ({WRITERS})")
    parser.add_argument("--writer-rate", type=int, default=WRITER_RATE, help=f"rows/s each ({WRITER_RATE})")
    parser.add_argument(
        "--writer-seconds",
        type=int,
        default=WRITER_SECONDS,
        help=f"their input's duration ({WRITER_SECONDS})",
    )
    args = parser.parse_args(argv)
    if min(args.rate, args.seconds, args.writers, args.writer_rate, args.writer_seconds) < 1:
        parser.error("every count: at least 1")
    started = time.perf_counter()
    results: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": ["bench/run.py", "--flink", *argv],
        "environment": environment(),
        "load_average_start": os.getloadavg(),
        "rate": args.rate,
        "seconds": args.seconds,
        "writers": args.writers,
        "writer_rate": args.writer_rate,
        "writer_seconds": args.writer_seconds,
        "sides": {},
    }
    with tempfile.TemporaryDirectory(prefix="coordinator-flink-") as tmp:
        root = Path(tmp)
        progress("coordinator: Paimon's REST catalog at `coordinator serve` on PostgreSQL")
        with postgres_database() as url:
            warehouse = root / "coordinator-warehouse"
            warehouse.mkdir()
            with CoordinatorProcess(url, warehouse, root / "coordinator.log") as service:
                side = Catalog("coordinator", catalog_sql(service.url), warehouse, service.url)
                results["sides"]["coordinator"] = run_side(side, root / "coordinator", args)
        progress("filesystem: Paimon's filesystem catalog on a local warehouse")
        warehouse = root / "filesystem-warehouse"
        side = Catalog("filesystem", filesystem_sql(warehouse), warehouse)
        results["sides"]["filesystem"] = run_side(side, root / "filesystem", args)
    results["elapsed_s"] = time.perf_counter() - started
    print(report(results))
    progress(f"results: {save(results, 'flink-')} ({results['elapsed_s']:.0f} s)")
    good = all(ok(side) for side in results["sides"].values())
    print(json.dumps({"ok": good}))
    return 0 if good else 1
