"""The history rows of a multi-table transaction's other tables, for a history read one table at a time."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select

from coordinator.db.models import CommitRow
from coordinator.db.repositories.commits import StoredCommit, stored_commit


def committed_rows_of(
    conn: Connection, table_ids: Sequence[str], commit_user: str, identifier: int
) -> list[StoredCommit]:
    """The committed rows of `table_ids` under this commitUser and identifier, oldest first (several
    per table for the batch identifier, which names no commit)."""
    if not table_ids:
        return []
    query = (
        select(CommitRow.__table__)
        .where(
            CommitRow.table_id.in_(list(table_ids)),
            CommitRow.commit_user == commit_user,
            CommitRow.identifier == identifier,
            CommitRow.outcome == "committed",
        )
        .order_by(CommitRow.id)
    )
    return [stored_commit(r) for r in conn.execute(query).mappings()]
