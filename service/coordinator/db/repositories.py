"""Every query the service runs, as small functions over a SQLAlchemy connection."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, delete, insert, select, update

from coordinator.db.models import CommitRow, SnapshotRow, TableRow


@dataclass(frozen=True)
class StoredSnapshot:
    snapshot_id: int
    commit_user: str
    commit_identifier: int
    commit_kind: str
    body: str
    published: bool


@dataclass(frozen=True)
class StoredCommit:
    id: int
    commit_user: str
    identifier: int
    outcome: str
    snapshots: list[dict[str, object]]
    timings: dict[str, float]
    conflict: dict[str, object] | None
    created_at: float


# ---------------------------------------------------------------- tables


def get_table(conn: Connection, table_id: str) -> TableRow | None:
    row = conn.execute(select(TableRow.__table__).where(TableRow.id == table_id)).mappings().first()
    return TableRow(**row) if row is not None else None


def list_tables(conn: Connection) -> list[TableRow]:
    rows = conn.execute(select(TableRow.__table__).order_by(TableRow.id)).mappings().all()
    return [TableRow(**r) for r in rows]


def insert_table(conn: Connection, row: dict[str, object]) -> None:
    conn.execute(insert(TableRow), [row])


def delete_table(conn: Connection, table_id: str) -> bool:
    conn.execute(delete(CommitRow).where(CommitRow.table_id == table_id))
    conn.execute(delete(SnapshotRow).where(SnapshotRow.table_id == table_id))
    return bool(conn.execute(delete(TableRow).where(TableRow.id == table_id)).rowcount == 1)


@dataclass(frozen=True)
class CommitContext:
    latest_snapshot_id: int
    has_unpublished: bool
    committed_id: int | None


def commit_context(
    conn: Connection, table_id: str, commit_user: str, identifier: int
) -> CommitContext | None:
    """What a commit needs to know first, in one round trip: the latest snapshot, whether a crash left
    snapshots unpublished, and whether this commitUser + identifier is already committed."""
    unpublished = (
        select(SnapshotRow.snapshot_id)
        .where(SnapshotRow.table_id == TableRow.id, SnapshotRow.published.is_(False))
        .exists()
    )
    committed = (
        select(CommitRow.id)
        .where(
            CommitRow.table_id == TableRow.id,
            CommitRow.commit_user == commit_user,
            CommitRow.identifier == identifier,
            CommitRow.outcome == "committed",
        )
        .scalar_subquery()
    )
    row = conn.execute(
        select(TableRow.latest_snapshot_id, unpublished, committed).where(TableRow.id == table_id)
    ).first()
    if row is None:
        return None
    return CommitContext(int(row[0]), bool(row[1]), None if row[2] is None else int(row[2]))


def get_commit(conn: Connection, commit_id: int) -> StoredCommit:
    row = conn.execute(select(CommitRow.__table__).where(CommitRow.id == commit_id)).mappings().one()
    return _commit(row)


def latest_snapshot_id(conn: Connection, table_id: str) -> int | None:
    value = conn.execute(select(TableRow.latest_snapshot_id).where(TableRow.id == table_id)).scalar()
    return None if value is None else int(value)


def advance_latest(conn: Connection, table_id: str, expected: int, new: int) -> bool:
    """Move the table's pointer from `expected` to `new`; False when someone else moved it."""
    result = conn.execute(
        update(TableRow)
        .where(TableRow.id == table_id, TableRow.latest_snapshot_id == expected)
        .values(latest_snapshot_id=new)
    )
    return bool(result.rowcount == 1)


# ---------------------------------------------------------------- snapshots


def insert_snapshots(conn: Connection, table_id: str, rows: Sequence[dict[str, object]]) -> None:
    conn.execute(insert(SnapshotRow), [{"table_id": table_id, **r} for r in rows])


def unpublished_snapshots(conn: Connection, table_id: str) -> list[StoredSnapshot]:
    rows = conn.execute(
        select(SnapshotRow.__table__)
        .where(SnapshotRow.table_id == table_id, SnapshotRow.published.is_(False))
        .order_by(SnapshotRow.snapshot_id)
    ).mappings()
    return [_snapshot(r) for r in rows]


def tables_with_unpublished(conn: Connection) -> list[str]:
    rows = conn.execute(
        select(SnapshotRow.table_id).where(SnapshotRow.published.is_(False)).distinct()
    ).scalars()
    return list(rows)


def mark_published(conn: Connection, table_id: str, snapshot_ids: Sequence[int]) -> None:
    conn.execute(
        update(SnapshotRow)
        .where(SnapshotRow.table_id == table_id, SnapshotRow.snapshot_id.in_(list(snapshot_ids)))
        .values(published=True)
    )


def get_snapshot(conn: Connection, table_id: str, snapshot_id: int) -> StoredSnapshot | None:
    row = (
        conn.execute(
            select(SnapshotRow.__table__).where(
                SnapshotRow.table_id == table_id, SnapshotRow.snapshot_id == snapshot_id
            )
        )
        .mappings()
        .first()
    )
    return _snapshot(row) if row is not None else None


def list_snapshots(conn: Connection, table_id: str, limit: int, before: int | None) -> list[StoredSnapshot]:
    query = select(SnapshotRow.__table__).where(SnapshotRow.table_id == table_id)
    if before is not None:
        query = query.where(SnapshotRow.snapshot_id < before)
    rows = conn.execute(query.order_by(SnapshotRow.snapshot_id.desc()).limit(limit)).mappings()
    return [_snapshot(r) for r in rows]


def _snapshot(row: object) -> StoredSnapshot:
    r = dict(row)  # type: ignore[call-overload]
    return StoredSnapshot(
        int(r["snapshot_id"]),
        r["commit_user"],
        int(r["commit_identifier"]),
        r["commit_kind"],
        r["body"],
        bool(r["published"]),
    )


# ---------------------------------------------------------------- commits


def find_committed(conn: Connection, table_id: str, commit_user: str, identifier: int) -> StoredCommit | None:
    row = (
        conn.execute(
            select(CommitRow.__table__).where(
                CommitRow.table_id == table_id,
                CommitRow.commit_user == commit_user,
                CommitRow.identifier == identifier,
                CommitRow.outcome == "committed",
            )
        )
        .mappings()
        .first()
    )
    return _commit(row) if row is not None else None


def find_latest_attempt(
    conn: Connection, table_id: str, commit_user: str, identifier: int
) -> StoredCommit | None:
    row = (
        conn.execute(
            select(CommitRow.__table__)
            .where(
                CommitRow.table_id == table_id,
                CommitRow.commit_user == commit_user,
                CommitRow.identifier == identifier,
            )
            .order_by(CommitRow.id.desc())
            .limit(1)
        )
        .mappings()
        .first()
    )
    return _commit(row) if row is not None else None


def find_by_idempotency_key(conn: Connection, table_id: str, key: str) -> StoredCommit | None:
    row = (
        conn.execute(
            select(CommitRow.__table__).where(
                CommitRow.table_id == table_id, CommitRow.idempotency_key == key
            )
        )
        .mappings()
        .first()
    )
    return _commit(row) if row is not None else None


def insert_commit(
    conn: Connection,
    *,
    table_id: str,
    commit_user: str,
    identifier: int,
    outcome: str,
    snapshots: list[dict[str, object]],
    timings: dict[str, float],
    conflict: dict[str, object] | None,
    idempotency_key: str | None,
    created_at: float,
) -> None:
    conn.execute(
        insert(CommitRow),
        [
            {
                "table_id": table_id,
                "commit_user": commit_user,
                "identifier": identifier,
                "outcome": outcome,
                "snapshots": json.dumps(snapshots),
                "timings": json.dumps(timings),
                "conflict": json.dumps(conflict) if conflict is not None else None,
                "idempotency_key": idempotency_key,
                "created_at": created_at,
            }
        ],
    )


def update_commit_timings(
    conn: Connection, table_id: str, commit_user: str, identifier: int, timings: dict[str, float]
) -> None:
    conn.execute(
        update(CommitRow)
        .where(
            CommitRow.table_id == table_id,
            CommitRow.commit_user == commit_user,
            CommitRow.identifier == identifier,
            CommitRow.outcome == "committed",
        )
        .values(timings=json.dumps(timings))
    )


def list_commits(conn: Connection, table_id: str, limit: int) -> list[StoredCommit]:
    rows = conn.execute(
        select(CommitRow.__table__)
        .where(CommitRow.table_id == table_id)
        .order_by(CommitRow.id.desc())
        .limit(limit)
    ).mappings()
    return [_commit(r) for r in rows]


def _commit(row: object) -> StoredCommit:
    r = dict(row)  # type: ignore[call-overload]
    return StoredCommit(
        id=int(r["id"]),
        commit_user=r["commit_user"],
        identifier=int(r["identifier"]),
        outcome=r["outcome"],
        snapshots=json.loads(r["snapshots"]),
        timings=json.loads(r["timings"]),
        conflict=json.loads(r["conflict"]) if r["conflict"] else None,
        created_at=float(r["created_at"]),
    )
