"""Databases as rows of their own: `paimon_databases` (name, options, created_at).

Until now a database existed only as the `database` column of its tables. Paimon's REST catalog creates,
lists, gets and drops databases on their own, an empty one included, so each gets a row. The existing
tables' databases are backfilled here, each created when its oldest table was, with no options.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

JSON_DOCUMENT = sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
TABLES = sa.table("paimon_tables", sa.column("database", sa.String()), sa.column("created_at", sa.Float()))


def upgrade() -> None:
    databases = op.create_table(
        "paimon_databases",
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("options", JSON_DOCUMENT, nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
    )
    conn = op.get_bind()
    found = conn.execute(
        sa.select(TABLES.c.database, sa.func.min(TABLES.c.created_at)).group_by(TABLES.c.database)
    ).all()
    if found:
        op.bulk_insert(databases, [{"name": name, "options": {}, "created_at": at} for name, at in found])


def downgrade() -> None:
    op.drop_table("paimon_databases")
