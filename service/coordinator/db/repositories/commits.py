"""The commit history: decided commits (the dedup and idempotency record) and maintenance actions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import (
    ColumnElement,
    Connection,
    RowMapping,
    Update,
    bindparam,
    delete,
    insert,
    literal_column,
    select,
    update,
)

from coordinator.db.models import CommitRow
from coordinator.db.repositories._rows import first
from coordinator.db.scope import TableScope
from paimon_format.snapshot import BATCH_IDENTIFIER

# The predicates of the partial unique indexes (models.CommitRow), spelled as literals: a prepared
# statement's generic plan can use a partial index only where the query states its predicate, and a
# bound parameter states nothing. Without them a commit's lookups walked the table's whole history.
COMMITTED = CommitRow.outcome == literal_column("'committed'")
NOT_COMMITTED: ColumnElement[bool] = CommitRow.outcome != literal_column("'committed'")
"""The predicate of ix_commits_attempts, as a literal: rejected, overwritten, maintenance rows."""
NAMED: ColumnElement[bool] = CommitRow.identifier != literal_column(str(BATCH_IDENTIFIER))
"""A commit with an identifier of its own: found by (table, commitUser, identifier)."""
IN_BATCH: ColumnElement[bool] = CommitRow.identifier == literal_column(str(BATCH_IDENTIFIER))
"""A batch commit (Paimon's batch writers share one identifier): found by (table, commitUser, digest)."""


def committed_as(identifier: int) -> tuple[ColumnElement[bool], ColumnElement[bool]]:
    """The committed rows of commits with this identifier, as the partial index that holds them says."""
    return COMMITTED, (IN_BATCH if identifier == BATCH_IDENTIFIER else NAMED)


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
    extends: int | None = None
    """The id of the committed row the snapshots join, instead of a row of their own (extend_committed)."""
    digest: str | None = None
    """The digest of the request's changes (domain.commit_digest); None for maintenance actions."""


@dataclass(frozen=True, kw_only=True)
class StoredCommit(NewCommit):
    """A history row read back: the row as inserted, with its id and table."""

    id: int
    table_id: str


RecordKey = tuple[str, int] | tuple[str, int, str]
"""How the history finds a commit's record: by (commitUser, identifier); for the batch identifier, which
names no commit (Paimon's batch writers all use it), by (commitUser, identifier, digest of its changes)."""


def record_key(commit_user: str, identifier: int, digest: str | None) -> RecordKey:
    if identifier == BATCH_IDENTIFIER and digest is not None:
        return commit_user, identifier, digest
    return commit_user, identifier


def find_committed(
    conn: Connection, table_id: str, commit_user: str, identifier: int, digest: str | None = None
) -> StoredCommit | None:
    """The committed row that a commit of these changes would be answered from: the one of its
    (commitUser, identifier), and for the batch identifier, which names no commit, the one of its
    changes as well (`digest`; without it, the user's latest batch commit)."""
    query = select(CommitRow.__table__).where(
        CommitRow.table_id == table_id,
        CommitRow.commit_user == commit_user,
        CommitRow.identifier == identifier,
        *committed_as(identifier),
    )
    if identifier == BATCH_IDENTIFIER and digest is not None:
        query = query.where(CommitRow.digest == digest)
    row = first(conn, query.order_by(CommitRow.id.desc()).limit(1))
    return stored_commit(row) if row is not None else None


def find_latest_attempt(
    conn: Connection, table_id: str, commit_user: str, identifier: int
) -> StoredCommit | None:
    """The latest attempt of (commitUser, identifier) that did not commit (rejected, or overwritten by an
    outside writer): asked once find_committed found none, through ix_commits_attempts."""
    row = first(
        conn,
        select(CommitRow.__table__)
        .where(
            CommitRow.table_id == table_id,
            CommitRow.commit_user == commit_user,
            CommitRow.identifier == identifier,
            NOT_COMMITTED,
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


def mark_overwritten(conn: Connection, table_id: str, snapshots: Sequence[SnapshotOf]) -> int:
    """Committed rows whose snapshots an outside writer took before they were published: their history
    says so, and they no longer answer a resend (nor hold its Idempotency-Key), which commits anew.
    Returns how many rows that was (0: the snapshots were not ours)."""
    ids = _rows_holding(conn, table_id, snapshots)
    if ids:
        conn.execute(
            update(CommitRow).where(CommitRow.id.in_(ids)).values(outcome="overwritten", idempotency_key=None)
        )
    return len(ids)


def delete_committed(conn: Connection, table_id: str, snapshots: Sequence[SnapshotOf]) -> None:
    """Forget the committed rows of commits that never became visible nor were acknowledged: a resend
    commits them anew."""
    ids = _rows_holding(conn, table_id, snapshots)
    if ids:
        conn.execute(delete(CommitRow).where(CommitRow.id.in_(ids)))


SnapshotOf = tuple[str, int, int]
"""(commitUser, identifier, snapshot id): a snapshot and the commit that made it."""


def _rows_holding(conn: Connection, table_id: str, snapshots: Sequence[SnapshotOf]) -> list[int]:
    """The ids of the committed rows that recorded these snapshots. A commit is found by its snapshot,
    not by its name alone: one batch commit user has many committed rows."""
    ids: set[int] = set()
    for commit_user, identifier, snapshot_id in snapshots:
        rows = conn.execute(
            select(CommitRow.id, CommitRow.snapshots).where(
                CommitRow.table_id == table_id,
                CommitRow.commit_user == commit_user,
                CommitRow.identifier == identifier,
                *committed_as(identifier),
            )
        )
        ids.update(row_id for row_id, refs in rows if any(r.get("id") == snapshot_id for r in refs))
    return sorted(ids)


def extend_committed(conn: Connection, commits: Sequence[NewCommit]) -> None:
    """Add snapshots to committed rows: a commit whose APPEND and COMPACT arrived as two snapshots (Paimon's
    REST protocol) is one history row, as it is when it arrives as one committable."""
    for c in commits:
        recorded = conn.execute(select(CommitRow.snapshots).where(CommitRow.id == c.extends)).scalar_one()
        conn.execute(
            update(CommitRow).where(CommitRow.id == c.extends).values(snapshots=[*recorded, *c.snapshots])
        )


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
                "digest": c.digest,
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


def _timings_update(key: ColumnElement[bool], kind: ColumnElement[bool]) -> Update:
    """The timings of one kind of committed commit, found by its key through that kind's partial index."""
    return (
        update(CommitRow)
        .where(
            CommitRow.table_id == bindparam("b_table"),
            CommitRow.commit_user == bindparam("b_user"),
            key,
            kind,
            COMMITTED,
        )
        .values(timings=bindparam("b_timings", type_=CommitRow.timings.type))
    )


_UPDATE_TIMINGS = _timings_update(CommitRow.identifier == bindparam("b_identifier"), NAMED)
_UPDATE_BATCH_TIMINGS = _timings_update(CommitRow.digest == bindparam("b_digest"), IN_BATCH)
"""A commit user's batch commits are told apart by their changes."""


def update_commit_timings(
    conn: Connection, table_id: str, timings: Sequence[tuple[str, int, str, dict[str, float]]]
) -> None:
    """Complete the phase timings of committed commits, (commitUser, identifier, digest, timings) each,
    in one executemany per kind of commit (pipelined by psycopg)."""
    for statement, batch in ((_UPDATE_TIMINGS, False), (_UPDATE_BATCH_TIMINGS, True)):
        rows = [
            {"b_table": table_id, "b_user": u, "b_identifier": i, "b_digest": d, "b_timings": t}
            for u, i, d, t in timings
            if (i == BATCH_IDENTIFIER) == batch
        ]
        if rows:
            conn.execute(statement, rows)


@dataclass(frozen=True)
class HistoryFilter:
    """A search of a table's history: commit users starting with a prefix, an identifier, an outcome."""

    user_prefix: str | None = None
    identifier: int | None = None
    outcome: str | None = None


def list_commits(
    conn: Connection,
    table_id: str | None,
    limit: int,
    scope: TableScope | None = None,
    search: HistoryFilter | None = None,
) -> list[StoredCommit]:
    """Newest first, of one table or (None) of all tables, inside `scope` if given, matching `search`."""
    query = select(CommitRow.__table__).limit(limit)
    if table_id is None:
        query = query.order_by(CommitRow.id.desc())
    else:
        # The page is the end of the table's run of ix_commits_table_history. Asked as `table_id = :t
        # ORDER BY id`, PostgreSQL may read the primary key back from the newest row of the catalog
        # instead, filtering out every newer row of the other tables: it does when the table holds a
        # large share of the history, however long ago it was written. As a range, the table stays part
        # of the order, which only this index gives without a sort.
        query = query.where(CommitRow.table_id.between(table_id, table_id)).order_by(
            CommitRow.table_id.desc(), CommitRow.id.desc()
        )
    if search is not None and search.user_prefix:
        # Escaped: a `%` or `_` in a commit user is that character, not a wildcard.
        query = query.where(CommitRow.commit_user.startswith(search.user_prefix, autoescape=True))
    if search is not None and search.identifier is not None:
        query = query.where(CommitRow.identifier == search.identifier)
    if search is not None and search.outcome is not None:
        query = query.where(CommitRow.outcome == search.outcome)
    if scope is not None:
        query = query.where(scope.table_ids(CommitRow.table_id))
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
        digest=row["digest"],
    )
