"""JSON documents in JSON columns (JSONB on PostgreSQL): the history's snapshots, timings, conflict and
details, and the audit log's details, until now JSON text in TEXT columns.

PostgreSQL converts each value in place (`USING col::jsonb`). SQLite keeps JSON as text either way, so
its batch copy only changes the declared type (Alembic does not CAST into JSON, which in SQLite would
turn the text into a number).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

JSON_DOCUMENT = sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
COLUMNS = {
    "commits": (("snapshots", False), ("timings", False), ("conflict", True), ("details", True)),
    "audit_log": (("details", True),),
}
"""The columns converted, per table, with whether they are nullable."""


def upgrade() -> None:
    for table, columns in COLUMNS.items():
        with op.batch_alter_table(table) as batch:
            for name, nullable in columns:
                # Only ever written by json.dumps or NULL; an empty text would not parse, so it is NULL.
                using = f"NULLIF({name}, '')::jsonb" if nullable else f"{name}::jsonb"
                batch.alter_column(
                    name,
                    type_=JSON_DOCUMENT,
                    existing_type=sa.Text(),
                    existing_nullable=nullable,
                    postgresql_using=using,
                )


def downgrade() -> None:
    for table, columns in COLUMNS.items():
        with op.batch_alter_table(table) as batch:
            for name, nullable in columns:
                batch.alter_column(
                    name,
                    type_=sa.Text(),
                    existing_type=JSON_DOCUMENT,
                    existing_nullable=nullable,
                    postgresql_using=f"{name}::text",
                )
