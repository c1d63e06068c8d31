"""Publishers of the commit event feed: `event_publishers` (a durable position and a lease per publisher)
and `event_dead_letters` (events a webhook gave up on).

Each configured publisher (NATS JetStream, each webhook) has one row, shared by the replicas: the cursor
it has delivered through, the owner and epoch of the lease that lets one replica publish at a time, and
its counts. The lease is measured on the database clock, as the lock table's.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "event_publishers",
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("target", sa.String(500), nullable=False),
        sa.Column("cursor", sa.BigInteger, nullable=False),
        sa.Column("owner", sa.String(200), nullable=True),
        sa.Column("epoch", sa.BigInteger, nullable=False),
        sa.Column("lease_expires_ms", sa.BigInteger, nullable=False),
        sa.Column("delivered", sa.BigInteger, nullable=False),
        sa.Column("failures", sa.BigInteger, nullable=False),
        sa.Column("last_error", sa.String(500), nullable=True),
    )
    op.create_table(
        "event_dead_letters",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True
        ),
        sa.Column("publisher", sa.String(128), nullable=False),
        sa.Column("event_id", sa.BigInteger, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("last_error", sa.String(500), nullable=True),
        sa.Column("failed_at", sa.Float, nullable=False),
        sa.UniqueConstraint("publisher", "event_id", name="uq_event_dead_letters_publisher_event"),
    )


def downgrade() -> None:
    op.drop_table("event_dead_letters")
    op.drop_table("event_publishers")
