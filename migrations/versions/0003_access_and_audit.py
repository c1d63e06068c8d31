"""Bearer tokens with roles, the audit log of administrative actions, commits by time for dashboards.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("database", sa.String(128), nullable=True),
        sa.Column("table_name", sa.String(128), nullable=True),
        sa.Column("secret_sha256", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("revoked_at", sa.Float(), nullable=True),
    )
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("target", sa.String(300), nullable=False),
        sa.Column("details", sa.Text(), nullable=True),
    )
    op.create_index("ix_commits_created_at", "commits", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_commits_created_at", table_name="commits")
    op.drop_table("audit_log")
    op.drop_table("api_tokens")
