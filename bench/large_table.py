"""A commit's cost as a table grows to a million live files (issue 14), on a real `coordinator serve`.

usage: python bench/large_table.py [--files 1000000] [--batch 10000] [--database postgres|sqlite]

The table is the suite's shape (dt STRING, id BIGINT, v STRING; partitioned by dt; bucket-unaware). It
grows by commits of `--batch` one-file messages over ten partitions, the files hard links of one real
parquet file per partition and commit (bench.coordinator_bench.link_files). Measured at about 1,000
live files and again at the full size, on the same table, so every ratio compares like with like:

- 1-file commit p50 (20 commits into a partition of their own),
- one commit of `--batch` files,
- the service's resident memory (VmRSS, and its peak VmHWM) from /proc,
- the first 1-file commit after a restart of the service, and the p50 after it.

At the end pypaimon (the format's judge) and pypaimon-rust each count the table's rows from their scan
plan and read the rows of the small partition; all must equal what was committed. Results go to
bench/results/.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for _path in (REPO / "service", REPO / "client", REPO):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from bench.coordinator_bench import (  # noqa: E402
    commit_body,
    create_table,
    created,
    link_files,
    new_client,
    timed_post,
)
from bench.data import ROWS_PER_FILE, rows  # noqa: E402
from bench.procs import progress  # noqa: E402
from bench.service import CoordinatorProcess, postgres_database, sqlite_url  # noqa: E402
from bench.table_files import AppendTable  # noqa: E402

PARTITIONS = [f"p{i:02d}" for i in range(10)]
PROBE = "probe"
PROBES = 20
SMALL_TABLE = 1_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="postgres")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="coordinator-large-") as tmp:
        root = Path(tmp)
        warehouse = root / "warehouse"
        warehouse.mkdir()
        if args.database == "postgres":
            with postgres_database() as url:
                result = run(url, warehouse, root / "service.log", args.files, args.batch)
        else:
            result = run(sqlite_url(root), warehouse, root / "service.log", args.files, args.batch)
    result["database"] = args.database
    report(result)
    out = REPO / "bench" / "results" / f"large_table-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"raw figures: {out.relative_to(REPO)}")
    return 0


def run(url: str, warehouse: Path, log: Path, files: int, batch: int) -> dict[str, Any]:
    with CoordinatorProcess(url, warehouse, log) as service, new_client(service.url) as client:
        table, _ = create_table(client, "large")
        job = Job(client, table)
        job.grow(SMALL_TABLE)
        small = {"live_files": job.files, **job.measure(batch), "memory": memory(service.pid)}
        progress(f"at {job.files:,} files: {small}")
        grow_seconds = []
        while job.files + batch < files:
            grow_seconds.append(job.grow(batch))
            if len(grow_seconds) % 10 == 0:
                progress(f"{job.files:,} files, last commit of {batch:,} in {grow_seconds[-1]:.2f} s")
        large = {"live_files": job.files, **job.measure(batch), "memory": memory(service.pid)}
        progress(f"at {job.files:,} files: {large}")
        service.stop()
        service.start()
        first, _ = job.one_file_commit()
        after = [job.one_file_commit()[0] for _ in range(PROBES)]
        restart = {
            "first_commit_s": first,
            "p50_after_s": statistics.median(after),
            "memory": memory(service.pid),
        }
        progress(f"after a restart: {restart}")
        verified = verify(warehouse, table, job)
    return {
        "batch": batch,
        "small": small,
        "large": large,
        "restart": restart,
        "grow_commit_seconds": grow_seconds,
        "verified": verified,
    }


class Job:
    """The writer growing the table; it counts what it committed."""

    def __init__(self, client: Any, table: AppendTable) -> None:
        self.client = client
        self.table = table
        self.files = 0
        self.probe_ids: list[int] = []
        self._user = f"bench-large-{uuid.uuid4().hex[:8]}"
        self._identifier = 0

    def grow(self, count: int, partitions: list[str] = PARTITIONS) -> float:
        return self._grow(count, partitions)[0]

    def _grow(self, count: int, partitions: list[str]) -> tuple[float, dict[str, Any]]:
        messages = link_files(self.table, count, partitions)
        seconds, answer = self._commit(messages)
        self.files += count
        return seconds, answer

    def one_file_commit(self) -> tuple[float, dict[str, Any]]:
        first_id = 10_000_000 + len(self.probe_ids) * ROWS_PER_FILE
        meta = self.table.append_file(rows(PROBE, first_id))
        self.probe_ids.extend(range(first_id, first_id + ROWS_PER_FILE))
        seconds, answer = self._commit([{"partition": {"dt": PROBE}, "bucket": 0, "newFiles": [meta]}])
        self.files += 1
        return seconds, answer

    def measure(self, batch: int) -> dict[str, Any]:
        probes = [self.one_file_commit() for _ in range(PROBES)]
        seconds = [s for s, _ in probes]
        big, answer = self._grow(batch, PARTITIONS)
        return {
            "one_file_p50_s": statistics.median(seconds),
            "one_file_max_s": max(seconds),
            "one_file_timings_ms": probes[len(probes) // 2][1]["timings"],
            "batch_commit_s": big,
            "batch_commit_timings_ms": answer["timings"],
        }

    def _commit(self, messages: list[dict[str, Any]]) -> tuple[float, dict[str, Any]]:
        self._identifier += 1
        body = commit_body(self._user, self._identifier, messages)
        seconds, response = timed_post(self.client, self.table.id, body)
        return seconds, created(response)


def memory(pid: int) -> dict[str, float]:
    """Resident and peak resident memory of the service process, MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024
    return {"rss_mb": round(fields["VmRSS"], 1), "peak_mb": round(fields["VmHWM"], 1)}


def verify(warehouse: Path, table: AppendTable, job: Job) -> dict[str, Any]:
    """pypaimon and pypaimon-rust each count every row from their scan plan and read the probe
    partition's rows; both must equal what was committed."""
    started = time.perf_counter()
    committed = job.files * ROWS_PER_FILE
    result: dict[str, Any] = {"committed_rows": committed}
    for reader in (_pypaimon, _pypaimon_rust):
        counted, probe_ids = reader(warehouse, table.id)
        result[reader.__name__.strip("_")] = {
            "row_count": counted,
            "probe_rows_equal": probe_ids == job.probe_ids,
        }
        if counted != committed or probe_ids != job.probe_ids:
            raise RuntimeError(f"{reader.__name__} disagrees with what was committed: {result}")
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def _pypaimon(warehouse: Path, table_id: str) -> tuple[int, list[int]]:
    from pypaimon import CatalogFactory

    read_table = CatalogFactory.create({"warehouse": str(warehouse)}).get_table(table_id)
    splits = read_table.new_read_builder().new_scan().plan().splits()
    counted = sum(f.row_count for split in splits for f in split.files)
    builder = read_table.new_read_builder()
    builder = builder.with_filter(builder.new_predicate_builder().equal("dt", PROBE))
    probe = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return counted, sorted(probe.column("id").to_pylist())


def _pypaimon_rust(warehouse: Path, table_id: str) -> tuple[int, list[int]]:
    import pyarrow as pa
    import pypaimon_rust.datafusion as rust

    read_table = rust.PaimonCatalog({"warehouse": str(warehouse)}).get_table(table_id)
    counted = sum(s.row_count() for s in read_table.new_read_builder().new_scan().plan().splits())
    builder = read_table.new_read_builder()
    builder.with_filter({"method": "equal", "field": "dt", "literals": [PROBE]})
    reader = builder.new_read().read_arrow(builder.new_scan().plan().splits())
    batches = []
    while (batch := reader.read_next_batch()) is not None:
        batches.append(batch)
    ids = pa.Table.from_batches(batches).column("id").to_pylist() if batches else []
    return counted, sorted(ids)


def report(result: dict[str, Any]) -> None:
    small, large, restart = result["small"], result["large"], result["restart"]

    def ms(seconds: float) -> str:
        return f"{seconds * 1000:.1f} ms"

    def mb(figures: dict[str, float]) -> str:
        return f"{figures['rss_mb']:.0f} MB (peak {figures['peak_mb']:.0f})"

    one, batch = "one_file_p50_s", "batch_commit_s"
    table = [
        ("1-file commit p50", ms(small[one]), ms(large[one]), f"{large[one] / small[one]:.2f}x", "<= 1.2x"),
        (
            f"{result['batch']:,}-file commit",
            f"{small[batch]:.2f} s",
            f"{large[batch]:.2f} s",
            f"{large[batch] / small[batch]:.2f}x",
            "<= 1.2x",
        ),
        ("service memory", mb(small["memory"]), mb(large["memory"]), "", "< 500 MB"),
        ("first 1-file commit after a restart", "", f"{restart['first_commit_s']:.2f} s", "", "< 2 s"),
        ("1-file commit p50 after the restart", "", ms(restart["p50_after_s"]), "", ""),
    ]
    print(f"\nlarge table on {result['database']}: {small['live_files']:,} -> {large['live_files']:,} files")
    print("| metric | at ~1,000 files | at full size | ratio | target |")
    print("|---|---|---|---|---|")
    for row in table:
        print("| " + " | ".join(row) + " |")
    grow = result["grow_commit_seconds"]
    if grow:
        print(f"growth commits: median {statistics.median(grow):.2f} s, max {max(grow):.2f} s")
    print(f"readers: {result['verified']}")


if __name__ == "__main__":
    sys.exit(main())
