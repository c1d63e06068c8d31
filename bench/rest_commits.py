"""pypaimon committing through the coordinator's Paimon REST catalog beside pypaimon's own filesystem
commit, same run, on local disk and on S3 (issue 16).

usage: python bench/run.py --rest [--s3 | --stores local,s3] [--databases sqlite,postgres] [--quick]
                                  [--commits 300] [--window 20] [--writers 8] [--per-writer 25] [--runs 1]
   or: python bench/rest_commits.py [the same options]

For each store, the coordinator runs as a real `coordinator serve` subprocess per database (a fresh
SQLite file, or a fresh PostgreSQL database) on a fresh warehouse (a local folder, or `s3://bucket/...`
on SeaweedFS). pypaimon's REST catalog is given the coordinator's URI, catalog name and a token only;
pypaimon's filesystem catalog gets a warehouse of its own on the same store (plus, on S3, its
endpoint and credentials). The load is bench/catalog_load.py's: alternated 1-file commits, then
--writers processes x --per-writer commits into one table per side.

Prints one table per store and database (ratio: filesystem / REST for latencies, REST / filesystem for
rates, so above 1 favours the REST catalog) and writes every raw number to
bench/results/rest-<timestamp>.json. See bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

if not __package__:  # run as a script: bench/ is on sys.path, the repository root not yet
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.run import importable

    importable()

from bench.catalog_load import FILESYSTEM, REST, Side, contention, latency, rest_options
from bench.data import DATABASE
from bench.procs import exit_on_sigterm, progress
from bench.pypaimon_bench import catalog_options
from bench.rest_report import report
from bench.service import CoordinatorProcess, postgres_database, sqlite_url
from bench.stats import median_phases
from bench.suite import environment, revision, save
from tests.support.seaweed import BUCKET, SeaweedFS

STORES = ("local", "s3")
DATABASES = ("sqlite", "postgres")
HISTORY_LIMIT = 1000
"""The native history's largest page."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/run.py --rest",
        description="pypaimon through the coordinator's REST catalog vs pypaimon's own filesystem commit.",
    )
    parser.add_argument(
        "--stores", default=",".join(STORES), help="comma-separated: local, s3 (default both)"
    )
    parser.add_argument("--s3", action="store_true", help="the S3 store only (same as --stores s3)")
    parser.add_argument(
        "--databases", default="sqlite", help="comma-separated: sqlite, postgres (default sqlite)"
    )
    parser.add_argument("--commits", type=int, default=300, help="1-file commits per side (default 300)")
    parser.add_argument("--window", type=int, default=20, help="commits in the fresh and after windows (20)")
    parser.add_argument("--writers", type=int, default=8, help="writer processes (default 8)")
    parser.add_argument("--per-writer", type=int, default=25, help="commits per writer (default 25)")
    parser.add_argument("--runs", type=int, default=1, help="contention runs per side (default 1)")
    parser.add_argument("--quick", action="store_true", help="30 commits, windows of 10, 8 x 5: a smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.commits, args.window, args.per_writer = 30, 10, 5
    args.stores = ["s3"] if args.s3 else _choices(parser, "--stores", args.stores, STORES)
    args.databases = _choices(parser, "--databases", args.databases, DATABASES)
    if min(args.commits, args.window, args.writers, args.per_writer, args.runs) < 1:
        parser.error("--commits, --window, --writers, --per-writer and --runs must be >= 1")
    if args.window > args.commits:
        parser.error("--window must be <= --commits")
    return args


def _choices(parser: argparse.ArgumentParser, flag: str, value: str, allowed: Sequence[str]) -> list[str]:
    chosen = [v.strip() for v in value.split(",") if v.strip()]
    if not chosen or set(chosen) - set(allowed):
        parser.error(f"{flag}: comma-separated, of {', '.join(allowed)}")
    return chosen


def windows(args: argparse.Namespace) -> dict[str, tuple[int, int]]:
    """The first commits of a fresh table, and the last ones of the sequence."""
    return {"fresh": (1, args.window), "after": (args.commits - args.window + 1, args.commits)}


def measure_store(store: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Start what the store needs, one coordinator per database, then the load on every side."""
    root.mkdir(parents=True)
    with ExitStack() as stack:
        endpoint = None
        if store == "s3":
            seaweed = SeaweedFS(root / "weed" / "data")
            seaweed.start()  # sets AWS_* (AWS_ENDPOINT_URL too): the services below inherit them
            stack.callback(seaweed.stop)
            endpoint = seaweed.endpoint
            progress(f"SeaweedFS on {endpoint}")
        sides = [Side(FILESYSTEM, FILESYSTEM, _filesystem_options(store, root, endpoint))]
        revisions: dict[str, Any] = {}
        for database in args.databases:
            warehouse: Path | str
            if store == "s3":
                warehouse = f"s3://{BUCKET}/coordinator-{database}"
            else:
                warehouse = root / f"coordinator-{database}"
                warehouse.mkdir()
            if database == "sqlite":
                (root / database).mkdir()
                url = sqlite_url(root / database)
            else:
                url = stack.enter_context(postgres_database())
            service = stack.enter_context(
                CoordinatorProcess(url, warehouse, root / f"service-{database}.log")
            )
            revisions[database] = revision()
            sides.append(Side(f"{REST} on {database}", REST, rest_options(service.url)))
            # The same coordinator, tables that ask it to rebase appends whose base moved.
            rebased = {"coordinator.rebase-appends": "true"}
            sides.append(
                Side(f"{REST} rebased on {database}", REST, rest_options(service.url), rebased, "_rebased")
            )
        result: dict[str, Any] = {
            "store": store,
            "revisions": revisions,
            "sides": [s.name for s in sides],
            "kinds": {s.name: s.kind for s in sides},
        }
        progress(f"{store}: {args.commits} 1-file commits on each of {len(sides)} sides, alternated")
        result["latency"] = latency(sides, args.commits, windows(args))
        for side in sides:
            if side.kind == REST:
                result["latency"][side.name]["service"] = service_history(
                    side.options["uri"], side.table("latency")
                )
        result["contention"] = {side.name: [] for side in sides}
        shape = f"{args.writers} x {args.per_writer}"
        for number in range(1, args.runs + 1):
            # Back to back, not at once (two cores); the order turns between runs.
            shift = (number - 1) % len(sides)
            for side in [*sides[shift:], *sides[:shift]]:
                progress(f"{store}: contention run {number}/{args.runs}, {shape} commits, {side.name}")
                measured = contention(side, args.writers, args.per_writer, number)
                if side.kind == REST:
                    measured["service"] = service_history(
                        side.options["uri"], side.table(f"contend_{number}")
                    )
                result["contention"][side.name].append(measured)
    return result


def service_history(url: str, table: str) -> dict[str, Any]:
    """What the coordinator recorded of a table's commits (native API, newest HISTORY_LIMIT): how many
    POSTs it published and how many it answered `success: false`, and its phase timings (median ms) of
    the published ones, the same phases as the native commits' (bench/README.md)."""
    with httpx.Client(base_url=url, timeout=60) as client:
        response = client.get(f"/tables/{DATABASE}.{table}/commits", params={"limit": HISTORY_LIMIT})
    response.raise_for_status()
    commits = response.json()["commits"]
    committed = [c["timings"] for c in commits if c["outcome"] == "committed" and c["action"] == "commit"]
    return {
        "records": len(commits),
        "truncated": len(commits) == HISTORY_LIMIT,
        "outcomes": dict(Counter(c["outcome"] for c in commits)),
        "phase_median_ms": median_phases(committed),
    }


def _filesystem_options(store: str, root: Path, endpoint: str | None) -> dict[str, str]:
    """pypaimon's own catalog: a folder beside the coordinator's, or a folder of the same bucket."""
    if store == "s3":
        return catalog_options(f"s3://{BUCKET}/filesystem", endpoint)
    warehouse = root / "filesystem"
    warehouse.mkdir()
    return catalog_options(warehouse)


def main(argv: Sequence[str] | None = None) -> int:
    # SIGTERM (a CI timeout, `kill`): still stop SeaweedFS and the services, drop PostgreSQL databases.
    exit_on_sigterm()
    args = parse_args(argv)
    results: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": [sys.executable, *sys.argv],
        "args": dict(vars(args)),
        "environment": environment(),
        "load_average_start": os.getloadavg(),
        "stores": {},
    }
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="coordinator-rest-bench-") as tmp:
        for store in args.stores:
            results["stores"][store] = measure_store(store, args, Path(tmp) / store)
    results["elapsed_s"] = time.perf_counter() - started
    results["load_average_end"] = os.getloadavg()
    text = report(results)
    path = save(results, "rest-")
    print(text)
    print(f"\nraw numbers: {path}  (total {results['elapsed_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
