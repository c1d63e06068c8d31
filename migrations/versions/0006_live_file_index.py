"""The live-file index: one row per live data file of each table's latest snapshot.

Conflict checks and the Spark writer's sequence numbers read it per (partition, bucket) instead of
holding every live file in memory, and a restarted service or a replica starts from it instead of
reading every manifest. Tables that already exist have no `live_index` row: the first commit to each
builds its index once from storage.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "live_files",
        sa.Column(
            "table_id",
            sa.String(256),
            sa.ForeignKey("paimon_tables.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("partition", sa.LargeBinary(), primary_key=True),
        sa.Column("bucket", sa.Integer(), primary_key=True),
        sa.Column("level", sa.Integer(), primary_key=True),
        sa.Column("file_name", sa.String(1024), primary_key=True),
        sa.Column("total_buckets", sa.Integer(), nullable=False),
        sa.Column("max_sequence_number", sa.BigInteger(), nullable=False),
        sa.Column("added_in", sa.BigInteger(), nullable=True),
        sa.Column("removed_in", sa.BigInteger(), nullable=True),
        sa.Column("entry", sa.LargeBinary(), nullable=False),
    )
    op.create_index("ix_live_files_name", "live_files", ["table_id", "file_name"])
    op.create_index(
        "ix_live_files_removed",
        "live_files",
        ["table_id", "removed_in"],
        postgresql_where=sa.text("removed_in IS NOT NULL"),
        sqlite_where=sa.text("removed_in IS NOT NULL"),
    )
    op.create_table(
        "live_index",
        sa.Column(
            "table_id",
            sa.String(256),
            sa.ForeignKey("paimon_tables.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("snapshot_id", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("live_index")
    op.drop_index("ix_live_files_removed", table_name="live_files")
    op.drop_index("ix_live_files_name", table_name="live_files")
    op.drop_table("live_files")
