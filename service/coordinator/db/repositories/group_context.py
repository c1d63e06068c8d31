"""A commit group's first look at its table: the head, unpublished snapshots, recorded answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Select, bindparam, select, true, tuple_, union_all

from coordinator.db.models import CommitRow, LiveIndexRow, SnapshotRow, TableRow
from coordinator.db.repositories.commits import (
    COMMITTED,
    IN_BATCH,
    NAMED,
    RecordKey,
    StoredCommit,
    record_key,
    stored_commit,
)
from coordinator.db.repositories.snapshots import UNPUBLISHED
from coordinator.db.repositories.tables import TableVersion


@dataclass(frozen=True)
class GroupContext:
    version: TableVersion
    """The table the row is now: the group is decided against this one."""
    latest_snapshot_id: int
    has_unpublished: bool
    committed: dict[RecordKey, StoredCommit]
    """Commits of the group already committed, by their record keys (commits.record_key)."""
    by_idempotency_key: dict[str, StoredCommit]
    """Recorded answers for the group's Idempotency-Keys."""
    head_body: str | None = None
    """The recorded text of the latest snapshot if it is published (what storage should hold)."""
    indexed_at: int | None = None
    """The snapshot the live-file index stands at."""

    def recorded(self, key: RecordKey, idempotency_key: str | None) -> StoredCommit | None:
        """The recorded answer for this request: its Idempotency-Key's first, then its commit's."""
        if idempotency_key is not None and idempotency_key in self.by_idempotency_key:
            return self.by_idempotency_key[idempotency_key]
        return self.committed.get(key)


def group_context(
    conn: Connection, table_id: str, keys: Sequence[RecordKey], idempotency_keys: Sequence[str]
) -> GroupContext | None:
    """What a commit group needs to know first, in one round trip: the latest snapshot, whether a crash
    left snapshots unpublished, and which of the group's commits were already decided."""
    params: dict[str, object] = {
        "b_table": table_id,
        # A list per column, which an index takes on both databases (SQLite searched a list of pairs by
        # the commit user alone: all of that user's history); pairs not asked for are left out below.
        "b_users": sorted({k[0] for k in keys if len(k) == 2}),
        "b_identifiers": sorted({k[1] for k in keys if len(k) == 2}),
        "b_batch_keys": [(k[0], k[2]) for k in keys if len(k) == 3],
    }
    if idempotency_keys:
        params["b_idempotency_keys"] = list(idempotency_keys)
    statement = _GROUP_CONTEXT_WITH_KEYS if idempotency_keys else _GROUP_CONTEXT
    rows = conn.execute(statement, params).mappings().all()
    if not rows:
        return None
    committed, by_key = {}, {}
    for row in rows:
        if row["id"] is None:
            continue
        stored = stored_commit(row)
        key = record_key(stored.commit_user, stored.identifier, stored.digest)
        if stored.outcome == "committed" and key in keys:
            committed[key] = stored
        if row["idempotency_key"] is not None and row["idempotency_key"] in idempotency_keys:
            by_key[row["idempotency_key"]] = stored
    first_row = rows[0]
    version = TableVersion(str(first_row["table_uuid"]), int(first_row["table_schema_id"]))
    indexed = first_row["indexed_at"]
    return GroupContext(
        version,
        int(first_row["latest"]),
        bool(first_row["unpublished"]),
        committed,
        by_key,
        head_body=first_row["head_body"],
        indexed_at=None if indexed is None else int(indexed),
    )


def _group_context_query(with_idempotency_keys: bool) -> Select[Any]:
    """Built once per variant: on the commit path, building and keying this query cost more than
    running it.

    Every part of it is a probe, so that its cost follows the group and not the table's history: the
    decided commits are looked up by each kind of key through the partial index that holds it (one
    arm each, not one condition OR-ed together, which an index serves only for a custom plan), and
    unpublished snapshots through theirs."""
    tables, commits = TableRow.__table__, CommitRow.__table__
    unpublished = (
        select(SnapshotRow.snapshot_id).where(SnapshotRow.table_id == tables.c.id, UNPUBLISHED).exists()
    )
    of_table = commits.c.table_id == bindparam("b_table")
    arms = [
        select(commits).where(
            of_table, COMMITTED, NAMED,
            commits.c.commit_user.in_(bindparam("b_users", expanding=True)),
            commits.c.identifier.in_(bindparam("b_identifiers", expanding=True)),
        ),
        select(commits).where(
            of_table, COMMITTED, IN_BATCH,
            tuple_(commits.c.commit_user, commits.c.digest).in_(bindparam("b_batch_keys", expanding=True)),
        ),
    ]  # fmt: skip
    if with_idempotency_keys:
        arms.append(
            select(commits).where(
                of_table, commits.c.idempotency_key.in_(bindparam("b_idempotency_keys", expanding=True))
            )
        )
    decided = union_all(*arms).subquery("decided")
    head_body = (
        select(SnapshotRow.body)
        .where(
            SnapshotRow.table_id == tables.c.id,
            SnapshotRow.snapshot_id == tables.c.latest_snapshot_id,
            SnapshotRow.published.is_(True),
        )
        .scalar_subquery()
    )
    index = LiveIndexRow.__table__
    indexed_at = select(index.c.snapshot_id).where(index.c.table_id == tables.c.id).scalar_subquery()
    return (
        select(
            tables.c.uuid.label("table_uuid"),
            tables.c.schema_id.label("table_schema_id"),
            tables.c.latest_snapshot_id.label("latest"),
            unpublished.label("unpublished"),
            head_body.label("head_body"),
            indexed_at.label("indexed_at"),
            decided,
        )
        .select_from(tables.outerjoin(decided, true()))
        .where(tables.c.id == bindparam("b_table"))
    )


_GROUP_CONTEXT = _group_context_query(with_idempotency_keys=False)
_GROUP_CONTEXT_WITH_KEYS = _group_context_query(with_idempotency_keys=True)
