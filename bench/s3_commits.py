"""The coordinator beside pypaimon's own commit on an S3 store, measured in the same run (issue 15).

usage: python bench/s3_commits.py [--commits 100] [--writers 8] [--per-writer 20] [--runs 1]
                                  [--database sqlite|postgres] [--quick]
   or: python bench/run.py --s3 [the same options]

SeaweedFS (`weed mini`, tests/support/seaweed.py) serves one bucket on loopback. The coordinator runs as a
real `coordinator serve` process on the warehouse `s3://bucket/coordinator` (the endpoint comes from
AWS_ENDPOINT_URL, as a deployment would set it); pypaimon's own catalog uses `s3://bucket/pypaimon`.
The method is that of shared/docs/object-storage.md, sections 3 and 4:

1. Latency: --commits commits of one 10-row file each. A coordinator POST and pypaimon's
   new_batch_write_builder -> write_arrow -> prepare_commit -> commit alternate in one loop (which side
   goes first alternates too), on a table each. The clock is around the commit call alone: the POST,
   or `commit()`. The bench uploads the coordinator's data file itself at the path of Paimon's layout
   (the service checks that it exists with the declared size before committing); that upload, like
   pypaimon's write_arrow + prepare_commit, is timed apart.
2. The premise: --writers processes x --per-writer commits into one table, released together, each
   commit adding 10 rows with unique ids; once with pypaimon's own commit and once through the
   coordinator, each on a table of its own. A commit is LOST when its writer was told it succeeded but
   its rows are missing from a pypaimon read afterwards; the snapshot files are walked too, for
   commits that kept their rows but not their snapshot. Durable commits/s counts only the commits
   whose rows are in the table.

Prints the figures beside pypaimon's (ratio > 1 favours the coordinator) and writes every raw number to
bench/results/s3-<timestamp>.json. See bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: bench/ is on sys.path, the repository root not yet
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.run import importable

    importable()

from bench.coordinator_bench import (
    claimed_snapshots,
    commit_body,
    create_table,
    created,
    new_client,
    timed_post,
)
from bench.coordinator_bench import writer as coordinator_writer
from bench.data import (
    DATABASE,
    ROWS_PER_FILE,
    acknowledged_ids,
    partition_of,
    rows,
)
from bench.procs import exit_on_sigterm, launch_together, progress
from bench.pypaimon_bench import arrow
from bench.pypaimon_bench import catalog as pypaimon_catalog
from bench.pypaimon_bench import catalog_options as pypaimon_catalog_options
from bench.pypaimon_bench import create_table as create_pypaimon_table
from bench.pypaimon_bench import writer as pypaimon_writer
from bench.report import Row, _phases, grid, render
from bench.service import CoordinatorProcess, postgres_database, sqlite_url
from bench.stats import median_phases, summarize
from bench.suite import busy_warning, environment, revision, revision_text, save
from bench.verify import read_ids, verify_contention
from tests.support.seaweed import BUCKET, SeaweedFS

COORDINATOR_PREFIX = "coordinator"
PYPAIMON_PREFIX = "pypaimon"
LATENCY_TARGET = 2.0
"""Issue 15: the coordinator's 1-file commit p50 at most half of pypaimon's."""
THROUGHPUT_TARGET = 3.0
"""Issue 15: at least 3x pypaimon's durable commits/s, with 0 lost."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/s3_commits.py", description="The coordinator beside pypaimon's own commit on S3."
    )
    parser.add_argument("--commits", type=int, default=100, help="alternated 1-file commits (default 100)")
    parser.add_argument("--writers", type=int, default=8, help="writer processes of the premise (default 8)")
    parser.add_argument("--per-writer", type=int, default=20, help="commits per writer (default 20)")
    parser.add_argument(
        "--runs", type=int, default=1, help="premise runs per side, their order alternating (default 1)"
    )
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--quick", action="store_true", help="20 commits and 8 x 5: checks the bench works")
    args = parser.parse_args(argv)
    if args.quick:
        args.commits, args.per_writer = 20, 5
    if min(args.commits, args.writers, args.per_writer, args.runs) < 1:
        parser.error("--commits, --writers, --per-writer and --runs must be >= 1")
    return args


# ---------------------------------------------------------------- the two sides' tables


def catalog_options(endpoint: str, prefix: str) -> dict[str, str]:
    """pypaimon's filesystem catalog on a folder of the bucket."""
    return pypaimon_catalog_options(f"s3://{BUCKET}/{prefix}", endpoint)


# ---------------------------------------------------------------- 1. alternated 1-file commits


def latency(url: str, endpoint: str, commits: int) -> dict[str, Any]:
    """`commits` 1-file commits on each side, alternated in one loop; both tables are read back."""
    options = catalog_options(endpoint, PYPAIMON_PREFIX)
    paimon = create_pypaimon_table(pypaimon_catalog(options), "latency")
    user = f"bench-s3-{uuid.uuid4().hex[:8]}"
    coordinator_records: list[dict[str, Any]] = []
    pypaimon_records: list[dict[str, Any]] = []
    with new_client(url) as client:
        table, _ = create_table(client, "latency")

        def coordinator_commit(i: int, batch: list[dict[str, Any]]) -> None:
            started = time.perf_counter()
            message = table.message(batch[0], newFiles=[table.append_file(batch)])
            body = commit_body(user, i, [message])
            written = time.perf_counter()
            seconds, response = timed_post(client, table.id, body)
            coordinator_records.append(
                {
                    "write_ms": (written - started) * 1000,
                    "commit_ms": seconds * 1000,
                    "timings": created(response)["timings"],
                }
            )

        def pypaimon_commit(i: int, batch: list[dict[str, Any]]) -> None:
            started = time.perf_counter()
            builder = paimon.new_batch_write_builder()
            write = builder.new_write()
            write.write_arrow(arrow(batch))
            messages = write.prepare_commit()
            write.close()
            commit = builder.new_commit()
            written = time.perf_counter()
            commit.commit(messages)
            committed = time.perf_counter()
            commit.close()
            pypaimon_records.append(
                {"write_ms": (written - started) * 1000, "commit_ms": (committed - written) * 1000}
            )

        client.get("/health")  # open the keep-alive connection before the first timed POST
        for i in range(1, commits + 1):
            batch = rows(partition_of(i), i * ROWS_PER_FILE)
            # Which side goes first alternates, so neither always follows the other's S3 traffic.
            order = (coordinator_commit, pypaimon_commit) if i % 2 else (pypaimon_commit, coordinator_commit)
            for side in order:
                side(i, batch)
            if i % 25 == 0:
                progress(f"latency: {i}/{commits} commits on each side")
    expected = {i * ROWS_PER_FILE + j for i in range(1, commits + 1) for j in range(ROWS_PER_FILE)}
    read = {
        "coordinator": read_ids(catalog_options(endpoint, COORDINATOR_PREFIX), table.id),
        "pypaimon": read_ids(options, f"{DATABASE}.latency"),
    }
    for name, ids in read.items():
        if sorted(ids) != sorted(expected):
            raise RuntimeError(
                f"latency: pypaimon reads {len(ids)} rows of the {name} table, not {len(expected)}"
            )
    return {
        "commits": commits,
        "rows_read": {name: len(ids) for name, ids in read.items()},
        "coordinator": side_summary(coordinator_records),
        "pypaimon": side_summary(pypaimon_records),
        "server_phase_median_ms": median_phases([r["timings"] for r in coordinator_records]),
        "records": {"coordinator": coordinator_records, "pypaimon": pypaimon_records},
    }


def side_summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    half = len(records) // 2
    return {
        "commit_ms": summarize([r["commit_ms"] for r in records]),
        "write_ms": summarize([r["write_ms"] for r in records]),
        # Drift: does a side slow down as its table grows?
        "commit_p50_first_half_ms": summarize([r["commit_ms"] for r in records[:half]]).get("p50"),
        "commit_p50_second_half_ms": summarize([r["commit_ms"] for r in records[half:]]).get("p50"),
    }


# ---------------------------------------------------------------- 2. the premise: N writers, one table


def premise_pypaimon(endpoint: str, writers: int, per_writer: int, run: int) -> dict[str, Any]:
    """`writers` processes x `per_writer` commits with pypaimon's own commit into one fresh table."""
    options = catalog_options(endpoint, PYPAIMON_PREFIX)
    name = f"contend_{run}"
    table = create_pypaimon_table(pypaimon_catalog(options), name)
    jobs = [{"writer": k, "commits": per_writer, "catalog": options, "table": name} for k in range(writers)]
    released, reports = launch_together(pypaimon_writer, jobs)
    result = premise_result("pypaimon", released, reports, per_writer, run)
    acknowledged = result.pop("acknowledged")
    result["verify"] = verify_contention(
        options, f"{DATABASE}.{name}", table.table_path, acknowledged, rows_only=True
    )
    records = result["records"]
    result["retries"] = sum(c["retries"] for c in records)
    result["max_retries_one_commit"] = max((c["retries"] for c in records), default=0)
    return finish(result)


def premise_coordinator(url: str, endpoint: str, writers: int, per_writer: int, run: int) -> dict[str, Any]:
    """`writers` processes x `per_writer` commits through the coordinator into one fresh table."""
    name = f"contend_{run}"
    with new_client(url) as client:
        table, answer = create_table(client, name)
    jobs = [{"writer": k, "commits": per_writer, "url": url, "table": answer} for k in range(writers)]
    released, reports = launch_together(coordinator_writer, jobs)
    result = premise_result("coordinator", released, reports, per_writer, run)
    options = catalog_options(endpoint, COORDINATOR_PREFIX)
    acknowledged = result.pop("acknowledged")
    claimed = claimed_snapshots(reports)
    result["verify"] = verify_contention(
        options, table.id, table.location, acknowledged, claimed, rows_only=True
    )
    records = result["records"]
    result["resends"] = sum(c["resends"] for c in records)
    result["server_phase_median_ms"] = median_phases([c["timings"] for c in records])
    result["group_size_mean"] = statistics.fmean(c["group_size"] for c in records) if records else 0.0
    return finish(result)


def premise_result(
    side: str, released: float, reports: list[dict[str, Any]], per_writer: int, run: int
) -> dict[str, Any]:
    """What both sides report alike; `acknowledged` is taken out again once verified."""
    records = [{"writer": r["writer"], **c} for r in reports for c in r["records"]]
    failures = [f for r in reports for f in r["failures"]]
    return {
        "side": side,
        "run": run,
        "writers": len(reports),
        "commits_per_writer": per_writer,
        "wall_s": max(r["finished"] for r in reports) - released,
        "ok": len(records),
        "failed": len(failures),
        "failure_samples": failures[:3],
        "commit_ms": summarize([c["commit_ms"] for c in records]),
        "write_ms": summarize([c["write_ms"] for c in records]),
        "per_writer_s": sorted(r["finished"] - r["began"] for r in reports),
        "acknowledged": acknowledged_ids(reports, per_writer),
        "records": records,
    }


def finish(result: dict[str, Any]) -> dict[str, Any]:
    """The rates: OK/s counts what writers were told, durable/s only what is in the table."""
    result["lost"] = result["verify"]["lost"]
    result["durable"] = result["ok"] - result["lost"]
    result["ok_per_s"] = result["ok"] / result["wall_s"]
    result["durable_per_s"] = result["durable"] / result["wall_s"]
    return result


# ---------------------------------------------------------------- the run


def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """SeaweedFS, then the coordinator on it, then the latency loop and the premise runs."""
    results: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": [sys.executable, *sys.argv],
        "args": dict(vars(args)),
        "environment": {**environment(), "seaweedfs": seaweed_version()},
        "load_average_start": os.getloadavg(),
    }
    with ExitStack() as stack:
        store = SeaweedFS(root / "weed" / "data")
        store.start()
        stack.callback(store.stop)
        progress(f"SeaweedFS on {store.endpoint}")
        url = sqlite_url(root) if args.database == "sqlite" else stack.enter_context(postgres_database())
        warehouse = f"s3://{BUCKET}/{COORDINATOR_PREFIX}"
        service = stack.enter_context(CoordinatorProcess(url, warehouse, root / "service.log"))
        results["revision"] = revision()
        results["warehouse"] = warehouse
        progress(f"latency: {args.commits} 1-file commits on each side, alternated")
        results["latency"] = latency(service.url, store.endpoint, args.commits)
        results["premise"] = {"pypaimon": [], "coordinator": []}
        shape = f"{args.writers} x {args.per_writer}"
        for number in range(1, args.runs + 1):
            # Back to back, not at once (two cores); the order alternates between runs.
            for side in ("pypaimon", "coordinator") if number % 2 else ("coordinator", "pypaimon"):
                progress(f"premise run {number}/{args.runs}: {shape} commits, {side}")
                if side == "pypaimon":
                    measured = premise_pypaimon(store.endpoint, args.writers, args.per_writer, number)
                else:
                    measured = premise_coordinator(
                        service.url, store.endpoint, args.writers, args.per_writer, number
                    )
                results["premise"][side].append(measured)
    results["load_average_end"] = os.getloadavg()
    return results


def seaweed_version() -> str:
    weed = shutil.which("weed") or str(Path(sys.executable).parent / "weed")
    done = subprocess.run([weed, "version"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"


# ---------------------------------------------------------------- the printed figures


def summary_rows(results: dict[str, Any]) -> list[Row]:
    """Issue 15's figures; a ratio > 1 favours the coordinator, targets are relative to pypaimon's value."""
    lat = results["latency"]
    c_ms, p_ms = lat["coordinator"]["commit_ms"], lat["pypaimon"]["commit_ms"]
    coordinator, pypaimon = results["premise"]["coordinator"], results["premise"]["pypaimon"]
    runs = len(coordinator)
    shape = f"{coordinator[0]['writers']} writers x {coordinator[0]['commits_per_writer']}"
    over = f"median of {runs} runs" if runs > 1 else "1 run"
    total = f"sum of {runs} runs" if runs > 1 else "1 run"

    def median(side: list[dict[str, Any]], key: str) -> float:
        return float(statistics.median(r[key] for r in side))

    def total_of(side: list[dict[str, Any]], key: str) -> float:
        return float(sum(r[key] for r in side))

    p_durable = median(pypaimon, "durable_per_s")
    return [
        Row(
            f"1-file commit p50 ({lat['commits']} alternated)",
            c_ms["p50"],
            p_ms["p50"],
            "ms",
            True,
            f"<= 1/{LATENCY_TARGET:g} of pypaimon's",
            lambda v: v <= p_ms["p50"] / LATENCY_TARGET,
        ),
        Row(f"1-file commit p90 ({lat['commits']} alternated)", c_ms["p90"], p_ms["p90"], "ms", True),
        Row(
            f"{shape}: reported-OK commits/s ({over})",
            median(coordinator, "ok_per_s"),
            median(pypaimon, "ok_per_s"),
            "commits/s",
            False,
        ),
        Row(
            f"{shape}: durable commits/s ({over})",
            median(coordinator, "durable_per_s"),
            p_durable,
            "commits/s",
            False,
            f">= {THROUGHPUT_TARGET:g}x pypaimon's",
            lambda v: v >= THROUGHPUT_TARGET * p_durable,
        ),
        Row(
            f"{shape}: lost commits ({total})",
            total_of(coordinator, "lost"),
            total_of(pypaimon, "lost"),
            "commits",
            True,
            "0",
            lambda v: v == 0,
        ),
        Row(
            f"{shape}: failed commits ({total})",
            total_of(coordinator, "failed"),
            total_of(pypaimon, "failed"),
            "commits",
            True,
        ),
    ]


def premise_table(results: dict[str, Any]) -> str:
    """One line per side and run: the counts of shared/docs/object-storage.md section 4."""
    header = (
        "side", "run", "reported OK", "failed", "LOST", "rows read / rows of OK commits", "snapshot files",
        "OK but in no snapshot file", "wall s", "OK/s", "durable/s", "commit p50 / p90 ms",
    )  # fmt: skip
    lines: list[tuple[str, ...]] = []
    for side in ("pypaimon", "coordinator"):
        for r in results["premise"][side]:
            v = r["verify"]
            lines.append(
                (
                    side, str(r["run"]), str(r["ok"]), str(r["failed"]), str(r["lost"]),
                    f"{v['rows_read']} / {v['rows_expected']}", str(v["snapshot_files"]),
                    str(v["not_in_a_snapshot_file"]),
                    f"{r['wall_s']:.1f}",
                    f"{r['ok_per_s']:.2f}", f"{r['durable_per_s']:.2f}",
                    f"{r['commit_ms']['p50']:.0f} / {r['commit_ms']['p90']:.0f}",
                )
            )  # fmt: skip
    return grid(header, lines)


def details(results: dict[str, Any]) -> str:
    """Where the time goes, and what each side's writers went through."""
    lat = results["latency"]
    c, p = lat["coordinator"], lat["pypaimon"]
    phases = lat["server_phase_median_ms"]
    lines = [
        "where the time goes (medians, ms):",
        f"  latency, coordinator: data file upload p50 {c['write_ms']['p50']:.1f}; POST p50 "
        f"{c['commit_ms']['p50']:.1f} (first half {c['commit_p50_first_half_ms']:.1f}, second half "
        f"{c['commit_p50_second_half_ms']:.1f}); {_phases(phases)}; "
        f"HTTP+JSON ~{c['commit_ms']['p50'] - phases.get('total', 0.0):.1f}",
        f"  latency, pypaimon: write_arrow + prepare_commit p50 {p['write_ms']['p50']:.1f}; commit() p50 "
        f"{p['commit_ms']['p50']:.1f} (first half {p['commit_p50_first_half_ms']:.1f}, second half "
        f"{p['commit_p50_second_half_ms']:.1f})",
        f"  pypaimon read back {lat['rows_read']['coordinator']} rows of the coordinator's table and "
        f"{lat['rows_read']['pypaimon']} of its own, all ids as committed",
    ]
    for r in results["premise"]["coordinator"]:
        lines.append(
            f"  premise run {r['run']}, coordinator: upload p50 {r['write_ms']['p50']:.1f}; "
            f"{_phases(r['server_phase_median_ms'])}; mean group {r['group_size_mean']:.1f} commits; "
            f"resends {r['resends']}; wrong snapshot claims {r['verify']['wrong_snapshot_claims']}"
        )
    for r in results["premise"]["pypaimon"]:
        samples = "; ".join(f["error"][:120] for f in r["failure_samples"][:1])
        lines.append(
            f"  premise run {r['run']}, pypaimon: write p50 {r['write_ms']['p50']:.1f}; retries "
            f"{r['retries']} (max {r['max_retries_one_commit']} in one commit); duplicate rows "
            f"{r['verify']['duplicate_rows']}" + (f"; e.g. {samples}" if samples else "")
        )
    return "\n".join(lines)


def report(results: dict[str, Any]) -> str:
    env = results["environment"]
    rev = results["revision"]
    # `weed version` prints "version 8000GB 4.48 pypi linux amd64" (8000GB: the volume size limit).
    weed = next((w for w in env["seaweedfs"].split() if w[:1].isdigit() and "." in w), env["seaweedfs"])
    premise = results["premise"]
    ratio = _ratio(
        statistics.median(r["durable_per_s"] for r in premise["coordinator"]),
        statistics.median(r["durable_per_s"] for r in premise["pypaimon"]),
    )
    parts = [
        f"S3 store: SeaweedFS {weed} on loopback; coordinator at {revision_text(rev)} on "
        f"{results['args']['database']}; pypaimon {env['versions']['pypaimon']} measured in this run; "
        f"{env['cpus']} CPUs. ratio > 1 favours the coordinator.",
        *busy_warning(results),
        "",
    ]
    parts += [
        render("coordinator vs pypaimon's own commit, on S3", summary_rows(results)),
        "",
        f"the premise: {premise['coordinator'][0]['writers']} processes x "
        f"{premise['coordinator'][0]['commits_per_writer']} commits into one table, released together",
        premise_table(results),
        f"coordinator durable/s / pypaimon durable/s: {ratio}",
        "",
        details(results),
    ]
    return "\n".join(parts)


def _ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}x" if theirs else "— (pypaimon made no durable commit)"


def main(argv: Sequence[str] | None = None) -> int:
    # SIGTERM (a CI timeout, `kill`): still stop SeaweedFS and the service, and reap the writers.
    exit_on_sigterm()
    args = parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="coordinator-s3-bench-") as tmp:
        results = run(args, Path(tmp))
    results["elapsed_s"] = time.perf_counter() - started
    text = report(results)
    path = save(results, "s3-")
    print(text)
    print(f"\nraw numbers: {path}  (total {results['elapsed_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
