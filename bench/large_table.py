"""A commit's cost as a table grows to a million live files (issue 14), on a real `coordinator serve`.

usage: python bench/large_table.py [--files 1000000] [--batch 10000] [--database postgres|sqlite]

The table is the suite's shape (dt STRING, id BIGINT, v STRING; partitioned by dt; bucket-unaware). It
grows by commits of `--batch` one-file messages over ten partitions, the files hard links of one real
parquet file per partition and commit (bench.coordinator_bench.link_files). Measured at about 1,000
live files and again at the full size, on the same table, so every ratio compares like with like:

- 1-file commit p50 (20 commits, round robin into three small partitions of their own),
- one commit of `--batch` files,
- the service's resident memory (VmRSS, and its peak VmHWM) from /proc,
- the first 1-file commit after a restart of the service, and the p50 after it.

At the end pypaimon (the format's judge) and pypaimon-rust each count the table's rows from their scan
plan and read the rows of the three small partitions; all must equal what was committed. Results go to
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
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: bench/ is on sys.path, the repository root not yet
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.run import importable

    importable()

from bench.coordinator_bench import (
    commit_body,
    create_table,
    created,
    link_files,
    new_client,
    timed_post,
)
from bench.data import ROWS_PER_FILE, rows
from bench.procs import progress
from bench.pypaimon_bench import catalog_options
from bench.service import CoordinatorProcess, postgres_database, sqlite_url
from bench.table_files import AppendTable
from tests.support.seaweed import BUCKET, seaweed, warehouse_uri

REPO = Path(__file__).resolve().parent.parent
PARTITIONS = [f"p{i:02d}" for i in range(10)]
PROBE_PARTITIONS = ["probe-a", "probe-b", "probe-c"]
"""The 1-file commits go round robin to these small partitions, which the readers read back row by row."""
PROBES = 20
SMALL_TABLE = 1_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--store", choices=["local", "s3"], default="local")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="coordinator-large-") as tmp, ExitStack() as stack:
        root = Path(tmp)
        if args.store == "s3":
            endpoint = stack.enter_context(seaweed(root / "weed"))
            store = Store.s3(endpoint)
        else:
            store = Store.local(root / "warehouse")
        if args.database == "postgres":
            url = stack.enter_context(postgres_database())
        else:
            url = sqlite_url(root)
        result = run(url, store, root / "service.log", args.files, args.batch)
    result["database"] = args.database
    result["store"] = args.store
    report(result)
    out = REPO / "bench" / "results" / f"large_table-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"raw figures: {out.relative_to(REPO)}")
    return 0


@dataclass(frozen=True)
class Store:
    """Where the table lives: a local folder, or a bucket of a SeaweedFS started for the run."""

    warehouse: str
    """The service's --warehouse."""
    on_disk: bool
    """Local disk, where growth files are hard links of real ones (the table's location says the same)."""
    catalog: dict[str, str]
    """pypaimon's catalog options for reading the table back."""

    @classmethod
    def local(cls, folder: Path) -> Store:
        folder.mkdir()
        return cls(str(folder), True, catalog_options(folder))

    @classmethod
    def s3(cls, endpoint: str) -> Store:
        return cls(warehouse_uri(endpoint, "wh"), False, catalog_options(f"s3://{BUCKET}/wh", endpoint))


def run(url: str, store: Store, log: Path, files: int, batch: int) -> dict[str, Any]:
    with CoordinatorProcess(url, store.warehouse, log) as service, new_client(service.url) as client:
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
        verified = verify(store, job)
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
        self.probe_ids: dict[str, list[int]] = {dt: [] for dt in PROBE_PARTITIONS}
        self._probes = 0
        self._user = f"bench-large-{uuid.uuid4().hex[:8]}"
        self._identifier = 0
        self._templates: dict[str, dict[str, Any]] = {}

    def grow(self, count: int, partitions: list[str] = PARTITIONS) -> float:
        return self._grow(count, partitions)[0]

    def _grow(self, count: int, partitions: list[str]) -> tuple[float, dict[str, Any]]:
        if self.table.local:
            messages = link_files(self.table, count, partitions)
        else:
            messages = self._named_after_templates(count, partitions)
        seconds, answer = self._commit(messages)
        self.files += count
        return seconds, answer

    def _named_after_templates(self, count: int, partitions: list[str]) -> list[dict[str, Any]]:
        """On an object store: one real file per partition, uploaded once; the others are server-side
        copies of it (the coordinator checks every committed file is there, of its size; 200,000 uploads
        would make the run about uploads). Readers only count them from the plan."""
        messages = []
        copies = []
        for k in range(count):
            dt = partitions[k % len(partitions)]
            template = self._templates.get(dt)
            if template is None:
                template = self._templates[dt] = self.table.append_file(rows(dt, k * ROWS_PER_FILE))
                meta = template
            else:
                meta = {**template, "fileName": f"data-{uuid.uuid4()}-0.parquet"}
                folder = self.table.bucket_dir({"dt": dt})
                copies.append((f"{folder}/{template['fileName']}", f"{folder}/{meta['fileName']}"))
            messages.append({"partition": {"dt": dt}, "bucket": 0, "newFiles": [meta]})
        filesystem = self.table.filesystem
        with ThreadPoolExecutor(32) as pool:
            list(pool.map(lambda pair: filesystem.copy_file(*pair), copies))
        return messages

    def one_file_commit(self) -> tuple[float, dict[str, Any]]:
        dt = PROBE_PARTITIONS[self._probes % len(PROBE_PARTITIONS)]
        first_id = 10_000_000 + self._probes * ROWS_PER_FILE
        self._probes += 1
        meta = self.table.append_file(rows(dt, first_id))
        self.probe_ids[dt].extend(range(first_id, first_id + ROWS_PER_FILE))
        seconds, answer = self._commit([{"partition": {"dt": dt}, "bucket": 0, "newFiles": [meta]}])
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


def verify(store: Store, job: Job) -> dict[str, Any]:
    """pypaimon and pypaimon-rust each count every row from their scan plan and read the rows of each
    probe partition; all must equal what was committed. On S3 only pypaimon reads (pypaimon-rust's
    object-store options are not wired here)."""
    started = time.perf_counter()
    committed = job.files * ROWS_PER_FILE
    result: dict[str, Any] = {"committed_rows": committed}
    readers = [_pypaimon, _pypaimon_rust] if store.on_disk else [_pypaimon]
    for reader in readers:
        counted, probe_ids = reader(store.catalog, job.table.id)
        expected = {dt: sorted(ids) for dt, ids in job.probe_ids.items()}
        result[reader.__name__.strip("_")] = {
            "row_count": counted,
            "partitions_read": len(probe_ids),
            "probe_rows_equal": probe_ids == expected,
        }
        if counted != committed or probe_ids != expected:
            raise RuntimeError(f"{reader.__name__} disagrees with what was committed: {result}")
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def _pypaimon(catalog: dict[str, str], table_id: str) -> tuple[int, dict[str, list[int]]]:
    from pypaimon import CatalogFactory

    read_table = CatalogFactory.create(catalog).get_table(table_id)
    splits = read_table.new_read_builder().new_scan().plan().splits()
    counted = sum(f.row_count for split in splits for f in split.files)
    ids = {}
    for dt in PROBE_PARTITIONS:
        builder = read_table.new_read_builder()
        builder = builder.with_filter(builder.new_predicate_builder().equal("dt", dt))
        probe = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        ids[dt] = sorted(probe.column("id").to_pylist())
    return counted, ids


def _pypaimon_rust(catalog: dict[str, str], table_id: str) -> tuple[int, dict[str, list[int]]]:
    import pyarrow as pa
    import pypaimon_rust.datafusion as rust

    read_table = rust.PaimonCatalog(catalog).get_table(table_id)
    counted = sum(s.row_count() for s in read_table.new_read_builder().new_scan().plan().splits())
    ids = {}
    for dt in PROBE_PARTITIONS:
        builder = read_table.new_read_builder()
        builder.with_filter({"method": "equal", "field": "dt", "literals": [dt]})
        reader = builder.new_read().read_arrow(builder.new_scan().plan().splits())
        batches = []
        while (batch := reader.read_next_batch()) is not None:
            batches.append(batch)
        ids[dt] = sorted(pa.Table.from_batches(batches).column("id").to_pylist()) if batches else []
    return counted, ids


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
    where = f"{result['database']}, {result['store']} store"
    print(f"\nlarge table on {where}: {small['live_files']:,} -> {large['live_files']:,} files")
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
