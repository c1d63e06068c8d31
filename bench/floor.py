"""The physical floor of a commit on this machine, measured in the same run as the coordinator.

A commit through the coordinator cannot cost less than three parts, each measured here on its own:

1. request: a body-less POST to the same server (the running `coordinator serve`: uvicorn, the same
   FastAPI app, its middleware, and a commit's token and grant checks): POST /tables/{id}/ping, 204.
2. transaction: the one database transaction a commit point needs, from this process on the service's
   own database: BEGIN; move the table's head only if it is still where the commit found it (a
   conditional UPDATE); INSERT the commit's record (its snapshot's JSON, under the unique key dedup
   needs); COMMIT. Through a SQLAlchemy engine made by the service's own `make_engine` (the floor) and,
   on PostgreSQL, with psycopg 3 on one connection (for reference: the driver without SQLAlchemy).
3. files: the files a commit writes, encoded by the project's own encoders (fastavro) and written by the
   service's LocalFileIO, so with the service's durability (no fsync: the database is the commit point):
   one manifest, the base and delta manifest lists, snapshot-N (create-if-absent) and the LATEST hint.

The floor of a 1-file commit is the sum of the three p50s. The floor of the commit of N messages is the
same request and transaction with a manifest of N entries (one Avro write) in part 3: what it must
write grows with N, the round trip and the transaction do not (see bench/README.md).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import psycopg
from sqlalchemy import Engine, text

from bench.data import DATABASE, PARTITIONS, ROWS_PER_FILE
from bench.stats import summarize
from coordinator.db.engine import make_engine
from coordinator.storage.fileio import LocalFileIO
from coordinator.storage.layout import TableLayout
from paimon_format.binary_row import decode_row, encode_row
from paimon_format.manifest import encode_manifest, encode_manifest_list
from paimon_format.manifest_meta import manifest_file_meta, partition_stats
from paimon_format.manifest_model import (
    EMPTY_ROW,
    DataFileMeta,
    FileKind,
    ManifestEntry,
    SimpleStats,
)
from paimon_format.snapshot import LATEST, CommitKind, Snapshot, format_hint
from paimon_format.types import parse_type

REPEATS = 200
"""Timed repetitions of each 1-file part (p50 over these)."""
BIG_REPEATS = 20
"""Timed repetitions of the N-entry file part: each takes tens of milliseconds."""
WARM_UP = 10
"""Untimed repetitions first: the first request or transaction pays for imports, caches and pools."""

PING = f"/tables/{DATABASE}.floor/ping"
HEAD = "bench_floor_head"
RECORDS = "bench_floor_commits"
# Portable DDL (SQLite and PostgreSQL). The primary key of the records is the service's dedup key.
CREATE = (
    f"CREATE TABLE {HEAD} (id VARCHAR(200) PRIMARY KEY, head BIGINT NOT NULL)",
    f"CREATE TABLE {RECORDS} (table_id VARCHAR(200) NOT NULL, commit_user VARCHAR(200) NOT NULL, "
    "identifier BIGINT NOT NULL, snapshot_id BIGINT NOT NULL, body TEXT NOT NULL, "
    "PRIMARY KEY (table_id, commit_user, identifier))",
)
ADVANCE = f"UPDATE {HEAD} SET head = head + 1 WHERE id = :id AND head = :expected"
RECORD = (
    f"INSERT INTO {RECORDS} (table_id, commit_user, identifier, snapshot_id, body) "
    "VALUES (:id, 'floor', :n, :n, :body)"
)


def measure(url: str, database_url: str, folder: Path, big_entries: int) -> dict[str, Any]:
    """The three parts against the service at `url` and its database, files under `folder`; the floors."""
    floor = one_file(url, database_url, folder)
    big = files_ms(folder / "big", big_entries, BIG_REPEATS)
    fixed = floor["request_ms"]["p50"] + floor["transaction_ms"]["sqlalchemy"]["p50"]
    floor["files_ms"]["big"] = big
    return {**floor, "big_entries": big_entries, "big_commit_ms": fixed + big["p50"]}


def one_file(url: str, database_url: str, folder: Path) -> dict[str, Any]:
    """The floor of a 1-file commit alone: the three parts' summaries and the sum of their p50s."""
    request = request_ms(url)
    record = sample_snapshot(1, ("manifest-list-0", "manifest-list-1"), 1).to_json()
    transaction = transaction_ms(database_url, record)
    one = files_ms(folder / "one", 1, REPEATS)
    return {
        "request_ms": request,
        "transaction_ms": transaction,
        "files_ms": {"one_entry": one},
        "one_file_ms": request["p50"] + transaction["sqlalchemy"]["p50"] + one["p50"],
    }


def timed(step: Callable[[int], None], repeats: int) -> dict[str, float]:
    """Summary in ms of `repeats` timed calls step(n), after WARM_UP untimed ones; n counts from 0."""
    for n in range(WARM_UP):
        step(n)
    latencies = []
    for n in range(WARM_UP, WARM_UP + repeats):
        started = time.perf_counter()
        step(n)
        latencies.append((time.perf_counter() - started) * 1000)
    return summarize(latencies)


# ---------------------------------------------------------------- 1. the request


def request_ms(url: str, repeats: int = REPEATS) -> dict[str, float]:
    """Body-less POSTs on one keep-alive connection, as the coordinator's commits are sent."""
    answers: list[int] = []
    with httpx.Client(base_url=url, timeout=30.0) as client:

        def ping(_: int) -> None:
            answers.append(client.post(PING).status_code)

        summary = timed(ping, repeats)
    if set(answers) != {204}:
        raise RuntimeError(f"POST {PING} answered {sorted(set(answers))}, not only 204")
    return summary


# ---------------------------------------------------------------- 2. the transaction


def transaction_ms(database_url: str, body: str, repeats: int = REPEATS) -> dict[str, dict[str, float]]:
    """The floor transaction through the service's kind of engine, and with psycopg alone on PostgreSQL.

    On scratch tables of the service's database, dropped again at the end.
    """
    engine = make_engine(database_url)
    try:
        with engine.begin() as conn:
            for statement in CREATE:
                conn.execute(text(statement))
            conn.execute(text(f"INSERT INTO {HEAD} VALUES ('sqlalchemy', 0), ('psycopg', 0)"))
        out = {"sqlalchemy": _through_sqlalchemy(engine, body, repeats)}
        if engine.dialect.name == "postgresql":
            out["psycopg"] = _through_psycopg(engine, body, repeats)
        return out
    finally:
        with engine.begin() as conn:
            for table in (HEAD, RECORDS):
                conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
        engine.dispose()


def _through_sqlalchemy(engine: Engine, body: str, repeats: int) -> dict[str, float]:
    advance, record = text(ADVANCE), text(RECORD)

    def commit_point(n: int) -> None:
        with engine.begin() as conn:
            if conn.execute(advance, {"id": "sqlalchemy", "expected": n}).rowcount != 1:
                raise RuntimeError("the floor's head row moved under it")
            conn.execute(record, {"id": "sqlalchemy", "n": n + 1, "body": body})

    return timed(commit_point, repeats)


def _through_psycopg(engine: Engine, body: str, repeats: int) -> dict[str, float]:
    conninfo = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    # psycopg's own placeholders; autocommit, so that transaction() sends exactly BEGIN and COMMIT.
    advance = ADVANCE.replace(":id", "%(id)s").replace(":expected", "%(expected)s")
    record = RECORD.replace(":id", "%(id)s").replace(":n", "%(n)s").replace(":body", "%(body)s")
    with psycopg.connect(conninfo, autocommit=True) as conn:

        def commit_point(n: int) -> None:
            with conn.transaction():
                if conn.execute(advance, {"id": "psycopg", "expected": n}).rowcount != 1:
                    raise RuntimeError("the floor's head row moved under it")
                conn.execute(record, {"id": "psycopg", "n": n + 1, "body": body})

        return timed(commit_point, repeats)


# ---------------------------------------------------------------- 3. the files


def files_ms(root: Path, entries: int, repeats: int) -> dict[str, float]:
    """A commit's files for a manifest of `entries` entries, in a fresh table folder under `root`.

    The entries are built before the clock starts (the service has them from the request); encoding
    them is timed, as it is part of writing the files.
    """
    layout = TableLayout(str(root))
    sample = sample_entries(entries)
    stats = partition_stats([e.partition for e in sample], _decode, _encode, 1)
    fileio = LocalFileIO()
    prefix = uuid.uuid4()

    def write(n: int) -> None:
        write_commit_files(fileio, layout, sample, stats, f"{prefix}-{n}", n + 1)

    return timed(write, repeats)


def write_commit_files(
    fileio: LocalFileIO,
    layout: TableLayout,
    entries: Sequence[ManifestEntry],
    stats: SimpleStats,
    name: str,
    snapshot_id: int,
) -> None:
    """What one append commit writes, in the service's order and with its FileIO calls."""
    manifest = f"manifest-{name}"
    data = encode_manifest(entries)
    fileio.write_unique(layout.manifest(manifest), data)
    metas = [manifest_file_meta(manifest, len(data), entries, 0, stats)]
    lists = []
    for kind in ("base", "delta"):
        listed = encode_manifest_list(metas)
        lists.append(f"manifest-list-{name}-{kind}")
        fileio.write_unique(layout.manifest(lists[-1]), listed)
    snapshot = sample_snapshot(snapshot_id, lists, len(entries))
    fileio.write_new(layout.snapshot(snapshot_id), snapshot.to_json().encode())
    fileio.overwrite(layout.hint(LATEST), format_hint(snapshot_id))


_PARTITION_TYPES = [parse_type("STRING")]


def _encode(values: Sequence[object]) -> bytes:
    return encode_row(values, _PARTITION_TYPES)


def _decode(row: bytes) -> Sequence[object]:
    return decode_row(row, _PARTITION_TYPES)


def sample_entries(count: int) -> list[ManifestEntry]:
    """ADD entries of the benchmark's files: 10 rows each, partitions round robin, bucket-unaware."""
    now = int(time.time() * 1000)
    partitions = [_encode([dt]) for dt in PARTITIONS]
    return [
        ManifestEntry(
            FileKind.ADD,
            partitions[k % len(partitions)],
            0,
            -1,
            DataFileMeta(
                file_name=f"data-{uuid.uuid4()}-0.parquet",
                file_size=1_000,
                row_count=ROWS_PER_FILE,
                min_key=EMPTY_ROW,
                max_key=EMPTY_ROW,
                key_stats=SimpleStats.EMPTY,
                value_stats=SimpleStats.EMPTY,
                min_sequence_number=0,
                max_sequence_number=ROWS_PER_FILE - 1,
                schema_id=0,
                level=0,
                creation_time=now,
                delete_row_count=0,
                file_source=0,
            ),
        )
        for k in range(count)
    ]


def sample_snapshot(snapshot_id: int, lists: Sequence[str], files: int) -> Snapshot:
    """An append snapshot of `files` files on top of its base and delta manifest `lists`."""
    return Snapshot(
        id=snapshot_id,
        schema_id=0,
        base_manifest_list=lists[0],
        delta_manifest_list=lists[1],
        base_manifest_list_size=1_000,
        delta_manifest_list_size=1_000,
        total_record_count=snapshot_id * files * ROWS_PER_FILE,
        delta_record_count=files * ROWS_PER_FILE,
        commit_user=f"floor-{uuid.uuid4()}",
        commit_identifier=snapshot_id,
        commit_kind=CommitKind.APPEND,
        time_millis=int(time.time() * 1000),
        uuid=str(uuid.uuid4()),
    )
