"""`live_files` rows no longer reference `paimon_tables` by a foreign key.

The database checked the reference once per inserted row: a commit of 10,000 files paid 10,000 lookups
of one table row inside its commit point (about 35 ms on PostgreSQL). Nothing relied on it:
- every commit point that inserts index rows also inserts the snapshot's row, whose own reference
  fails the whole transaction if the table is gone;
- dropping a table deletes its index rows itself (`repositories.tables.delete_table`).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# 0006 left the constraint unnamed: each database named it its own way (SQLite not at all), so the
# batch operation names it by this convention to find it.
_NAMING = {"fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s"}
_FK = "fk_live_files_table_id_paimon_tables"


def upgrade() -> None:
    name = _table_fk_name()
    if op.get_bind().dialect.name == "sqlite":  # SQLite alters a table only by copying it
        with op.batch_alter_table("live_files", naming_convention=_NAMING) as batch:
            batch.drop_constraint(name or _FK, type_="foreignkey")
    elif name is not None:
        op.drop_constraint(name, "live_files", type_="foreignkey")


def downgrade() -> None:
    with op.batch_alter_table("live_files") as batch:
        batch.create_foreign_key(_FK, "paimon_tables", ["table_id"], ["id"], ondelete="CASCADE")


def _table_fk_name() -> str | None:
    """The reference's name; None where the database gave it none (SQLite, before a downgrade named it)."""
    for fk in sa.inspect(op.get_bind()).get_foreign_keys("live_files"):
        if fk["referred_table"] == "paimon_tables":
            return fk["name"] or None
    return None
