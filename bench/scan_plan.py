"""The scan plan of a big table: the service's peak memory while a client reads it whole, streamed (this
tree) against the one-document answer (the tree at `--baseline-ref`, by default the fork point from main).

    .venv/bin/python bench/scan_plan.py                      # 200,000 files in 100 partitions
    .venv/bin/python bench/scan_plan.py --files 1000000      # a million (about 25 s to write)

The table is metadata only (bench/metadata_table.py: manifests sorted by partition, 20,000 entries each,
plus a manifest of DELETE entries), registered by location. Each measurement runs in a fresh
`coordinator serve` subprocess on SQLite (so one answer's garbage does not flatter the next), from the
baseline's source or this tree's; the service's peak RSS is read from /proc/<pid>/status (VmHWM) after
the peak is reset (clear_refs) once the table is registered. The client reads every file and checks the
count; its own memory is not measured here.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "format"), str(REPO / "client"), str(REPO / "service"), str(REPO)]

from bench.metadata_table import MetadataTable, partition_name, write_metadata_table  # noqa: E402
from bench.service import CHECKED_OUT, folders_at, free_port, service_env  # noqa: E402
from coordinator_client import CoordinatorClient  # noqa: E402
from tests.support.processes import stop_process  # noqa: E402


@dataclass(frozen=True)
class Measure:
    source: str
    request: str
    files: int
    seconds: float
    rss_mb: float
    peak_mb: float


def _status_mb(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{key} missing in /proc/{pid}/status")


@contextmanager
def service(source: Path, warehouse: Path, work: Path) -> Iterator[tuple[str, int]]:
    """`coordinator serve` from the format/, client/ and service/ folders of `source`; yields (url, pid)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = service_env(source)
    database = f"sqlite:///{work / f'coordinator-{port}.db'}"
    command = [sys.executable, "-m", "coordinator.cli", "serve", "--database-url", database]
    command += ["--warehouse", str(warehouse), "--port", str(port)]
    with open(work / "service.log", "ab") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                log_tail = (work / "service.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the service did not start:\n{log_tail}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield url, process.pid
    finally:
        stop_process(process)


def measure(
    source: Path, label: str, request: str, table: MetadataTable, work: Path, read: Callable[[str], int]
) -> Measure:
    with service(source, table.location.parent.parent, work) as (url, pid):
        body = {"database": "bench", "name": "scan", "location": str(table.location)}
        answer = httpx.post(f"{url}/tables", json=body, timeout=60)
        answer.raise_for_status()
        rss = _status_mb(pid, "VmRSS")
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        started = time.perf_counter()
        files = read(url)
        seconds = time.perf_counter() - started
        peak = _status_mb(pid, "VmHWM")
    return Measure(label, request, files, seconds, rss, peak)


def read_document(partition: str | None) -> Callable[[str], int]:
    def read(url: str) -> int:
        params = {"partition": f'{{"dt": "{partition}"}}'} if partition else {}
        response = httpx.get(f"{url}/tables/bench.scan/files", params=params, timeout=600)
        response.raise_for_status()
        return len(response.json()["files"])

    return read


def read_json_lines(partition: str | None) -> Callable[[str], int]:
    def read(url: str) -> int:
        with CoordinatorClient(url, timeout=600) as client:
            spec = {"dt": partition} if partition else None
            with client.scan_plan("bench.scan", partition=spec) as plan:
                return sum(1 for _ in plan)

    return read


def baseline_tree(ref: str, into: Path) -> Path:
    """The format/, client/, service/ and migrations/ folders of `ref`, exported from git (nothing checked
    out); a revision from before format/ has Paimon's format inside client/."""
    into.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, *folders_at(ref, CHECKED_OUT)],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--per-manifest", type=int, default=20_000)
    parser.add_argument("--deleted", type=int, default=1_000)
    parser.add_argument("--baseline-ref", default=None, help="git ref of the one-document service")
    args = parser.parse_args()
    ref = (
        args.baseline_ref
        or subprocess.run(
            ["git", "-C", str(REPO), "merge-base", "HEAD", "main"], check=True, capture_output=True, text=True
        ).stdout.strip()
    )
    with tempfile.TemporaryDirectory(prefix="scan-plan-bench-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        table = write_metadata_table(
            work / "warehouse" / "bench.db" / "scan",
            files=args.files,
            partitions=args.partitions,
            per_manifest=args.per_manifest,
            deleted=args.deleted,
        )
        print(
            f"table: {table.files:,} live files ({args.deleted:,} deleted), {args.partitions} partitions, "
            f"{table.manifests} manifests; written in {time.perf_counter() - started:.1f} s"
        )
        baseline = baseline_tree(ref, work / "baseline")
        one = partition_name(args.partitions // 2)
        runs = [
            (baseline, f"baseline {ref[:8]}", "document, whole table", read_document(None)),
            (REPO, "this tree", "document, whole table", read_document(None)),
            (REPO, "this tree", "JSON lines, whole table", read_json_lines(None)),
            (baseline, f"baseline {ref[:8]}", f"document, dt={one}", read_document(one)),
            (REPO, "this tree", f"JSON lines, dt={one}", read_json_lines(one)),
        ]
        results = [
            measure(source, label, request, table, work, read) for source, label, request, read in runs
        ]
    print()
    print("| service | request | files | seconds | RSS before MB | peak RSS MB | peak - before MB |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for m in results:
        print(
            f"| {m.source} | {m.request} | {m.files:,} | {m.seconds:.1f} | {m.rss_mb:.0f} | {m.peak_mb:.0f} "
            f"| {m.peak_mb - m.rss_mb:.0f} |"
        )
    whole = [m for m in results if "whole" in m.request]
    assert all(m.files == table.files for m in whole), "a whole-table answer missed files"


if __name__ == "__main__":
    main()
