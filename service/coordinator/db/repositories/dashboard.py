"""The dashboard's read model: aggregates over the commit history, counted by the database."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, Integer, and_, case, cast, func, select

from coordinator.db.models import CommitRow, TableRow
from coordinator.db.repositories.commits import StoredCommit, stored_commit


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
        select(CommitRow.table_id, CommitRow.conflict["type"].as_string().label("type"))
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
    return list(rows)


def latest_rejections(conn: Connection, limit: int) -> list[StoredCommit]:
    """The newest rejected commit attempts of every table, newest first."""
    rows = conn.execute(
        select(CommitRow.__table__)
        .where(CommitRow.action == "commit", CommitRow.outcome == "rejected")
        .order_by(CommitRow.created_at.desc(), CommitRow.id.desc())
        .limit(limit)
    ).mappings()
    return [stored_commit(r) for r in rows]
