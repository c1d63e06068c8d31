"""Snapshot rows: every snapshot of a table, its body as on storage, and whether it is published."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import (
    Connection,
    RowMapping,
    bindparam,
    delete,
    insert,
    select,
    text,
    update,
)

from coordinator.db.models import SnapshotRow
from coordinator.db.repositories._rows import first


@dataclass(frozen=True)
class StoredSnapshot:
    snapshot_id: int
    commit_user: str
    commit_identifier: int
    commit_kind: str
    body: str
    published: bool


def insert_snapshots(conn: Connection, table_id: str, rows: Sequence[dict[str, object]]) -> None:
    if not rows:
        return  # an empty parameter list would run one INSERT with no values at all
    conn.execute(insert(SnapshotRow), [{"table_id": table_id, **r} for r in rows])


def delete_snapshots(
    conn: Connection, table_id: str, *, below: int | None = None, above: int | None = None
) -> None:
    """Forget expired (`below`) or rolled-back (`above`) snapshots."""
    query = delete(SnapshotRow).where(SnapshotRow.table_id == table_id)
    if below is not None:
        query = query.where(SnapshotRow.snapshot_id < below)
    if above is not None:
        query = query.where(SnapshotRow.snapshot_id > above)
    conn.execute(query)


UNPUBLISHED = text(f"NOT {SnapshotRow.__tablename__}.published")
"""The predicate of ix_snapshots_unpublished as the index states it, so that the planner uses it: with
`published IS false` (or SQLAlchemy's `published = 0` on SQLite) it read every snapshot row of the table.
Text, since SQLAlchemy spells a boolean expression `... = 1` on SQLite."""


def unpublished_snapshots(conn: Connection, table_id: str) -> list[StoredSnapshot]:
    rows = conn.execute(
        select(SnapshotRow.__table__)
        .where(SnapshotRow.table_id == table_id, UNPUBLISHED)
        .order_by(SnapshotRow.snapshot_id)
    ).mappings()
    return [_snapshot(r) for r in rows]


def tables_with_unpublished(conn: Connection) -> list[str]:
    rows = conn.execute(select(SnapshotRow.table_id).where(UNPUBLISHED).distinct()).scalars()
    return list(rows)


_MARK_PUBLISHED = (
    update(SnapshotRow)
    .where(
        SnapshotRow.table_id == bindparam("b_table"),
        UNPUBLISHED,
        # `+ 0`: not a range of the primary key, which SQLite preferred, walking every published row
        # below; the few unpublished rows come from their own index.
        SnapshotRow.snapshot_id + 0 <= bindparam("b_through"),
    )
    .values(published=True)
)


def mark_published(conn: Connection, table_id: str, *, through: int) -> None:
    """Every snapshot up to `through` is on storage: snapshots are published in order, oldest first."""
    conn.execute(_MARK_PUBLISHED, {"b_table": table_id, "b_through": through})


def get_snapshot(conn: Connection, table_id: str, snapshot_id: int) -> StoredSnapshot | None:
    row = first(
        conn,
        select(SnapshotRow.__table__).where(
            SnapshotRow.table_id == table_id, SnapshotRow.snapshot_id == snapshot_id
        ),
    )
    return _snapshot(row) if row is not None else None


def list_snapshots(conn: Connection, table_id: str, limit: int, before: int | None) -> list[StoredSnapshot]:
    query = select(SnapshotRow.__table__).where(SnapshotRow.table_id == table_id)
    if before is not None:
        query = query.where(SnapshotRow.snapshot_id < before)
    rows = conn.execute(query.order_by(SnapshotRow.snapshot_id.desc()).limit(limit)).mappings()
    return [_snapshot(r) for r in rows]


def latest_published(conn: Connection, table_id: str) -> StoredSnapshot | None:
    """The newest snapshot whose file is on storage."""
    row = first(
        conn,
        select(SnapshotRow.__table__)
        .where(SnapshotRow.table_id == table_id, SnapshotRow.published.is_(True))
        .order_by(SnapshotRow.snapshot_id.desc())
        .limit(1),
    )
    return _snapshot(row) if row is not None else None


def earliest_recorded_id(conn: Connection, table_id: str) -> int | None:
    """The oldest snapshot the table still records (expiration forgets the ones it removes)."""
    query = select(SnapshotRow.snapshot_id).where(SnapshotRow.table_id == table_id)
    found = conn.execute(query.order_by(SnapshotRow.snapshot_id).limit(1)).scalar()
    return None if found is None else int(found)


def _snapshot(row: RowMapping) -> StoredSnapshot:
    return StoredSnapshot(
        int(row["snapshot_id"]),
        row["commit_user"],
        int(row["commit_identifier"]),
        row["commit_kind"],
        row["body"],
        bool(row["published"]),
    )
