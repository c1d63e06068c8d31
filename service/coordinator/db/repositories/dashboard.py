"""The dashboard's read model: aggregates over the commit history, counted by the database."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Integer, case, cast, func, select

from coordinator.db.models import CommitRow
from coordinator.db.repositories.commits import StoredCommit, stored_commit
from coordinator.db.scope import TableScope, within


@dataclass(frozen=True)
class TableCommitCounts:
    """The outcomes of a table's commit attempts so far (maintenance rows not counted)."""

    committed: int
    rejected: int
    overwritten: int
    """Acknowledged commits whose snapshot a writer outside the coordinator overwrote (then applied
    again)."""


def table_commit_counts(conn: Connection, table_ids: Sequence[str]) -> dict[str, TableCommitCounts]:
    """The commit outcomes of these tables (one page of them), counted by the database."""
    if not table_ids:
        return {}
    committed = CommitRow.outcome == "committed"
    rows = conn.execute(
        select(
            CommitRow.table_id,
            func.count(case((committed, 1))),
            func.count(case((CommitRow.outcome == "rejected", 1))),
            func.count(case((CommitRow.outcome == "overwritten", 1))),
        )
        .where(CommitRow.table_id.in_(table_ids), CommitRow.action == "commit")
        .group_by(CommitRow.table_id)
    ).all()
    return {r[0]: TableCommitCounts(int(r[1]), int(r[2]), int(r[3])) for r in rows}


def rejections_by_type(conn: Connection, table_ids: Sequence[str] | None = None) -> dict[str, dict[str, int]]:
    """Rejected commit attempts by table (of these tables, or all), then by conflict type."""
    rejected = select(CommitRow.table_id, CommitRow.conflict["type"].as_string().label("type")).where(
        CommitRow.action == "commit", CommitRow.outcome == "rejected"
    )
    if table_ids is not None:
        rejected = rejected.where(CommitRow.table_id.in_(table_ids))
    kinds = rejected.subquery()
    # Grouped outside the subquery: PostgreSQL would not match a GROUP BY on an expression whose JSON key
    # is a bound parameter to the same expression in the select list.
    rows = conn.execute(
        select(kinds.c.table_id, kinds.c.type, func.count()).group_by(kinds.c.table_id, kinds.c.type)
    )
    counts: dict[str, dict[str, int]] = {}
    for table_id, kind, count in rows:
        counts.setdefault(table_id, {})[kind or "UNKNOWN"] = int(count)
    return counts


def commit_counts_per_minute(
    conn: Connection, since: float, scope: TableScope | None = None
) -> list[tuple[float, str, int]]:
    """(start of the minute, outcome, count) of the commit attempts recorded since `since` (of the
    tables inside `scope`, if given); counted by the database, so a busy window is counted whole."""
    scaled = CommitRow.created_at / 60
    # SQLite may lack floor(); its CAST truncates, which is floor for these positive times. Elsewhere CAST
    # to an integer rounds, so floor() it is.
    minute = cast(scaled, Integer) if conn.dialect.name == "sqlite" else func.floor(scaled)
    minutes = (
        select(minute.label("minute"), CommitRow.outcome)
        .where(CommitRow.action == "commit", CommitRow.created_at >= since, within(scope, CommitRow.table_id))
        .subquery()
    )
    rows = conn.execute(
        select(minutes.c.minute, minutes.c.outcome, func.count()).group_by(
            minutes.c.minute, minutes.c.outcome
        )
    )
    return [(float(m) * 60, outcome, int(count)) for m, outcome, count in rows]


def committed_timings(
    conn: Connection, since: float, limit: int, scope: TableScope | None = None
) -> list[dict[str, float]]:
    """The phase timings of the newest `limit` commits committed since `since` (inside `scope`)."""
    rows = conn.execute(
        select(CommitRow.timings)
        .where(
            CommitRow.action == "commit",
            CommitRow.outcome == "committed",
            CommitRow.created_at >= since,
            within(scope, CommitRow.table_id),
        )
        .order_by(CommitRow.created_at.desc())
        .limit(limit)
    ).scalars()
    return list(rows)


def latest_rejections(conn: Connection, limit: int, scope: TableScope | None = None) -> list[StoredCommit]:
    """The newest rejected commit attempts of every table (inside `scope`), newest first."""
    rows = conn.execute(
        select(CommitRow.__table__)
        .where(
            CommitRow.action == "commit",
            CommitRow.outcome == "rejected",
            within(scope, CommitRow.table_id),
        )
        .order_by(CommitRow.created_at.desc(), CommitRow.id.desc())
        .limit(limit)
    ).mappings()
    return [stored_commit(r) for r in rows]
