"""The commit history: decided commits (the dedup and idempotency record) and maintenance actions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, RowMapping, bindparam, delete, insert, select, update

from coordinator.db.models import CommitRow
from coordinator.db.repositories._rows import first


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
    extends: bool = False
    """The snapshots join the committed row of the same commitUser and identifier (see extend_committed)."""


@dataclass(frozen=True, kw_only=True)
class StoredCommit(NewCommit):
    """A history row read back: the row as inserted, with its id and table."""

    id: int
    table_id: str


def find_committed(conn: Connection, table_id: str, commit_user: str, identifier: int) -> StoredCommit | None:
    row = first(
        conn,
        select(CommitRow.__table__).where(
            CommitRow.table_id == table_id,
            CommitRow.commit_user == commit_user,
            CommitRow.identifier == identifier,
            CommitRow.outcome == "committed",
        ),
    )
    return stored_commit(row) if row is not None else None


def find_latest_attempt(
    conn: Connection, table_id: str, commit_user: str, identifier: int
) -> StoredCommit | None:
    row = first(
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
    return stored_commit(row) if row is not None else None


def find_by_idempotency_key(conn: Connection, table_id: str, key: str) -> StoredCommit | None:
    row = first(
        conn,
        select(CommitRow.__table__).where(CommitRow.table_id == table_id, CommitRow.idempotency_key == key),
    )
    return stored_commit(row) if row is not None else None


def mark_overwritten(conn: Connection, table_id: str, keys: Sequence[tuple[str, int]]) -> None:
    """Committed rows whose snapshots an outside writer took before they were published: their history
    says so, and they no longer answer a resend (nor hold its Idempotency-Key), which commits anew."""
    for commit_user, identifier in keys:
        conn.execute(
            update(CommitRow)
            .where(
                CommitRow.table_id == table_id,
                CommitRow.commit_user == commit_user,
                CommitRow.identifier == identifier,
                CommitRow.outcome == "committed",
            )
            .values(outcome="overwritten", idempotency_key=None)
        )


def delete_committed(conn: Connection, table_id: str, keys: Sequence[tuple[str, int]]) -> None:
    """Forget the committed rows of commits that never became visible nor were acknowledged: a resend
    commits them anew."""
    for commit_user, identifier in keys:
        conn.execute(
            delete(CommitRow).where(
                CommitRow.table_id == table_id,
                CommitRow.commit_user == commit_user,
                CommitRow.identifier == identifier,
                CommitRow.outcome == "committed",
            )
        )


def extend_committed(conn: Connection, table_id: str, commits: Sequence[NewCommit]) -> None:
    """Add snapshots to committed rows: a commit whose APPEND and COMPACT arrived as two snapshots (Paimon's
    REST protocol) is one history row, as it is when it arrives as one committable."""
    for c in commits:
        where = (
            CommitRow.table_id == table_id,
            CommitRow.commit_user == c.commit_user,
            CommitRow.identifier == c.identifier,
            CommitRow.outcome == "committed",
        )
        recorded = conn.execute(select(CommitRow.snapshots).where(*where)).scalar_one()
        conn.execute(update(CommitRow).where(*where).values(snapshots=[*recorded, *c.snapshots]))


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
                "snapshots": c.snapshots,
                "timings": c.timings,
                "conflict": c.conflict,
                "idempotency_key": c.idempotency_key,
                "created_at": c.created_at,
                "action": c.action,
                "details": c.details,
            }
            for c in commits
        ],
    )


def insert_maintenance(
    conn: Connection, table_id: str, *, actor: str, action: str, details: dict[str, object], now: float
) -> None:
    """A maintenance action in the history, beside the commits: who, when, what it changed."""
    record = NewCommit(actor, 0, "done", [], {}, None, None, now, action=action, details=details)
    insert_commits(conn, table_id, [record])


_UPDATE_TIMINGS = (
    update(CommitRow)
    .where(
        CommitRow.table_id == bindparam("b_table"),
        CommitRow.commit_user == bindparam("b_user"),
        CommitRow.identifier == bindparam("b_identifier"),
        CommitRow.outcome == "committed",
    )
    .values(timings=bindparam("b_timings", type_=CommitRow.timings.type))
)


def update_commit_timings(
    conn: Connection, table_id: str, timings: Sequence[tuple[str, int, dict[str, float]]]
) -> None:
    """Complete the phase timings of committed commits, (commitUser, identifier, timings) each, in one
    executemany (pipelined by psycopg)."""
    if timings:
        conn.execute(
            _UPDATE_TIMINGS,
            [{"b_table": table_id, "b_user": u, "b_identifier": i, "b_timings": t} for u, i, t in timings],
        )


def list_commits(conn: Connection, table_id: str | None, limit: int) -> list[StoredCommit]:
    """Newest first, of one table or (None) of all tables."""
    query = select(CommitRow.__table__).order_by(CommitRow.id.desc()).limit(limit)
    if table_id is not None:
        query = query.where(CommitRow.table_id == table_id)
    return [stored_commit(r) for r in conn.execute(query).mappings()]


def stored_commit(row: RowMapping) -> StoredCommit:
    """A history row read back (every column of `commits`)."""
    return StoredCommit(
        id=int(row["id"]),
        commit_user=row["commit_user"],
        identifier=int(row["identifier"]),
        outcome=row["outcome"],
        snapshots=row["snapshots"],
        timings=row["timings"],
        conflict=row["conflict"],
        created_at=float(row["created_at"]),
        action=row["action"],
        details=row["details"],
        idempotency_key=row["idempotency_key"],
        table_id=row["table_id"],
    )
