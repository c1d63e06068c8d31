"""Commits are recorded with the digest of their changes; the batch identifier names no commit.

A resend is answered from the record only when it asks for the same changes (domain.commit_digest). A
commit user may now have many committed batch commits (identifier Long.MAX_VALUE, Paimon's
BatchWriteBuilder.COMMIT_IDENTIFIER) on one table, told apart by their digests; any other identifier is
still committed at most once per commit user and table.

Rows recorded before this revision have no digest: a resend of one is answered from it, as before.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_BATCH = "9223372036854775807"


def upgrade() -> None:
    with op.batch_alter_table("commits") as batch:
        batch.add_column(sa.Column("digest", sa.String(64), nullable=True))
    op.drop_index("ux_commits_committed", table_name="commits")
    _create_committed_index(f"outcome = 'committed' AND identifier <> {_BATCH}")
    op.create_index(
        "ux_commits_batch_committed",
        "commits",
        ["table_id", "commit_user", "digest"],
        unique=True,
        postgresql_where=sa.text(f"outcome = 'committed' AND identifier = {_BATCH}"),
        sqlite_where=sa.text(f"outcome = 'committed' AND identifier = {_BATCH}"),
    )


def downgrade() -> None:
    # Fails, as it must, where one commit user has several batch commits on a table: 0010 cannot say so.
    op.drop_index("ux_commits_batch_committed", table_name="commits")
    op.drop_index("ux_commits_committed", table_name="commits")
    _create_committed_index("outcome = 'committed'")
    with op.batch_alter_table("commits") as batch:
        batch.drop_column("digest")


def _create_committed_index(where: str) -> None:
    op.create_index(
        "ux_commits_committed",
        "commits",
        ["table_id", "commit_user", "identifier"],
        unique=True,
        postgresql_where=sa.text(where),
        sqlite_where=sa.text(where),
    )
