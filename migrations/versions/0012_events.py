"""The outbox of commit events: `events`, written at the commit point, and `event_retention`.

Every change to a table (commits, transactions, rollbacks, tags, expirations, schema changes, table
create and drop) writes its event rows in the transaction that makes it; GET /events reads them by
cursor (`events.id`). `event_retention` holds the cursor retention has deleted through, so a consumer
resuming from before it gets 410 instead of a silent gap.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_JSON = sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True
        ),
        sa.Column("table_id", sa.String(257), nullable=False),
        sa.Column("database", sa.String(128), nullable=False),
        sa.Column("table_name", sa.String(128), nullable=False),
        sa.Column("table_uuid", sa.String(36), nullable=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("snapshot_ids", _JSON, nullable=False),
        sa.Column("commit_user", sa.String(200), nullable=True),
        sa.Column("commit_identifier", sa.BigInteger, nullable=True),
        sa.Column("partitions", _JSON, nullable=False),
        sa.Column("details", _JSON, nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_events_table", "events", ["table_id", "id"])
    op.create_index("ix_events_created_at", "events", ["created_at"])
    op.create_table(
        "event_retention",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("pruned_through", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("event_retention")
    op.drop_index("ix_events_created_at", table_name="events")
    op.drop_index("ix_events_table", table_name="events")
    op.drop_table("events")
