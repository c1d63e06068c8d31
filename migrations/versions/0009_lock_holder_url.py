"""Locks name where their holder answers: `locks.holder_url`.

A replica that finds a table's lock held by another replica forwards the commit to that replica, so
commits to one table arriving at different replicas share one holder and its group commit instead of
taking the lock in turns. The URL is the holder's `advertise_url`; NULL when it set none (the commit
then waits for the lock, as before).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("locks") as batch:
        batch.add_column(sa.Column("holder_url", sa.String(300), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("locks") as batch:
        batch.drop_column("holder_url")
