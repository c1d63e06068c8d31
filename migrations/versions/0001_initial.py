"""Tables, snapshots index, commit outcomes and the lock table.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "paimon_tables",
        sa.Column("id", sa.String(256), primary_key=True),
        sa.Column("database", sa.String(128), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("schema_id", sa.BigInteger(), nullable=False),
        sa.Column("schema_json", sa.Text(), nullable=False),
        sa.Column("latest_snapshot_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
    )
    op.create_table(
        "snapshots",
        sa.Column(
            "table_id",
            sa.String(256),
            sa.ForeignKey("paimon_tables.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("snapshot_id", sa.BigInteger(), primary_key=True),
        sa.Column("commit_user", sa.String(200), nullable=False),
        sa.Column("commit_identifier", sa.BigInteger(), nullable=False),
        sa.Column("commit_kind", sa.String(16), nullable=False),
        sa.Column("time_millis", sa.BigInteger(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("published", sa.Boolean(), nullable=False),
    )
    op.create_index(
        "ix_snapshots_unpublished",
        "snapshots",
        ["table_id"],
        postgresql_where=sa.text("NOT published"),
        sqlite_where=sa.text("NOT published"),
    )
    op.create_table(
        "commits",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "table_id",
            sa.String(256),
            sa.ForeignKey("paimon_tables.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("commit_user", sa.String(200), nullable=False),
        sa.Column("identifier", sa.BigInteger(), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("snapshots", sa.Text(), nullable=False),
        sa.Column("timings", sa.Text(), nullable=False),
        sa.Column("conflict", sa.Text(), nullable=True),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
    )
    op.create_index("ix_commits_table_id", "commits", ["table_id"])
    op.create_index(
        "ux_commits_committed",
        "commits",
        ["table_id", "commit_user", "identifier"],
        unique=True,
        postgresql_where=sa.text("outcome = 'committed'"),
        sqlite_where=sa.text("outcome = 'committed'"),
    )
    op.create_index(
        "ux_commits_idempotency_key",
        "commits",
        ["table_id", "idempotency_key"],
        unique=True,
        postgresql_where=sa.text("idempotency_key IS NOT NULL"),
        sqlite_where=sa.text("idempotency_key IS NOT NULL"),
    )
    op.create_table(
        "locks",
        sa.Column("lock_id", sa.String(300), primary_key=True),
        sa.Column("owner", sa.String(200), nullable=True),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("acquired_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("locks")
    op.drop_index("ux_commits_idempotency_key", table_name="commits")
    op.drop_index("ux_commits_committed", table_name="commits")
    op.drop_index("ix_commits_table_id", table_name="commits")
    op.drop_table("commits")
    op.drop_index("ix_snapshots_unpublished", table_name="snapshots")
    op.drop_table("snapshots")
    op.drop_table("paimon_tables")
