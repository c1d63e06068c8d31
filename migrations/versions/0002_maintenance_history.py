"""Maintenance actions (expiration, rollback, tags, consumers, orphan cleanup, options) in the history.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("commits") as batch:
        batch.add_column(sa.Column("action", sa.String(32), nullable=False, server_default="commit"))
        batch.add_column(sa.Column("details", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("commits") as batch:
        batch.drop_column("details")
        batch.drop_column("action")
