"""Every query the service runs on its own tables, as small functions over a SQLAlchemy connection.

By subject: `tables` (registration and the commit point's pointer), `snapshots`, `commits` (the
history), `dashboard` (the read model of aggregates), `access` (tokens and the audit log), `health`,
and `live_files` (the live-file index, used as `from coordinator.db.repositories import live_files`).
The one exception is the lock table, whose statements live with the lease rules they implement in
`coordinator.locks.lock_table`.

Callers use `from coordinator.db import repositories as repo` and `repo.<name>`.
"""

from coordinator.db.repositories.access import (
    get_token,
    insert_audit,
    insert_token,
    latest_audit,
    list_tokens,
    revoke_token,
)
from coordinator.db.repositories.commits import (
    NewCommit,
    StoredCommit,
    find_by_idempotency_key,
    find_committed,
    find_latest_attempt,
    insert_commits,
    insert_maintenance,
    list_commits,
    mark_overwritten,
    update_commit_timings,
)
from coordinator.db.repositories.dashboard import (
    TableCommitCounts,
    commit_counts_per_minute,
    committed_timings,
    latest_rejections,
    rejections_by_type,
    table_commit_counts,
)
from coordinator.db.repositories.health import ping
from coordinator.db.repositories.snapshots import (
    StoredSnapshot,
    delete_snapshots,
    get_snapshot,
    insert_snapshots,
    list_snapshots,
    mark_published,
    tables_with_unpublished,
    unpublished_snapshots,
)
from coordinator.db.repositories.tables import (
    GroupContext,
    LocationOwner,
    TableTotals,
    TableVersion,
    advance_latest,
    advance_latest_with_stats,
    delete_table,
    get_table,
    group_context,
    insert_table,
    latest_snapshot_id,
    list_tables,
    location_owners,
    set_latest,
    set_stats,
    table_totals,
    table_version,
    tables_without_stats,
    update_schema,
)

__all__ = [
    "GroupContext",
    "LocationOwner",
    "NewCommit",
    "StoredCommit",
    "StoredSnapshot",
    "TableCommitCounts",
    "TableTotals",
    "TableVersion",
    "advance_latest",
    "advance_latest_with_stats",
    "commit_counts_per_minute",
    "committed_timings",
    "delete_snapshots",
    "delete_table",
    "find_by_idempotency_key",
    "find_committed",
    "find_latest_attempt",
    "get_snapshot",
    "get_table",
    "get_token",
    "group_context",
    "insert_audit",
    "insert_commits",
    "insert_maintenance",
    "insert_snapshots",
    "insert_table",
    "insert_token",
    "latest_audit",
    "latest_rejections",
    "latest_snapshot_id",
    "list_commits",
    "list_snapshots",
    "list_tables",
    "list_tokens",
    "location_owners",
    "mark_overwritten",
    "mark_published",
    "ping",
    "rejections_by_type",
    "revoke_token",
    "set_latest",
    "set_stats",
    "table_commit_counts",
    "table_totals",
    "table_version",
    "tables_with_unpublished",
    "tables_without_stats",
    "unpublished_snapshots",
    "update_commit_timings",
    "update_schema",
]
