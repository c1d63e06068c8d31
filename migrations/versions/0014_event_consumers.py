"""Named consumers of the event feed: `event_consumers`, the last cursor each was delivered.

GET /events and GET /events/stream with `consumer=<name>` record the cursor they delivered, the filter
they read with and when; GET /ops/consumers shows each consumer's lag from it.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "event_consumers",
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("delivered_through", sa.BigInteger, nullable=False),
        sa.Column("table_id", sa.String(257), nullable=True),
        sa.Column("database", sa.String(128), nullable=True),
        sa.Column("kind", sa.String(32), nullable=True),
        sa.Column("last_seen_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("event_consumers")
