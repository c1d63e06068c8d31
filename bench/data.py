"""The benchmark's table shape and rows, shared by the coordinator and the pypaimon side.

Both sides use the schema of the pypaimon baseline (dt STRING, id BIGINT, v STRING; partitioned by dt,
bucket-unaware append table) and 10 rows per file, so the metadata each commit carries is the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DATABASE = "bench"
FIELDS = {"dt": "STRING", "id": "BIGINT", "v": "STRING"}
ROWS_PER_FILE = 10
PARTITIONS = [f"2024-01-{d:02d}" for d in range(1, 11)]


def warm_up_parquet() -> None:
    """Write one throwaway parquet file. A fresh process pays for its first parquet write (~0.2 s alone,
    ~0.8 s with eight processes starting at once on two cores); every contention writer, on both sides,
    calls this before the start signal so that the run measures commits, not pyarrow's first use."""
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as directory:
        pq.write_table(pa.Table.from_pylist(rows("2024-01-01", 0)), f"{directory}/warm-up.parquet")


def partition_of(i: int) -> str:
    """Commit or file i (1-based) goes to the partitions round robin."""
    return PARTITIONS[(i - 1) % len(PARTITIONS)]


def writer_partition(writer: int) -> str:
    """Under contention each writer process has its own partition, as in the baseline's `contend`."""
    return f"2024-02-{writer + 1:02d}"


def rows(dt: str, first_id: int, n: int = ROWS_PER_FILE) -> list[dict[str, Any]]:
    """n rows of one partition with ids first_id.. (unique ids let the verification find every commit)."""
    return [{"dt": dt, "id": first_id + j, "v": "x" * 16} for j in range(n)]


def contention_ids(writer: int, commit: int, commits_per_writer: int) -> range:
    """The ids of commit `commit` (1-based) of writer `writer`: disjoint across all commits of a run."""
    first = ((writer * commits_per_writer) + commit) * ROWS_PER_FILE
    return range(first, first + ROWS_PER_FILE)


@dataclass(frozen=True)
class Counts:
    """How much work one run does; --quick shrinks every count."""

    sequential_commits: int
    window: int
    big_files: int
    writers: int
    commits_per_writer: int
    contention_runs: int

    @property
    def windows(self) -> dict[str, tuple[int, int]]:
        """The two latency windows: the first commits, and the last commits of the sequence."""
        n = self.sequential_commits
        return {"fresh": (1, self.window), "after": (n - self.window + 1, n)}


FULL = Counts(
    sequential_commits=1000, window=20, big_files=10_000, writers=8, commits_per_writer=25, contention_runs=3
)
QUICK = Counts(
    sequential_commits=200, window=20, big_files=1_000, writers=8, commits_per_writer=10, contention_runs=1
)


def acknowledged_ids(reports: list[dict[str, Any]], commits_per_writer: int) -> dict[tuple[str, int], range]:
    """(commitUser, identifier) of every acknowledged contention commit -> the row ids it wrote."""
    return {
        (r["commit_user"], c["identifier"]): contention_ids(r["writer"], c["identifier"], commits_per_writer)
        for r in reports
        for c in r["records"]
    }
