"""One load, driven through any pypaimon catalog: Paimon's REST catalog on the coordinator, or pypaimon's
own filesystem catalog. Both sides are the same unmodified pypaimon 2.1.0 code; only the catalog options
differ, so what differs in the figures is how a commit is decided (a POST to the catalog server, or a
snapshot file created on storage by the writer).

1. Latency: one-file batch commits, the sides taking turns in one loop (who goes first rotates).
   Per commit `new_batch_write_builder` -> `write_arrow` -> `prepare_commit` (untimed), then the clock
   around `commit(messages)` alone, split into its steps (`time_commit_steps`). Both tables are read
   back at the end.
2. Contention: N spawned writer processes (bench/pypaimon_bench.py's `writer`: own catalog, own commit
   user, StreamWriteBuilder, write + prepare + commit per commit) released together into one fresh
   table, then bench/verify.py's check on the snapshot files and a read of the rows.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.data import DATABASE, ROWS_PER_FILE, acknowledged_ids, partition_of, rows
from bench.procs import launch_together, progress
from bench.pypaimon_bench import arrow, catalog, count_retries, create_table
from bench.pypaimon_bench import writer as pypaimon_writer
from bench.stats import summarize, window
from bench.verify import read_ids, verify_contention

REST = "rest"
FILESYSTEM = "filesystem"
GAVE_UP = re.compile(r"^\w+\('Commit failed \d+ after \d+ millis with \d+ retries")
"""pypaimon's message when a commit ran out of `commit.max-retries`; any other raise is counted apart."""


@dataclass(frozen=True)
class Side:
    """One way of committing: a name for the report, and the pypaimon catalog options that select it."""

    name: str
    kind: str
    """REST or FILESYSTEM."""
    options: Mapping[str, str]
    table_options: Mapping[str, str] = field(default_factory=dict)
    """Options of the tables the side creates (the coordinator's `coordinator.rebase-appends`)."""
    suffix: str = ""
    """Ends the names of its tables: two sides may share one coordinator."""

    def table(self, name: str) -> str:
        return f"{name}{self.suffix}"


def rest_options(url: str) -> dict[str, str]:
    """All a REST client is given (issue 16): the coordinator's URI, its catalog name and a bearer token.
    On S3 the store's endpoint and credentials come from the coordinator (`data-token.enabled`)."""
    return {
        "metastore": "rest",
        "uri": url,
        "warehouse": "paimon",
        "token.provider": "bear",
        "token": "bench",
    }


# ---------------------------------------------------------------- 1. alternated 1-file commits

STEPS = ("head", "publish")
"""Where a commit() call's time goes, besides pypaimon's own work (manifests, manifest lists, its
conflict checks): `head` reads the latest snapshot (REST: GET .../snapshot; filesystem: the LATEST hint
and the snapshot file), `publish` decides the snapshot (REST: POST .../commit, the coordinator's whole
decision; filesystem: the existence check and the temp file renamed onto snapshot-N)."""

_steps: dict[str, float] = {}


def time_commit_steps() -> dict[str, float]:
    """Wrap pypaimon's two commit steps once per process; returns their running totals in ms."""
    if _steps:
        return _steps
    from pypaimon.snapshot.catalog_snapshot_commit import CatalogSnapshotCommit
    from pypaimon.snapshot.renaming_snapshot_commit import RenamingSnapshotCommit
    from pypaimon.snapshot.snapshot_manager import SnapshotManager

    _steps.update(dict.fromkeys(STEPS, 0.0))

    def timed(cls: Any, method: str, step: str) -> None:
        original = getattr(cls, method)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                _steps[step] += (time.perf_counter() - started) * 1000

        setattr(cls, method, wrapper)

    timed(SnapshotManager, "get_latest_snapshot", "head")
    timed(CatalogSnapshotCommit, "commit", "publish")
    timed(RenamingSnapshotCommit, "commit", "publish")
    return _steps


def latency(sides: Sequence[Side], commits: int, windows: Mapping[str, tuple[int, int]]) -> dict[str, Any]:
    """`commits` one-file batch commits per side, alternated; p50/p99 per window, and the read-back."""
    tables = {
        side.name: create_table(catalog(side.options), side.table("latency"), side.table_options)
        for side in sides
    }
    records: dict[str, list[dict[str, Any]]] = {side.name: [] for side in sides}
    retries, steps = count_retries(), time_commit_steps()
    for i in range(1, commits + 1):
        batch = rows(partition_of(i), i * ROWS_PER_FILE)
        # Rotate who goes first, so that no side always follows another's storage traffic.
        shift = (i - 1) % len(sides)
        for side in [*sides[shift:], *sides[:shift]]:
            records[side.name].append(_one_commit(tables[side.name], batch, i, retries, steps))
        if i % 50 == 0:
            progress(f"latency: {i}/{commits} commits on each side")
    expected = {i * ROWS_PER_FILE + j for i in range(1, commits + 1) for j in range(ROWS_PER_FILE)}
    out: dict[str, Any] = {"commits": commits}
    for side in sides:
        ids = read_ids(side.options, f"{DATABASE}.latency")
        out[side.name] = _latency_summary(records[side.name], windows, ids, expected)
    return out


def _one_commit(
    table: Any, batch: list[dict[str, Any]], i: int, retries: list[int], steps: dict[str, float]
) -> dict[str, Any]:
    """Write one file (untimed), then commit it (timed); a commit that raises is recorded, not hidden."""
    started = time.perf_counter()
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(arrow(batch))
    messages = write.prepare_commit()
    write.close()
    commit = builder.new_commit()
    before, steps_before = retries[0], dict(steps)
    written = time.perf_counter()
    try:
        commit.commit(messages)
    except Exception as error:
        return {
            "commit": i,
            "failed": repr(error)[:500],
            "cause": repr(error.__cause__)[:500],
            "retries": retries[0] - before,
        }
    finally:
        committed = time.perf_counter()
        commit.close()
    return {
        "commit": i,
        "write_ms": (written - started) * 1000,
        "commit_ms": (committed - written) * 1000,
        "retries": retries[0] - before,
        **{f"{step}_ms": steps[step] - steps_before[step] for step in STEPS},
    }


def _latency_summary(
    records: list[dict[str, Any]],
    windows: Mapping[str, tuple[int, int]],
    ids: list[int],
    expected: set[int],
) -> dict[str, Any]:
    """Per window, the commit-call percentiles; a failed commit has no latency and is counted apart."""
    read = set(ids)
    return {
        "windows": {
            name: {
                "commits": [first, last],
                "commit_ms": summarize(
                    [r["commit_ms"] for r in window(records, first, last) if "commit_ms" in r]
                ),
            }
            for name, (first, last) in windows.items()
        },
        "commit_ms": summarize([r["commit_ms"] for r in records if "commit_ms" in r]),
        "write_ms": summarize([r["write_ms"] for r in records if "write_ms" in r]),
        "step_p50_ms": {
            step: summarize([r[f"{step}_ms"] for r in records if "commit_ms" in r]).get("p50", 0.0)
            for step in STEPS
        },
        **failure_counts([{"error": r["failed"], **r} for r in records if "failed" in r]),
        "retries": sum(r["retries"] for r in records),
        "rows_read": len(ids),
        "rows_missing": len(expected - read),
        "duplicate_rows": len(ids) - len(read),
        "records": records,
    }


# ---------------------------------------------------------------- 2. N writers, one table


def contention(side: Side, writers: int, per_writer: int, run: int) -> dict[str, Any]:
    """`writers` processes x `per_writer` commits into one fresh table of `side`, released together."""
    name = side.table(f"contend_{run}")
    table = create_table(catalog(side.options), name, side.table_options)
    jobs = [
        {"writer": k, "commits": per_writer, "catalog": dict(side.options), "table": name}
        for k in range(writers)
    ]
    released, reports = launch_together(pypaimon_writer, jobs)
    records = [{"writer": r["writer"], **c} for r in reports for c in r["records"]]
    failures = [f for r in reports for f in r["failures"]]
    wall = max(r["finished"] for r in reports) - released
    # Lost: acknowledged, but its (commitUser, commitIdentifier) is in no snapshot file or a row is
    # missing from pypaimon's read (through the side's own catalog).
    check = verify_contention(
        side.options, f"{DATABASE}.{name}", table.table_path, acknowledged_ids(reports, per_writer)
    )
    ok, lost = len(records), check["lost"]
    return {
        "side": side.name,
        "run": run,
        "writers": writers,
        "commits_per_writer": per_writer,
        "location": table.table_path,
        "wall_s": wall,
        "ok": ok,
        **failure_counts(failures),
        "lost": lost,
        "ok_per_s": ok / wall,
        "durable_per_s": (ok - lost) / wall,
        "retries": sum(c["retries"] for c in records),
        "max_retries_one_commit": max((c["retries"] for c in records), default=0),
        # The commit call alone; the data file's write_arrow + prepare_commit is write_ms.
        "commit_ms": summarize([c["commit_ms"] for c in records]),
        "write_ms": summarize([c["write_ms"] for c in records]),
        "per_writer_s": sorted(r["finished"] - r["began"] for r in reports),
        "verify": check,
        "records": records,
    }


def failure_counts(failures: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Commits whose `commit()` raised: all of them, those that ran out of retries, samples of each."""
    gave_up = [f for f in failures if GAVE_UP.match(f["error"])]
    other = [f for f in failures if not GAVE_UP.match(f["error"])]
    return {
        "failed": len(failures),
        "failed_gave_up": len(gave_up),
        "failed_other": len(other),
        "failure_samples": gave_up[:2] + other[:2],
    }
