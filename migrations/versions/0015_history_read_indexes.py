"""A table's history read newest first, and a commit's attempts, through indexes made for them.

`ix_commits_table_id` (the table alone) becomes `ix_commits_table_history` (table, id): the history page
(GET /tables/{id}/commits, newest first) reads its page from the end of the table's run of the index
instead of sorting every history row of the table, which grows by one row a commit around the clock. It
serves every read by the table alone as well, so a commit writes no more index entries than before.

`ix_commits_attempts` (table, commitUser, identifier, id) holds only the rows that did not commit
(rejected, overwritten, maintenance): the outcome of a commit with no committed row (GET .../commits/
{user}/{identifier}, how a client resolves a timeout; "unknown" for one that never arrived) is a probe of
it, where it was a walk through the table's history. A commit that succeeds writes nothing to it.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_NOT_COMMITTED = "outcome <> 'committed'"


def upgrade() -> None:
    op.create_index("ix_commits_table_history", "commits", ["table_id", "id"])
    op.drop_index("ix_commits_table_id", table_name="commits")
    op.create_index(
        "ix_commits_attempts",
        "commits",
        ["table_id", "commit_user", "identifier", "id"],
        postgresql_where=sa.text(_NOT_COMMITTED),
        sqlite_where=sa.text(_NOT_COMMITTED),
    )


def downgrade() -> None:
    op.drop_index("ix_commits_attempts", table_name="commits")
    op.create_index("ix_commits_table_id", "commits", ["table_id"])
    op.drop_index("ix_commits_table_history", table_name="commits")
