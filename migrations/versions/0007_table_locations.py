"""One location, one table: `paimon_tables.location_key` (unique) and `paimon_tables.origin`.

`location_key` is domain.locations.location_key of the row's location, the one spelling of its folder,
so a second registration of a folder fails on the unique index even when two race. Existing rows are
keyed here, oldest first (created_at, then id). Rows recorded before this revision may already share a
folder (the fault this revision closes); the oldest keeps the key and the later ones get NULL, which the
unique index allows: the migration must not fail on the data it is meant to repair, and the keyed row
still makes every new registration of that folder lose. A location that names no folder (empty) stays
NULL too.

`origin` records whether the coordinator made the table's folder (`created`) or found it
(`registered`); only a created table's folder may be purged. The database cannot tell which an existing
row was, so existing rows are `registered`: a purge of them is refused rather than risking files the
coordinator did not make. The server default is `registered` for the same reason.

The keys come from the service's own `location_key`; a later change of that function needs a migration
that re-keys the rows.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from coordinator.domain.locations import location_key

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

TABLES = sa.table(
    "paimon_tables",
    sa.column("id", sa.String()),
    sa.column("location", sa.Text()),
    sa.column("created_at", sa.Float()),
    sa.column("location_key", sa.Text()),
)


def upgrade() -> None:
    with op.batch_alter_table("paimon_tables") as batch:
        batch.add_column(sa.Column("location_key", sa.Text(), nullable=True))
        batch.add_column(sa.Column("origin", sa.String(16), nullable=False, server_default="registered"))
    conn = op.get_bind()
    rows = conn.execute(
        sa.select(TABLES.c.id, TABLES.c.location).order_by(TABLES.c.created_at, TABLES.c.id)
    ).all()
    keyed: list[dict[str, str]] = []
    seen: set[str] = set()
    for table_id, location in rows:
        try:
            key = location_key(location)
        except ValueError:
            continue
        if key in seen:
            continue
        seen.add(key)
        keyed.append({"b_id": table_id, "b_key": key})
    if keyed:
        conn.execute(
            sa.update(TABLES)
            .where(TABLES.c.id == sa.bindparam("b_id"))
            .values(location_key=sa.bindparam("b_key")),
            keyed,
        )
    op.create_index("ux_paimon_tables_location_key", "paimon_tables", ["location_key"], unique=True)


def downgrade() -> None:
    op.drop_index("ux_paimon_tables_location_key", table_name="paimon_tables")
    with op.batch_alter_table("paimon_tables") as batch:
        batch.drop_column("origin")
        batch.drop_column("location_key")
