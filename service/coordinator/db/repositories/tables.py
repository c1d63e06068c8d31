"""Table rows: registration, schema, and the pointer the commit point moves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy import (
    Connection,
    and_,
    bindparam,
    case,
    delete,
    func,
    insert,
    or_,
    select,
    tuple_,
    update,
)

from coordinator.db.models import CommitRow, LiveFileRow, LiveIndexRow, SnapshotRow, TableRow
from coordinator.db.repositories._rows import first
from coordinator.db.scope import TableScope, within


def get_table(conn: Connection, table_id: str) -> TableRow | None:
    row = first(conn, select(TableRow.__table__).where(TableRow.id == table_id))
    return TableRow(**row) if row is not None else None


class TableVersion(NamedTuple):
    """Which table a row is and which schema it has: a table dropped and created again under the same id
    has another uuid, and every schema change (options included) writes the next schema id."""

    uuid: str
    schema_id: int


def table_version(conn: Connection, table_id: str, *, for_share: bool = False) -> TableVersion | None:
    """The table row's uuid and schema id, None when there is no such table; with `for_share`, the row
    stays locked against a drop or a schema change until the caller's transaction ends (PostgreSQL,
    MariaDB; SQLite writers are serialised anyway)."""
    query = select(TableRow.uuid, TableRow.schema_id).where(TableRow.id == table_id)
    if for_share:
        query = query.with_for_update(read=True)
    row = conn.execute(query).first()
    return None if row is None else TableVersion(str(row[0]), int(row[1]))


def list_tables(
    conn: Connection,
    *,
    limit: int,
    after: tuple[str, str] | None = None,
    database: str | None = None,
    name_prefix: str | None = None,
    scope: TableScope | None = None,
) -> list[TableRow]:
    """At most `limit` tables in (database, name) order, those after `after` (keyset pagination on
    ux_paimon_tables_database_name, never OFFSET), of one database and with a name prefix if given,
    inside `scope` if given."""
    query = select(TableRow.__table__)
    if scope is not None:
        query = query.where(scope.tables(TableRow.database, TableRow.name))
    if after is not None:
        query = query.where(tuple_(TableRow.database, TableRow.name) > tuple_(*after))
    if database is not None:
        query = query.where(TableRow.database == database)
    if name_prefix:
        query = query.where(TableRow.name.like(_like_prefix(name_prefix), escape="\\"))
    query = query.order_by(TableRow.database, TableRow.name).limit(limit)
    return [TableRow(**r) for r in conn.execute(query).mappings().all()]


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"{escaped}%"


@dataclass(frozen=True)
class TableTotals:
    """Every table's size summed: the sums cover the tables whose size is known."""

    tables: int
    unknown: int
    total_record_count: int
    file_count: int
    file_bytes: int


def table_totals(conn: Connection, scope: TableScope | None = None) -> TableTotals:
    """Over every table, or those inside `scope`."""
    row = conn.execute(
        select(
            func.count(),
            func.count(case((TableRow.file_count.is_(None), 1))),
            func.coalesce(func.sum(TableRow.total_record_count), 0),
            func.coalesce(func.sum(TableRow.file_count), 0),
            func.coalesce(func.sum(TableRow.file_bytes), 0),
        ).where(within(scope, TableRow.id))
    ).one()
    return TableTotals(*(int(v) for v in row))


_ADVANCE_WITH_STATS = (
    update(TableRow)
    .where(TableRow.id == bindparam("b_table"), TableRow.latest_snapshot_id == bindparam("b_expected"))
    .values(
        latest_snapshot_id=bindparam("b_new"),
        total_record_count=bindparam("b_records"),
        file_count=TableRow.file_count + bindparam("b_files"),
        file_bytes=TableRow.file_bytes + bindparam("b_bytes"),
        last_commit_at=bindparam("b_at"),
    )
)


_ADVANCE_WITH_STATS_AT_VERSION = _ADVANCE_WITH_STATS.where(
    TableRow.uuid == bindparam("b_uuid"), TableRow.schema_id == bindparam("b_schema")
)


def advance_latest_with_stats(
    conn: Connection,
    table_id: str,
    expected: int,
    new: int,
    *,
    total_record_count: int,
    files: int,
    size: int,
    at: float,
    version: TableVersion | None = None,
) -> bool:
    """`advance_latest`, and in the same statement the table's size: the new head's record count, the
    live files moved by `files` and their bytes by `size` (an unknown count, NULL, stays unknown), and
    the time of the commit. With `version`, only while the row is still that table with that schema.
    False when someone else moved the pointer or changed the table (nothing changes then)."""
    params: dict[str, object] = {
        "b_table": table_id,
        "b_expected": expected,
        "b_new": new,
        "b_records": total_record_count,
        "b_files": files,
        "b_bytes": size,
        "b_at": at,
    }
    statement = _ADVANCE_WITH_STATS
    if version is not None:
        params.update(b_uuid=version.uuid, b_schema=version.schema_id)
        statement = _ADVANCE_WITH_STATS_AT_VERSION
    return bool(conn.execute(statement, params).rowcount == 1)


def set_stats(
    conn: Connection,
    table_id: str,
    *,
    total_record_count: int | None,
    file_count: int | None,
    file_bytes: int | None,
    at_snapshot: int | None = None,
) -> bool:
    """Write a size computed from a whole snapshot (registration, rollback, the backfill); with
    `at_snapshot`, only while that snapshot is still the head. False when nothing was written."""
    query = update(TableRow).where(TableRow.id == table_id)
    if at_snapshot is not None:
        query = query.where(TableRow.latest_snapshot_id == at_snapshot)
    values = {"total_record_count": total_record_count, "file_count": file_count, "file_bytes": file_bytes}
    return bool(conn.execute(query.values(**values)).rowcount == 1)


def tables_without_stats(conn: Connection) -> list[tuple[str, int]]:
    """(table id, latest snapshot id) of the tables whose size is not known."""
    rows = conn.execute(
        select(TableRow.id, TableRow.latest_snapshot_id)
        .where(or_(TableRow.file_count.is_(None), TableRow.file_bytes.is_(None)))
        .order_by(TableRow.id)
    ).all()
    return [(r[0], int(r[1])) for r in rows]


def committed_since(conn: Connection, since: float) -> list[tuple[str, int]]:
    """(table id, latest snapshot id) of the tables with a commit at or after `since` (epoch seconds)."""
    rows = conn.execute(
        select(TableRow.id, TableRow.latest_snapshot_id)
        .where(TableRow.last_commit_at >= since)
        .order_by(TableRow.id)
    ).all()
    return [(r[0], int(r[1])) for r in rows]


def insert_table(conn: Connection, row: dict[str, object]) -> None:
    conn.execute(insert(TableRow), [row])


@dataclass(frozen=True)
class LocationOwner:
    """A table as the location checks see it."""

    id: str
    location: str
    location_key: str
    origin: str


def location_owners(
    conn: Connection, key: str, ancestors: Sequence[str], *, excluding: str | None = None, limit: int = 10
) -> list[LocationOwner]:
    """Tables whose folder is `key`'s, encloses it (its key is one of `ancestors`) or lies inside it,
    but not table `excluding`; at most `limit`, the folder itself and its enclosing ones first.

    Two indexed lookups and one prefix match, so the cost does not grow with the number of tables
    elsewhere. The prefix match is exact: SQLite's LIKE ignores ASCII case, so `substr` decides and LIKE
    (its wildcards escaped) narrows where an index can serve it."""
    inside = f"{key}/"
    query = (
        select(TableRow.id, TableRow.location, TableRow.location_key, TableRow.origin)
        .where(
            or_(
                TableRow.location_key.in_([key, *ancestors]),
                and_(
                    TableRow.location_key.like(_like_prefix(inside), escape="\\"),
                    func.substr(TableRow.location_key, 1, len(inside)) == inside,
                ),
            )
        )
        .order_by(func.length(TableRow.location_key), TableRow.location_key)
        .limit(limit)
    )
    if excluding is not None:
        query = query.where(TableRow.id != excluding)
    # Every row found has a key: NULL matches neither IN nor LIKE.
    return [LocationOwner(t, loc, found or "", origin) for t, loc, found, origin in conn.execute(query).all()]


def delete_table(conn: Connection, table_id: str) -> bool:
    conn.execute(delete(CommitRow).where(CommitRow.table_id == table_id))
    conn.execute(delete(SnapshotRow).where(SnapshotRow.table_id == table_id))
    conn.execute(delete(LiveFileRow).where(LiveFileRow.table_id == table_id))
    conn.execute(delete(LiveIndexRow).where(LiveIndexRow.table_id == table_id))
    return bool(conn.execute(delete(TableRow).where(TableRow.id == table_id)).rowcount == 1)


def latest_snapshot_id(conn: Connection, table_id: str) -> int | None:
    value = conn.execute(select(TableRow.latest_snapshot_id).where(TableRow.id == table_id)).scalar()
    return None if value is None else int(value)


def update_schema(conn: Connection, table_id: str, schema_id: int, schema_json: str) -> None:
    conn.execute(
        update(TableRow).where(TableRow.id == table_id).values(schema_id=schema_id, schema_json=schema_json)
    )


_ADVANCE_LATEST = (
    update(TableRow)
    .where(TableRow.id == bindparam("b_table"), TableRow.latest_snapshot_id == bindparam("b_expected"))
    .values(latest_snapshot_id=bindparam("b_new"))
)


def set_latest(conn: Connection, table_id: str, snapshot_id: int) -> None:
    """Point the table at `snapshot_id` whatever it pointed at: a rollback, under the lock."""
    conn.execute(update(TableRow).where(TableRow.id == table_id).values(latest_snapshot_id=snapshot_id))


def advance_latest(conn: Connection, table_id: str, expected: int, new: int) -> bool:
    """Move the table's pointer from `expected` to `new`; False when someone else moved it."""
    result = conn.execute(_ADVANCE_LATEST, {"b_table": table_id, "b_expected": expected, "b_new": new})
    return bool(result.rowcount == 1)
