"""What checking a commit's files costs (issue 28): the service's per-file check beside a size-only pass.

usage: .venv/bin/python bench/file_checks.py [--files 10000] [--rounds 5] [--commits 2] [--stores local,s3]

Before a commit takes its table's lock, the service checks every file it adds (usecases.file_checks).
This measures that check on one commit of `--files` one-file messages over ten partitions of an append
table (the suite's shape, parquet, 10 rows a file), on a local warehouse and on an S3 store (SeaweedFS
on loopback, tests/support/seaweed.py), with the service's own FileIO, in one process:

- size-only: the check as it was before issue 28, measured in the same run: the size of every file
  (os.stat on local disk in turn; S3 HEAD, 32 at a time), nothing read;
- reads only: the ranged read of every file's end the check makes, as many at a time as it makes them,
  nothing parsed: on a store where a GET costs more than a HEAD, the floor of any footer check;
- check: `FileChecks.verify` of the code under test;
- commit: the whole commit of `--files` files through the service's use case, `--commits` times with
  the size-only check put in the committer's place and as many times with its own, alternating, each on
  a table of its own (its `validate` phase holds the check).

Size-only and check alternate, `--rounds` times each. Figures are medians of wall time, and of the
process's CPU time (on a shared machine the CPU time moves less with the load); ratios are check /
size-only. The files are real parquet files: one written per partition, the others hard links to it
(local) or the same bytes PUT under new names (S3), so each one's footer is what it claims.
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: bench/ is on sys.path, the repository root not yet
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.run import importable

    importable()

import pyarrow as pa
import pyarrow.parquet as pq

from bench.suite import revision, revision_text
from coordinator.commit.file_checks import CONCURRENT_CHECKS, FileChecks
from coordinator.domain.committable import ResolvedCommittable, resolve_committable
from coordinator.services import Services
from coordinator.settings import Settings
from coordinator.storage.data_footers import read_end
from coordinator.storage.fileio import FileIO, LocalFileIO
from coordinator.usecases.tables import Table
from coordinator_client.models import CommitRequest, CreateTableRequest
from paimon_format.manifest_model import FileKind
from paimon_format.partition_path import bucket_dir
from tests.support.seaweed import BUCKET, seaweed

PARTITIONS = [f"p{i:02d}" for i in range(10)]
SIZES_AT_ONCE = 32
"""The size-only pass's concurrency on an object store: the file check's before issue 28."""
ROWS_PER_FILE = 10
UPLOADS_AT_ONCE = 32


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--commits", type=int, default=2)
    parser.add_argument("--stores", default="local,s3")
    args = parser.parse_args()
    stores = [s for s in args.stores.split(",") if s]
    results: dict[str, Any] = {"files": args.files, "rounds": args.rounds, "revision": revision()}
    print(f"file checks of one {args.files:,}-file commit, at {revision_text(results['revision'])}")
    with tempfile.TemporaryDirectory(prefix="coordinator-file-checks-") as tmp, ExitStack() as stack:
        root = Path(tmp)
        for store in stores:
            if store == "s3":
                endpoint = stack.enter_context(seaweed(root / "weed"))
                warehouse = f"s3://{BUCKET}/wh?endpoint_override={endpoint}&scheme=http&region=us-east-1"
            else:
                warehouse = str(root / "warehouse")
            results[store] = measure(
                store, warehouse, root / f"{store}.db", args.files, args.rounds, args.commits
            )
    print(json.dumps(results, indent=1))
    return 0


def measure(store: str, warehouse: str, db: Path, files: int, rounds: int, commits: int) -> dict[str, Any]:
    services = Services.start(Settings(database_url=f"sqlite:///{db}", warehouse=warehouse))
    try:
        table = create(services, "checks")
        request = stage(services.fileio, table, files)
        resolved = resolve_committable(request, table.shape, now_millis=int(time.time() * 1000))
        checks = FileChecks(services.fileio)
        sizes = SizeOnlyChecks(services.fileio)
        reads = ReadsOnly(services.fileio)
        runs: dict[str, list[tuple[float, float]]] = {"size-only": [], "reads only": [], "check": []}
        try:
            for _ in range(rounds):
                for name, checker in (("size-only", sizes), ("reads only", reads), ("check", checks)):
                    runs[name].append(timed(functools.partial(checker.verify, table, resolved)))
            whole = whole_commits(services, sizes, files, commits)
        finally:
            checks.close()
            sizes.close()
            reads.close()
    finally:
        services.close()
    out: dict[str, Any] = {"runs": runs, "commits": whole}
    for name in ("size-only", "reads only", "check"):
        out[name] = {
            "wall_s": statistics.median(w for w, _ in runs[name]),
            "cpu_s": statistics.median(c for _, c in runs[name]),
        }
    for name in ("size-only", "check"):
        out[f"commit {name}"] = {
            "total_s": statistics.median(c["total_ms"] / 1000 for c in whole[name]),
            "validate_s": statistics.median(c["validate_ms"] / 1000 for c in whole[name]),
        }
    before, floor, after = out["size-only"], out["reads only"], out["check"]
    commit_before, commit_after = out["commit size-only"], out["commit check"]
    print(
        f"{store:>5}: check {after['wall_s']:.3f} s wall / {after['cpu_s']:.3f} s CPU beside size-only "
        f"{before['wall_s']:.3f} s / {before['cpu_s']:.3f} s: ratio {after['wall_s'] / before['wall_s']:.2f}"
        f" wall, {after['cpu_s'] / before['cpu_s']:.2f} CPU; its reads alone {floor['wall_s']:.3f} s wall "
        f"(ratio {floor['wall_s'] / before['wall_s']:.2f})"
    )
    print(
        f"{store:>5}: whole commit {commit_after['total_s']:.2f} s (validate {commit_after['validate_s']:.2f}"
        f" s) beside {commit_before['total_s']:.2f} s (validate {commit_before['validate_s']:.2f} s) with "
        f"the size-only check: ratio {commit_after['total_s'] / commit_before['total_s']:.2f}"
    )
    return out


def timed(call: Callable[[], None]) -> tuple[float, float]:
    """(wall, process CPU) seconds of `call`."""
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


def whole_commits(
    services: Services, sizes: SizeOnlyChecks, files: int, commits: int
) -> dict[str, list[dict[str, float]]]:
    """`commits` whole commits with each check, alternating, each of fresh files to a fresh table."""
    committer = services.committer
    intakes = committer._steps.intakes
    own = intakes._file_checks  # the service's own checks; the size-only ones take their place
    out: dict[str, list[dict[str, float]]] = {"size-only": [], "check": []}
    for i in range(commits):
        for name, checker in (("size-only", sizes), ("check", own)):
            table = create(services, f"commit_{name.replace('-', '_')}_{i}")
            request = stage(services.fileio, table, files)
            intakes._file_checks = checker  # type: ignore[assignment]
            try:
                timings = committer.commit(table.id, request).timings
            finally:
                intakes._file_checks = own
            out[name].append({"total_ms": timings["total"], "validate_ms": timings["validate"]})
    return out


def create(services: Services, name: str) -> Table:
    return services.tables.create(
        CreateTableRequest.model_validate(
            {
                "database": "bench",
                "name": name,
                "fields": [
                    {"name": "dt", "type": "STRING"},
                    {"name": "id", "type": "BIGINT"},
                    {"name": "v", "type": "STRING"},
                ],
                "partitionKeys": ["dt"],
                "options": {"file.format": "parquet"},
            }
        )
    )


def stage(fileio: FileIO, table: Table, files: int) -> CommitRequest:
    """`files` real parquet files of ROWS_PER_FILE rows in PARTITIONS, and the commit that adds them."""
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
    first: dict[str, str] = {}
    messages = []
    uploads: list[tuple[str, bytes]] = []
    payloads: dict[str, bytes] = {}
    for i in range(files):
        dt = PARTITIONS[i % len(PARTITIONS)]
        name = f"data-{uuid.uuid4()}-0.parquet"
        folder = f"{table.location}/dt={dt}/bucket-0"
        path = f"{folder}/{name}"
        if dt not in payloads:
            rows = pa.table(
                {"dt": [dt] * ROWS_PER_FILE, "id": list(range(ROWS_PER_FILE)), "v": ["x"] * ROWS_PER_FILE},
                schema=schema,
            )
            sink = io.BytesIO()
            pq.write_table(rows, sink)
            payloads[dt] = sink.getvalue()
        if isinstance(fileio, LocalFileIO):
            if dt in first:
                os.link(first[dt], path)  # staging 10,000 files stays a second; each is a real file
            else:
                os.makedirs(folder, exist_ok=True)
                Path(path).write_bytes(payloads[dt])
                first[dt] = path
        else:
            uploads.append((path, payloads[dt]))
        size = len(payloads[dt])
        messages.append(
            {
                "partition": {"dt": dt},
                "bucket": 0,
                "newFiles": [{"fileName": name, "fileSize": size, "rowCount": ROWS_PER_FILE, "schemaId": 0}],
            }
        )
    with ThreadPoolExecutor(UPLOADS_AT_ONCE) as pool:
        list(pool.map(lambda upload: fileio.write_unique(*upload), uploads))
    return CommitRequest.model_validate(
        {"commitUser": f"bench-{uuid.uuid4()}", "identifier": 1, "messages": messages}
    )


class SizeOnlyChecks:
    """The check as it was before issue 28: each added file's size, in turn on local disk (a stat costs
    less than a thread hop), SIZES_AT_ONCE at a time on an object store."""

    def __init__(self, fileio: FileIO) -> None:
        self._fileio = fileio
        self._in_turn = isinstance(fileio, LocalFileIO)
        self._pool = ThreadPoolExecutor(SIZES_AT_ONCE)

    def verify(self, table: Table, resolved: ResolvedCommittable) -> None:
        expected = {
            table.layout.data_file(
                table.shape.partition_dir(e.partition), bucket_dir(e.bucket), e.file.file_name
            ): e.file.file_size
            for entries in (resolved.append, resolved.append_changelog, resolved.compact)
            for e in entries
            if e.kind == FileKind.ADD
        }
        paths = list(expected)
        if self._in_turn:
            sizes = [self._fileio.size(p) for p in paths]
        else:
            sizes = list(self._pool.map(self._fileio.size, paths))
        assert sizes == list(expected.values())

    def close(self) -> None:
        self._pool.shutdown()


class ReadsOnly:
    """The reads the check makes (read_end of each file: a ranged read of its tail), with its concurrency,
    and nothing else."""

    def __init__(self, fileio: FileIO) -> None:
        self._fileio = fileio
        self._in_turn = isinstance(fileio, LocalFileIO)
        self._pool = ThreadPoolExecutor(CONCURRENT_CHECKS)

    def verify(self, table: Table, resolved: ResolvedCommittable) -> None:
        assert resolved.added is not None
        shape, layout = table.shape, table.layout
        entries = [a.entry for a in resolved.added]
        paths = [
            layout.data_file(shape.partition_dir(e.partition), bucket_dir(e.bucket), e.file.file_name)
            for e in entries
        ]

        def read(path: str) -> None:
            assert read_end(self._fileio, path, "parquet") is not None

        if self._in_turn:
            for path in paths:
                read(path)
        else:
            list(self._pool.map(read, paths))

    def close(self) -> None:
        self._pool.shutdown()


if __name__ == "__main__":
    sys.exit(main())
