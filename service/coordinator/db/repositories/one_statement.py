"""The commit point and the finish of small commits as one statement each, on PostgreSQL.

A commit point is several writes (the fence, the head, the snapshot row, the history rows, the live-file
index), and in a transaction each is a round trip, with BEGIN and COMMIT two more. PostgreSQL runs the
data-modifying parts of one statement's WITH clause atomically, so the changes of one or many tables whose
snapshots only add files (a streaming job's checkpoint, or a group of them) go as one statement in
autocommit. Each table's writes are conditioned on its own lease holding and its own head moving, and
the statement returns the tables for which both held: one table's failure writes nothing of it and
takes nothing from the others. The finish (snapshots published, phase timings, rejections, the locks
released) is one statement too. Anything else takes the transactions of commit/commit_point.py, which
write the same rows.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from sqlalchemy import Connection, TextClause, text

from coordinator.db.engine import now_ms
from coordinator.db.repositories.commits import NewCommit
from coordinator.db.repositories.events import INSERT_EVENTS, NewEvent, events_json
from coordinator.db.repositories.live_files import LiveFileValues
from coordinator.db.repositories.tables import TableVersion
from coordinator.locks.base import Lease
from paimon_format.snapshot import BATCH_IDENTIFIER


@dataclass(frozen=True)
class HeadMove:
    """One table's change: its head from `previous` to `new` with its size, while `lease` is still ours
    and the row is still `version`; its snapshot rows (a group's, one per commit), its history rows and
    its added files."""

    table_id: str
    lease: Lease
    version: TableVersion
    previous: int
    new: int
    total_record_count: int
    files: int
    size: int
    at: float
    snapshots: Sequence[dict[str, object]]
    history: Sequence[NewCommit]
    added: Sequence[LiveFileValues] = field(default_factory=list)
    events: Sequence[NewEvent] = field(default_factory=list)
    """Its outbox rows (events.py), written only if its head moved, like its other rows."""


@dataclass(frozen=True)
class TableFinish:
    """One table's part of the finish: published through `through` (0: nothing), its commits' phase
    timings ((commitUser, identifier, digest, timings) each), its rejections, and its lease released."""

    table_id: str
    lease: Lease
    through: int
    timings: Sequence[tuple[str, int, str, dict[str, float]]]
    rejected: Sequence[NewCommit]


_INSERT_COMMITS = """INSERT INTO commits (table_id, commit_user, identifier, outcome, snapshots, timings,
                         conflict, idempotency_key, created_at, action, details, digest)
    SELECT c.table_id, c.commit_user, c.identifier, c.outcome, c.snapshots, c.timings, c.conflict,
           c.idempotency_key, c.created_at, c.action, c.details, c.digest
    FROM jsonb_to_recordset(CAST(:{rows} AS jsonb)) AS c(
        table_id text, commit_user text, identifier bigint, outcome text, snapshots jsonb, timings jsonb,
        conflict jsonb, idempotency_key text, created_at float8, action text, details jsonb, digest text)"""
"""History rows from a JSON array of them (_commit_json)."""

_COMMIT_POINT = """
WITH h AS (
    SELECT * FROM jsonb_to_recordset(CAST(:heads AS jsonb)) AS h(
        table_id text, lock_id text, owner text, epoch bigint, uuid text, schema_id bigint,
        previous bigint, new bigint, records bigint, files bigint, bytes bigint, at float8)
), fence AS (
    UPDATE locks SET expires_at_ms = locks.expires_at_ms FROM h
    WHERE locks.lock_id = h.lock_id AND locks.owner = h.owner AND locks.epoch = h.epoch
      AND locks.expires_at_ms >= {now}
    RETURNING locks.lock_id
), head AS (
    UPDATE paimon_tables AS t
    SET latest_snapshot_id = h.new, total_record_count = h.records, file_count = t.file_count + h.files,
        file_bytes = t.file_bytes + h.bytes, last_commit_at = h.at
    FROM h
    WHERE t.id = h.table_id AND t.latest_snapshot_id = h.previous AND t.uuid = h.uuid
      AND t.schema_id = h.schema_id AND h.lock_id IN (SELECT lock_id FROM fence)
    RETURNING t.id
), snapshot AS (
    INSERT INTO snapshots
        (table_id, snapshot_id, commit_user, commit_identifier, commit_kind, time_millis, body, published)
    SELECT s.table_id, s.snapshot_id, s.commit_user, s.commit_identifier, s.commit_kind, s.time_millis,
           s.body, false
    FROM jsonb_to_recordset(CAST(:snapshots AS jsonb)) AS s(
        table_id text, snapshot_id bigint, commit_user text, commit_identifier bigint, commit_kind text,
        time_millis bigint, body text)
    WHERE s.table_id IN (SELECT id FROM head)
), history AS (
    {insert_history} WHERE c.table_id IN (SELECT id FROM head)
), files AS (
    INSERT INTO live_files (table_id, partition, bucket, level, file_name, total_buckets,
                            max_sequence_number, added_in, removed_in, entry)
    SELECT f.table_id, f.partition, f.bucket, f.level, f.file_name, f.total_buckets,
           f.max_sequence_number, f.added_in, NULL, f.entry
    FROM unnest(CAST(:f_table AS text[]), CAST(:f_partition AS bytea[]), CAST(:f_bucket AS int[]),
                CAST(:f_level AS int[]), CAST(:f_name AS text[]), CAST(:f_total_buckets AS int[]),
                CAST(:f_max_sequence AS bigint[]), CAST(:f_added_in AS bigint[]), CAST(:f_entry AS bytea[]))
         AS f(table_id, partition, bucket, level, file_name, total_buckets, max_sequence_number, added_in,
              entry)
    WHERE f.table_id IN (SELECT id FROM head)
    ON CONFLICT (table_id, partition, bucket, level, file_name) DO UPDATE
    SET total_buckets = excluded.total_buckets, max_sequence_number = excluded.max_sequence_number,
        added_in = excluded.added_in, removed_in = NULL, entry = excluded.entry
), index_at AS (
    INSERT INTO live_index (table_id, snapshot_id)
    SELECT h.table_id, h.new FROM h WHERE h.table_id IN (SELECT id FROM head)
    ON CONFLICT (table_id) DO UPDATE SET snapshot_id = excluded.snapshot_id
), outbox AS (
    {insert_events} WHERE e.table_id IN (SELECT id FROM head)
)
SELECT ARRAY(SELECT lock_id FROM fence) AS fenced, ARRAY(SELECT id FROM head) AS moved
"""

_FINISH = """
WITH t AS (
    SELECT * FROM jsonb_to_recordset(CAST(:tables AS jsonb))
        AS t(table_id text, through bigint, lock_id text, owner text, epoch bigint)
), published AS (
    UPDATE snapshots AS s SET published = true FROM t
    WHERE s.table_id = t.table_id AND NOT s.published AND s.snapshot_id <= t.through
), timed AS (
    SELECT c.id, x.timings
    FROM jsonb_to_recordset(CAST(:timings AS jsonb))
         AS x(table_id text, commit_user text, identifier bigint, digest text, timings jsonb)
    CROSS JOIN LATERAL (
        SELECT id FROM commits
        WHERE commits.table_id = x.table_id AND commits.commit_user = x.commit_user
          AND commits.identifier = x.identifier
          AND commits.outcome = 'committed' AND commits.identifier <> {batch}
        UNION ALL
        SELECT id FROM commits
        WHERE commits.table_id = x.table_id AND commits.commit_user = x.commit_user
          AND commits.digest = x.digest AND x.identifier = {batch}
          AND commits.outcome = 'committed' AND commits.identifier = {batch}
    ) AS c
), timings AS (
    UPDATE commits SET timings = (SELECT timed.timings FROM timed WHERE timed.id = commits.id)
    WHERE commits.id = ANY(ARRAY(SELECT id FROM timed))
), rejected AS (
    {insert_rejected}
)
UPDATE locks SET owner = NULL, expires_at_ms = 0 FROM t
WHERE locks.lock_id = t.lock_id AND locks.owner = t.owner AND locks.epoch = t.epoch
"""

_FINISH_STATEMENT: Final = text(
    _FINISH.format(insert_rejected=_INSERT_COMMITS.format(rows="rejected"), batch=BATCH_IDENTIFIER)
)

_FILE_COLUMNS = {
    "f_partition": 1,
    "f_bucket": 2,
    "f_level": 3,
    "f_name": 4,
    "f_total_buckets": 5,
    "f_max_sequence": 6,
    "f_added_in": 7,
    "f_entry": 9,
}
"""Each array parameter's column in LiveFileValues (the order of live_files' columns)."""


def commit_point(conn: Connection, heads: Sequence[HeadMove]) -> tuple[set[str], set[str]]:
    """One statement in autocommit; returns (the tables whose lease still held, the tables whose head
    moved and whose rows are written). A history row whose key is taken raises IntegrityError, and
    nothing at all is written."""
    statement = _commit_point_statement(now_ms(conn.engine).text)
    added = [row for head in heads for row in head.added]
    params: dict[str, object] = {
        "heads": json.dumps([_head_json(h) for h in heads]),
        "snapshots": json.dumps([{"table_id": h.table_id, **row} for h in heads for row in h.snapshots]),
        "history": json.dumps([_commit_json(h.table_id, c) for h in heads for c in h.history]),
        "events": events_json([e for h in heads for e in h.events]),
        "f_table": [row[0] for row in added],
        **{name: [row[column] for row in added] for name, column in _FILE_COLUMNS.items()},
    }
    row = conn.execute(statement, params).one()
    fenced = set(row.fenced)
    return {h.table_id for h in heads if h.lease.lock_id in fenced}, set(row.moved)


def finish(conn: Connection, tables: Sequence[TableFinish]) -> None:
    """Every table's snapshots published through its `through`, its commits' timings completed, its
    rejections recorded and its lease released: one statement in autocommit."""
    conn.execute(
        _FINISH_STATEMENT,
        {
            "tables": json.dumps(
                [
                    {
                        "table_id": t.table_id,
                        "through": t.through,
                        "lock_id": t.lease.lock_id,
                        "owner": t.lease.owner,
                        "epoch": t.lease.epoch,
                    }
                    for t in tables
                ]
            ),
            "timings": json.dumps(
                [
                    {"table_id": t.table_id, "commit_user": u, "identifier": i, "digest": d, "timings": tm}
                    for t in tables
                    for u, i, d, tm in t.timings
                ]
            ),
            "rejected": json.dumps([_commit_json(t.table_id, c) for t in tables for c in t.rejected]),
        },
    )


@functools.cache
def _commit_point_statement(now: str) -> TextClause:
    """The commit point's statement, made once: SQLAlchemy keys its compiled-statement cache on the
    statement object, and keying a fresh one costs more than the rest of the call."""
    return text(
        _COMMIT_POINT.format(
            now=now,
            insert_history=_INSERT_COMMITS.format(rows="history"),
            insert_events=INSERT_EVENTS.format(rows="events"),
        )
    )


def _head_json(head: HeadMove) -> dict[str, object]:
    return {
        "table_id": head.table_id,
        "lock_id": head.lease.lock_id,
        "owner": head.lease.owner,
        "epoch": head.lease.epoch,
        "uuid": head.version.uuid,
        "schema_id": head.version.schema_id,
        "previous": head.previous,
        "new": head.new,
        "records": head.total_record_count,
        "files": head.files,
        "bytes": head.size,
        "at": head.at,
    }


def _commit_json(table_id: str, commit: NewCommit) -> dict[str, object]:
    """A history row as jsonb_to_recordset reads it: a key left out is SQL NULL (a JSON null would be a
    jsonb null, which the ORM's columns never hold)."""
    values: dict[str, object] = {
        "table_id": table_id,
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
