"""Every query the service runs, as small functions over a SQLAlchemy connection."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import (
    JSON,
    Connection,
    Integer,
    RowMapping,
    and_,
    bindparam,
    case,
    cast,
    delete,
    func,
    insert,
    or_,
    select,
    tuple_,
    type_coerce,
    update,
)
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.expression import Executable

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
    action: str = "commit"
    details: dict[str, object] | None = None
    table_id: str = ""


# ---------------------------------------------------------------- tables


def get_table(conn: Connection, table_id: str) -> TableRow | None:
    row = _first(conn, select(TableRow.__table__).where(TableRow.id == table_id))
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
class GroupContext:
    latest_snapshot_id: int
    has_unpublished: bool
    committed: dict[tuple[str, int], StoredCommit]
    """Commits of the group already committed, by (commitUser, identifier)."""
    by_idempotency_key: dict[str, StoredCommit]
    """Recorded answers for the group's Idempotency-Keys."""

    def recorded(self, key: tuple[str, int], idempotency_key: str | None) -> StoredCommit | None:
        """The recorded answer for this request: its Idempotency-Key's first, then its commit's."""
        if idempotency_key is not None and idempotency_key in self.by_idempotency_key:
            return self.by_idempotency_key[idempotency_key]
        return self.committed.get(key)


def group_context(
    conn: Connection, table_id: str, keys: Sequence[tuple[str, int]], idempotency_keys: Sequence[str]
) -> GroupContext | None:
    """What a commit group needs to know first, in one round trip: the latest snapshot, whether a crash
    left snapshots unpublished, and which of the group's commits were already decided."""
    tables, commits = TableRow.__table__, CommitRow.__table__
    unpublished = (
        select(SnapshotRow.snapshot_id)
        .where(SnapshotRow.table_id == tables.c.id, SnapshotRow.published.is_(False))
        .exists()
    )
    decided = and_(
        tuple_(commits.c.commit_user, commits.c.identifier).in_(keys), commits.c.outcome == "committed"
    )
    if idempotency_keys:
        decided = or_(decided, commits.c.idempotency_key.in_(idempotency_keys))
    joined = tables.outerjoin(commits, and_(commits.c.table_id == tables.c.id, decided))
    rows = (
        conn.execute(
            select(tables.c.latest_snapshot_id.label("latest"), unpublished.label("unpublished"), commits)
            .select_from(joined)
            .where(tables.c.id == table_id)
        )
        .mappings()
        .all()
    )
    if not rows:
        return None
    committed, by_key = {}, {}
    for row in rows:
        if row["id"] is None:
            continue
        stored = _commit(row)
        if stored.outcome == "committed" and (stored.commit_user, stored.identifier) in keys:
            committed[(stored.commit_user, stored.identifier)] = stored
        if row["idempotency_key"] is not None and row["idempotency_key"] in idempotency_keys:
            by_key[row["idempotency_key"]] = stored
    return GroupContext(int(rows[0]["latest"]), bool(rows[0]["unpublished"]), committed, by_key)


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


# ---------------------------------------------------------------- snapshots


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


_MARK_PUBLISHED = (
    update(SnapshotRow)
    .where(
        SnapshotRow.table_id == bindparam("b_table"),
        SnapshotRow.published.is_(False),
        SnapshotRow.snapshot_id <= bindparam("b_through"),
    )
    .values(published=True)
)


def mark_published(conn: Connection, table_id: str, *, through: int) -> None:
    """Every snapshot up to `through` is on storage: snapshots are published in order, oldest first."""
    conn.execute(_MARK_PUBLISHED, {"b_table": table_id, "b_through": through})


def get_snapshot(conn: Connection, table_id: str, snapshot_id: int) -> StoredSnapshot | None:
    row = _first(
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


def _first(conn: Connection, query: Executable) -> RowMapping | None:
    """The first row of a query as a mapping, or None."""
    return conn.execute(query).mappings().first()


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
    row = _first(
        conn,
        select(CommitRow.__table__).where(
            CommitRow.table_id == table_id,
            CommitRow.commit_user == commit_user,
            CommitRow.identifier == identifier,
            CommitRow.outcome == "committed",
        ),
    )
    return _commit(row) if row is not None else None


def find_latest_attempt(
    conn: Connection, table_id: str, commit_user: str, identifier: int
) -> StoredCommit | None:
    row = _first(
        conn,
        select(CommitRow.__table__)
        .where(
            CommitRow.table_id == table_id,
            CommitRow.commit_user == commit_user,
            CommitRow.identifier == identifier,
            CommitRow.action == "commit",
        )
        .order_by(CommitRow.id.desc())
        .limit(1),
    )
    return _commit(row) if row is not None else None


def find_by_idempotency_key(conn: Connection, table_id: str, key: str) -> StoredCommit | None:
    row = _first(
        conn,
        select(CommitRow.__table__).where(CommitRow.table_id == table_id, CommitRow.idempotency_key == key),
    )
    return _commit(row) if row is not None else None


@dataclass(frozen=True)
class NewCommit:
    """One history row: a decided commit (committed with snapshots, or rejected with a conflict), or a
    maintenance action (outcome "done", with its details)."""

    commit_user: str
    identifier: int
    outcome: str
    snapshots: list[dict[str, object]]
    timings: dict[str, float]
    conflict: dict[str, object] | None
    idempotency_key: str | None
    created_at: float
    action: str = "commit"
    details: dict[str, object] | None = None


def insert_commits(conn: Connection, table_id: str, commits: Sequence[NewCommit]) -> None:
    if not commits:
        return
    conn.execute(
        insert(CommitRow),
        [
            {
                "table_id": table_id,
                "commit_user": c.commit_user,
                "identifier": c.identifier,
                "outcome": c.outcome,
                "snapshots": json.dumps(c.snapshots),
                "timings": json.dumps(c.timings),
                "conflict": json.dumps(c.conflict) if c.conflict is not None else None,
                "idempotency_key": c.idempotency_key,
                "created_at": c.created_at,
                "action": c.action,
                "details": json.dumps(c.details) if c.details is not None else None,
            }
            for c in commits
        ],
    )


_UPDATE_TIMINGS = (
    update(CommitRow)
    .where(
        CommitRow.table_id == bindparam("b_table"),
        CommitRow.commit_user == bindparam("b_user"),
        CommitRow.identifier == bindparam("b_identifier"),
        CommitRow.outcome == "committed",
    )
    .values(timings=bindparam("b_timings"))
)


def insert_maintenance(
    conn: Connection, table_id: str, *, actor: str, action: str, details: dict[str, object], now: float
) -> None:
    """A maintenance action in the history, beside the commits: who, when, what it changed."""
    record = NewCommit(actor, 0, "done", [], {}, None, None, now, action=action, details=details)
    insert_commits(conn, table_id, [record])


def update_commit_timings(
    conn: Connection, table_id: str, timings: Sequence[tuple[str, int, dict[str, float]]]
) -> None:
    """Complete the phase timings of committed commits, (commitUser, identifier, timings) each, in one
    executemany (pipelined by psycopg)."""
    if timings:
        conn.execute(
            _UPDATE_TIMINGS,
            [
                {"b_table": table_id, "b_user": u, "b_identifier": i, "b_timings": json.dumps(t)}
                for u, i, t in timings
            ],
        )


def list_commits(conn: Connection, table_id: str | None, limit: int) -> list[StoredCommit]:
    """Newest first, of one table or (None) of all tables."""
    query = select(CommitRow.__table__).order_by(CommitRow.id.desc()).limit(limit)
    if table_id is not None:
        query = query.where(CommitRow.table_id == table_id)
    return [_commit(r) for r in conn.execute(query).mappings()]


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
        action=r["action"],
        details=json.loads(r["details"]) if r["details"] else None,
        table_id=r["table_id"],
    )


# ---------------------------------------------------------------- dashboard


@dataclass(frozen=True)
class TableCommitCounts:
    """A table's pointer and the outcomes of its commit attempts so far (maintenance rows not counted)."""

    table_id: str
    uuid: str
    latest_snapshot_id: int
    committed: int
    rejected: int
    last_commit_at: float | None
    """When its latest committed commit was recorded."""


def table_commit_counts(conn: Connection) -> list[TableCommitCounts]:
    commits = CommitRow.__table__
    attempts = and_(commits.c.table_id == TableRow.id, commits.c.action == "commit")
    committed = commits.c.outcome == "committed"
    rows = conn.execute(
        select(
            TableRow.id,
            TableRow.uuid,
            TableRow.latest_snapshot_id,
            func.count(case((committed, 1))),
            func.count(case((commits.c.outcome == "rejected", 1))),
            func.max(case((committed, commits.c.created_at))),
        )
        .select_from(TableRow.__table__.outerjoin(commits, attempts))
        .group_by(TableRow.id, TableRow.uuid, TableRow.latest_snapshot_id)
        .order_by(TableRow.id)
    ).all()
    return [
        TableCommitCounts(r[0], r[1], int(r[2]), int(r[3]), int(r[4]), None if r[5] is None else float(r[5]))
        for r in rows
    ]


def rejections_by_type(conn: Connection) -> dict[str, dict[str, int]]:
    """Rejected commit attempts by table, then by conflict type."""
    kinds = (
        select(CommitRow.table_id, _conflict_type(conn).label("type"))
        .where(CommitRow.action == "commit", CommitRow.outcome == "rejected")
        .subquery()
    )
    # Grouped outside the subquery: PostgreSQL would not match a GROUP BY on an expression whose JSON key
    # is a bound parameter to the same expression in the select list.
    rows = conn.execute(
        select(kinds.c.table_id, kinds.c.type, func.count()).group_by(kinds.c.table_id, kinds.c.type)
    )
    counts: dict[str, dict[str, int]] = {}
    for table_id, kind, count in rows:
        counts.setdefault(table_id, {})[kind or "UNKNOWN"] = int(count)
    return counts


def commit_counts_per_minute(conn: Connection, since: float) -> list[tuple[float, str, int]]:
    """(start of the minute, outcome, count) of the commit attempts recorded since `since`; counted by the
    database, so a busy window is counted whole."""
    scaled = CommitRow.created_at / 60
    # SQLite may lack floor(); its CAST truncates, which is floor for these positive times. Elsewhere CAST
    # to an integer rounds, so floor() it is.
    minute = cast(scaled, Integer) if conn.dialect.name == "sqlite" else func.floor(scaled)
    minutes = (
        select(minute.label("minute"), CommitRow.outcome)
        .where(CommitRow.action == "commit", CommitRow.created_at >= since)
        .subquery()
    )
    rows = conn.execute(
        select(minutes.c.minute, minutes.c.outcome, func.count()).group_by(
            minutes.c.minute, minutes.c.outcome
        )
    )
    return [(float(m) * 60, outcome, int(count)) for m, outcome, count in rows]


def committed_timings(conn: Connection, since: float, limit: int) -> list[dict[str, float]]:
    """The phase timings of the newest `limit` commits committed since `since`."""
    rows = conn.execute(
        select(CommitRow.timings)
        .where(CommitRow.action == "commit", CommitRow.outcome == "committed", CommitRow.created_at >= since)
        .order_by(CommitRow.created_at.desc())
        .limit(limit)
    ).scalars()
    return [json.loads(t) for t in rows]


def latest_rejections(conn: Connection, limit: int) -> list[StoredCommit]:
    """The newest rejected commit attempts of every table, newest first."""
    rows = conn.execute(
        select(CommitRow.__table__)
        .where(CommitRow.action == "commit", CommitRow.outcome == "rejected")
        .order_by(CommitRow.created_at.desc(), CommitRow.id.desc())
        .limit(limit)
    ).mappings()
    return [_commit(r) for r in rows]


def _conflict_type(conn: Connection) -> ColumnElement[str]:
    """The `type` of the conflict JSON kept in a TEXT column: PostgreSQL must cast the text to json to look
    inside; SQLite and MySQL read JSON from text as it is (a CAST to JSON would turn it into a number in
    SQLite)."""
    doc = (
        cast(CommitRow.conflict, JSON)
        if conn.dialect.name == "postgresql"
        else type_coerce(CommitRow.conflict, JSON)
    )
    kind: ColumnElement[str] = doc["type"].as_string()
    return kind
