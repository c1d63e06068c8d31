"""The commit point and the finish of a small commit as one statement each, on PostgreSQL.

A commit point is several writes (the fence, the head, the snapshot row, the history rows, the live-file
index), and in a transaction each is a round trip, with BEGIN and COMMIT two more. PostgreSQL runs the
data-modifying parts of one statement's WITH clause atomically, so a commit to one table of one snapshot
that only adds files (a streaming job's checkpoint) goes as one statement in autocommit: every write is
conditioned on the fence holding and the head moving, which the statement returns. The finish (the
snapshot published, the phase timings, the lock released) is one statement too. Anything larger, or any
other database, takes the transactions of commit/commit_point.py, which write the same rows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, TextClause, text

from coordinator.db.engine import now_ms
from coordinator.db.repositories.commits import NewCommit
from coordinator.db.repositories.live_files import LiveFileValues
from coordinator.db.repositories.tables import TableVersion
from coordinator.locks.base import Lease
from paimon_format.snapshot import BATCH_IDENTIFIER


@dataclass(frozen=True)
class HeadMove:
    """The table's head from `previous` to `new`, with its size, while the row is still `version`."""

    table_id: str
    version: TableVersion
    previous: int
    new: int
    total_record_count: int
    files: int
    size: int
    at: float


_COMMIT_POINT = """
WITH fence AS (
    UPDATE locks SET expires_at_ms = expires_at_ms
    WHERE lock_id = :lock_id AND owner = :owner AND epoch = :epoch AND expires_at_ms >= {now}
    RETURNING lock_id
), head AS (
    UPDATE paimon_tables
    SET latest_snapshot_id = :new, total_record_count = :records, file_count = file_count + :files,
        file_bytes = file_bytes + :bytes, last_commit_at = :at
    WHERE id = :table_id AND latest_snapshot_id = :previous AND uuid = :uuid AND schema_id = :schema_id
      AND EXISTS (SELECT FROM fence)
    RETURNING id
), snapshot AS (
    INSERT INTO snapshots
        (table_id, snapshot_id, commit_user, commit_identifier, commit_kind, time_millis, body, published)
    SELECT :table_id, :new, :s_user, :s_identifier, :s_kind, :s_time, :s_body, false
    WHERE EXISTS (SELECT FROM head)
), history AS (
    INSERT INTO commits (table_id, commit_user, identifier, outcome, snapshots, timings, conflict,
                         idempotency_key, created_at, action, details, digest)
    SELECT :table_id, h.commit_user, h.identifier, h.outcome, h.snapshots, h.timings, h.conflict,
           h.idempotency_key, h.created_at, h.action, h.details, h.digest
    FROM jsonb_to_recordset(CAST(:history AS jsonb)) AS h(
        commit_user text, identifier bigint, outcome text, snapshots jsonb, timings jsonb,
        conflict jsonb, idempotency_key text, created_at float8, action text, details jsonb, digest text)
    WHERE EXISTS (SELECT FROM head)
), files AS (
    INSERT INTO live_files (table_id, partition, bucket, level, file_name, total_buckets,
                            max_sequence_number, added_in, removed_in, entry)
    SELECT :table_id, f.partition, f.bucket, f.level, f.file_name, f.total_buckets,
           f.max_sequence_number, :new, NULL, f.entry
    FROM unnest(CAST(:f_partition AS bytea[]), CAST(:f_bucket AS int[]), CAST(:f_level AS int[]),
                CAST(:f_name AS text[]), CAST(:f_total_buckets AS int[]), CAST(:f_max_sequence AS bigint[]),
                CAST(:f_entry AS bytea[]))
         AS f(partition, bucket, level, file_name, total_buckets, max_sequence_number, entry)
    WHERE EXISTS (SELECT FROM head)
    ON CONFLICT (table_id, partition, bucket, level, file_name) DO UPDATE
    SET total_buckets = excluded.total_buckets, max_sequence_number = excluded.max_sequence_number,
        added_in = excluded.added_in, removed_in = NULL, entry = excluded.entry
), index_at AS (
    INSERT INTO live_index (table_id, snapshot_id) SELECT :table_id, :new WHERE EXISTS (SELECT FROM head)
    ON CONFLICT (table_id) DO UPDATE SET snapshot_id = excluded.snapshot_id
)
SELECT EXISTS (SELECT FROM fence) AS fenced, EXISTS (SELECT FROM head) AS moved
"""

_FINISH = """
WITH published AS (
    UPDATE snapshots SET published = true
    WHERE table_id = :table_id AND NOT published AND snapshot_id <= :through
), timings AS (
    UPDATE commits SET timings = t.timings
    FROM jsonb_to_recordset(CAST(:timings AS jsonb))
         AS t(commit_user text, identifier bigint, digest text, timings jsonb)
    WHERE commits.table_id = :table_id AND commits.commit_user = t.commit_user
      AND commits.identifier = t.identifier AND commits.outcome = 'committed'
      AND (commits.identifier <> :batch OR commits.digest = t.digest)
)
UPDATE locks SET owner = NULL, expires_at_ms = 0
WHERE lock_id = :lock_id AND owner = :owner AND epoch = :epoch
"""

_STATEMENTS: dict[str, TextClause] = {}


def commit_point(
    conn: Connection,
    lease: Lease,
    head: HeadMove,
    snapshot: dict[str, object],
    history: Sequence[NewCommit],
    added: Sequence[LiveFileValues],
) -> tuple[bool, bool]:
    """One statement in autocommit; returns (the lease still ours, the head moved). Nothing is written
    unless both hold. A history row whose key is taken raises IntegrityError, and nothing is written."""
    statement = _STATEMENTS.get("commit_point")
    if statement is None:
        statement = _STATEMENTS["commit_point"] = text(_COMMIT_POINT.format(now=now_ms(conn.engine).text))

    def files(column: int) -> list[object]:
        return [row[column] for row in added]

    params: dict[str, object] = {
        "lock_id": lease.lock_id,
        "owner": lease.owner,
        "epoch": lease.epoch,
        "table_id": head.table_id,
        "uuid": head.version.uuid,
        "schema_id": head.version.schema_id,
        "previous": head.previous,
        "new": head.new,
        "records": head.total_record_count,
        "files": head.files,
        "bytes": head.size,
        "at": head.at,
        "s_user": snapshot["commit_user"],
        "s_identifier": snapshot["commit_identifier"],
        "s_kind": snapshot["commit_kind"],
        "s_time": snapshot["time_millis"],
        "s_body": snapshot["body"],
        "history": json.dumps([_history_json(c) for c in history]),
        # In the order of live_files' columns (LiveFileValues); table, added_in and removed_in are given.
        "f_partition": files(1),
        "f_bucket": files(2),
        "f_level": files(3),
        "f_name": files(4),
        "f_total_buckets": files(5),
        "f_max_sequence": files(6),
        "f_entry": files(9),
    }
    row = conn.execute(statement, params).one()
    return bool(row.fenced), bool(row.moved)


def finish(
    conn: Connection,
    lease: Lease,
    table_id: str,
    through: int,
    timings: Sequence[tuple[str, int, str, dict[str, float]]],
) -> None:
    """Snapshots through `through` published, the commits' phase timings ((commitUser, identifier,
    digest, timings) each) completed, and the lease released: one statement in autocommit."""
    statement = _STATEMENTS.get("finish")
    if statement is None:
        statement = _STATEMENTS["finish"] = text(_FINISH)
    rows = [{"commit_user": u, "identifier": i, "digest": d, "timings": t} for u, i, d, t in timings]
    conn.execute(
        statement,
        {
            "table_id": table_id,
            "through": through,
            "timings": json.dumps(rows),
            "batch": BATCH_IDENTIFIER,
            "lock_id": lease.lock_id,
            "owner": lease.owner,
            "epoch": lease.epoch,
        },
    )


def _history_json(commit: NewCommit) -> dict[str, object]:
    """A history row as jsonb_to_recordset reads it: a key left out is SQL NULL (a JSON null would be a
    jsonb null, which the ORM's columns never hold)."""
    values: dict[str, object] = {
        "commit_user": commit.commit_user,
        "identifier": commit.identifier,
        "outcome": commit.outcome,
        "snapshots": commit.snapshots,
        "timings": commit.timings,
        "conflict": commit.conflict,
        "idempotency_key": commit.idempotency_key,
        "created_at": commit.created_at,
        "action": commit.action,
        "details": commit.details,
        "digest": commit.digest,
    }
    return {k: v for k, v in values.items() if v is not None}
