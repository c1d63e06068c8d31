"""Table sizes in the database: the latest snapshot's record count, live data files and their bytes, and
the time of the last commit, on `paimon_tables`; and the (database, name) index the table list pages on.

The commit point keeps these columns in step with `latest_snapshot_id`, so the overview, the dashboard
and the table list never read storage on a request.

Existing rows: no storage is read here (a migration must not depend on the warehouse being reachable).
Their size columns start NULL, which means "not known"; a commit on such a table keeps them NULL (a delta
on an unknown size is unknown) except the record count, which every snapshot carries. The service fills
them once, at start-up, in the background (usecases.table_stats.Backfill): for each row still NULL it
reads the live files of the latest snapshot and writes the size only if the head has not moved meanwhile.
Tables without a snapshot get zeros right here, as that needs no storage. `last_commit_at` is backfilled
from the commit history, which the database already has.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

COLUMNS = (
    ("total_record_count", sa.BigInteger()),
    ("file_count", sa.BigInteger()),
    ("file_bytes", sa.BigInteger()),
    ("last_commit_at", sa.Float()),
)


def upgrade() -> None:
    with op.batch_alter_table("paimon_tables") as batch:
        for name, type_ in COLUMNS:
            batch.add_column(sa.Column(name, type_, nullable=True))
        batch.create_index("ux_paimon_tables_database_name", ["database", "name"], unique=True)
    op.execute(
        "UPDATE paimon_tables SET total_record_count = 0, file_count = 0, file_bytes = 0 "
        "WHERE latest_snapshot_id = 0"
    )
    op.execute(
        "UPDATE paimon_tables SET last_commit_at = (SELECT MAX(c.created_at) FROM commits c "
        "WHERE c.table_id = paimon_tables.id AND c.action = 'commit' AND c.outcome = 'committed')"
    )


def downgrade() -> None:
    with op.batch_alter_table("paimon_tables") as batch:
        batch.drop_index("ux_paimon_tables_database_name")
        for name, _ in reversed(COLUMNS):
            batch.drop_column(name)
