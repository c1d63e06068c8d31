"""The baseline: pypaimon 2.1.0's own filesystem commit of the same files, measured in the same run.

Reuses the method of shared/docs/pypaimon-baseline.md: StreamWriteBuilder with one reused write and commit for
the sequential commits (clock around `commit(msgs, i)` only), one `new_commit().commit(msgs)` of N one-file
messages for the big commit (writing the files not timed), and 8 spawned processes released on an Event
for contention, each doing write_arrow + prepare_commit + commit per commit.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Mapping
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.data import (
    DATABASE,
    PARTITIONS,
    ROWS_PER_FILE,
    Counts,
    acknowledged_ids,
    contention_ids,
    partition_of,
    rows,
    warm_up_parquet,
    writer_partition,
)
from bench.procs import launch_together
from bench.stats import summarize, window
from bench.verify import verify_contention

ARROW_SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def arrow(batch: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(batch, schema=ARROW_SCHEMA)


def catalog_options(warehouse: Path | str, endpoint: str | None = None) -> dict[str, str]:
    """The filesystem catalog's options: a local folder, or `s3://...` on the S3 store at `endpoint`."""
    if endpoint is None:
        return {"warehouse": str(warehouse)}
    from tests.support.seaweed import pypaimon_options

    return {"warehouse": str(warehouse), **pypaimon_options(endpoint)}


def catalog(options: Mapping[str, str]) -> Any:
    """The filesystem catalog of `catalog_options`, with the benchmark's database."""
    from pypaimon import CatalogFactory

    cat = CatalogFactory.create(dict(options))
    cat.create_database(DATABASE, True)
    return cat


def create_table(cat: Any, name: str, options: Mapping[str, str] | None = None) -> Any:
    """Partitioned by dt, bucket-unaware append table: the same shape as the coordinator's tables."""
    from pypaimon import Schema

    table_options = {"bucket": "-1", **(options or {})}
    schema = Schema.from_pyarrow_schema(ARROW_SCHEMA, partition_keys=["dt"], options=table_options)
    cat.create_table(f"{DATABASE}.{name}", schema, False)
    return cat.get_table(f"{DATABASE}.{name}")


def sequential(warehouse: Path, counts: Counts) -> dict[str, Any]:
    """One StreamTableWrite and StreamTableCommit reused; only `commit(msgs, i)` is timed."""
    table = create_table(catalog(catalog_options(warehouse)), "seq")
    builder = table.new_stream_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    latencies: list[float] = []
    try:
        for i in range(1, counts.sequential_commits + 1):
            write.write_arrow(arrow(rows(partition_of(i), i * ROWS_PER_FILE)))
            messages = write.prepare_commit(i)
            started = time.perf_counter()
            commit.commit(messages, i)
            latencies.append((time.perf_counter() - started) * 1000)
    finally:
        write.close()
        commit.close()
    return {
        "commit_ms": latencies,
        "windows": {
            name: {"commits": [first, last], "commit_ms": summarize(window(latencies, first, last))}
            for name, (first, last) in counts.windows.items()
        },
    }


def big_commit(warehouse: Path, counts: Counts) -> dict[str, Any]:
    """counts.big_files one-file CommitMessages (a fresh write per file), then one timed commit."""
    table = create_table(catalog(catalog_options(warehouse)), "big")
    builder = table.new_batch_write_builder()
    messages = []
    staged = time.perf_counter()
    for k in range(counts.big_files):
        write = builder.new_write()
        write.write_arrow(arrow(rows(PARTITIONS[k % len(PARTITIONS)], k * ROWS_PER_FILE)))
        messages.extend(write.prepare_commit())
        write.close()
    staging = time.perf_counter() - staged
    commit = builder.new_commit()
    started = time.perf_counter()
    commit.commit(messages)
    seconds = time.perf_counter() - started
    commit.close()
    return {"files": len(messages), "seconds": seconds, "staging_s": staging}


_retries: list[int] = []


def count_retries() -> list[int]:
    """Wrap FileStoreCommit._commit_retry_wait (runs once per failed attempt) to count retries.

    Returns a one-element counter shared by every commit of this process, its REST catalog's commits
    included (they retry in the same loop); a second call returns the same counter, not a second wrap.
    """
    from pypaimon.write.file_store_commit import FileStoreCommit

    if _retries:
        return _retries
    _retries.append(0)
    original = FileStoreCommit._commit_retry_wait

    def counted(self: Any, retry_count: int) -> None:
        _retries[0] += 1
        original(self, retry_count)

    FileStoreCommit._commit_retry_wait = counted
    return _retries


def writer(job: dict[str, Any], ready: Queue[int], start: Event, out: Queue[dict[str, Any]]) -> None:
    """One contention writer process: its own catalog (`job["catalog"]`, its options) and commit user,
    write + prepare + commit per commit; the commit is timed apart from the write."""
    announced = False
    try:
        # Each failed rename logs a warning; the wrapper below counts them instead.
        logging.getLogger("pypaimon").setLevel(logging.ERROR)
        retries = count_retries()
        k, n = job["writer"], job["commits"]
        table = catalog(job["catalog"]).get_table(f"{DATABASE}.{job['table']}")
        builder = table.new_stream_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        batches = [arrow(rows(writer_partition(k), contention_ids(k, j, n).start)) for j in range(1, n + 1)]
        records, failures = [], []
        warm_up_parquet()
        ready.put(k)
        announced = True
        start.wait()
        began = time.perf_counter()
        for j, batch in enumerate(batches, 1):
            before = retries[0]
            t0 = time.perf_counter()
            try:
                write.write_arrow(batch)
                messages = write.prepare_commit(j)
                t1 = time.perf_counter()
                commit.commit(messages, j)
            except (
                Exception
            ) as error:  # pypaimon raises (retries ran out, or it cannot tell): not acknowledged
                failures.append(
                    {"identifier": j, "error": repr(error)[:500], "cause": repr(error.__cause__)[:500]}
                )
                continue
            t2 = time.perf_counter()
            records.append(
                {
                    "identifier": j,
                    "write_ms": (t1 - t0) * 1000,
                    "commit_ms": (t2 - t1) * 1000,
                    "retries": retries[0] - before,
                }
            )
        finished = time.perf_counter()
        write.close()
        commit.close()
        out.put(
            {
                "writer": k,
                "commit_user": builder.commit_user,
                "began": began,
                "finished": finished,
                "records": records,
                "failures": failures,
            }
        )
    except BaseException:
        if not announced:
            ready.put(-1)
        out.put({"writer": job.get("writer", -1), "error": traceback.format_exc()})


def contention(warehouse: Path, counts: Counts, run: int) -> dict[str, Any]:
    """The baseline's `contend`: counts.writers processes x counts.commits_per_writer commits, one table."""
    name = f"contend_{run}"
    options = catalog_options(warehouse)
    table = create_table(catalog(options), name)
    jobs = [
        {"writer": k, "commits": counts.commits_per_writer, "catalog": options, "table": name}
        for k in range(counts.writers)
    ]
    released, reports = launch_together(writer, jobs)
    wall = max(r["finished"] for r in reports) - released
    acknowledged = acknowledged_ids(reports, counts.commits_per_writer)
    check = verify_contention(options, f"{DATABASE}.{name}", table.table_path, acknowledged)
    records = [{"writer": r["writer"], **c} for r in reports for c in r["records"]]
    return {
        "run": run,
        "writers": counts.writers,
        "commits_per_writer": counts.commits_per_writer,
        "wall_s": wall,
        "commits_per_s": len(acknowledged) / wall,
        "retries": sum(c["retries"] for c in records),
        "max_retries_one_commit": max((c["retries"] for c in records), default=0),
        "failed_commits": sum(len(r["failures"]) for r in reports),
        "failure_samples": [f for r in reports for f in r["failures"]][:3],
        # As in the baseline, a commit's time here includes its write_arrow + prepare_commit.
        "commit_ms": summarize([c["write_ms"] + c["commit_ms"] for c in records]),
        "per_writer_s": sorted(r["finished"] - r["began"] for r in reports),
        "verify": check,
        "commits": records,
    }


def baseline(warehouse: str, counts: Counts) -> dict[str, Any]:
    """All three pypaimon measurements (meant to run in its own process, see procs.run_isolated)."""
    from importlib.metadata import version

    root = Path(warehouse)
    return {
        "version": version("pypaimon"),
        "sequential": sequential(root / "seq", counts),
        "big_commit": big_commit(root / "big", counts),
        "contention": [
            contention(root / f"contend-{run}", counts, run) for run in range(1, counts.contention_runs + 1)
        ],
    }
