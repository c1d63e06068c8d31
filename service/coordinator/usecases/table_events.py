"""The outbox events of changes outside the commit path: maintenance actions and table create/drop,
each written in the transaction that records the change (db/repositories/events.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coordinator.db.repositories.events import NewEvent

if TYPE_CHECKING:  # tables.py writes these events too
    from coordinator.usecases.tables import Table

MAINTENANCE_KINDS = {
    "expire": "expire",
    "rollback": "rollback",
    "create-tag": "tag-create",
    "delete-tag": "tag-delete",
    "alter-table": "schema-change",
    "set-options": "schema-change",
    "mark-partitions-done": "partition-mark",
}
"""The maintenance actions that change what readers of the table see, and the kind of their event.
Consumer changes and orphan cleanup change neither snapshots nor tags: they have no event."""


def maintenance_event(
    table: Table, action: str, actor: str, details: dict[str, Any], now: float
) -> NewEvent | None:
    """The event of a maintenance action, None for one without an event."""
    kind = MAINTENANCE_KINDS.get(action)
    if kind is None:
        return None
    return NewEvent(
        table.id,
        table.database,
        table.name,
        table.uuid,
        kind,
        now,
        snapshot_ids=_snapshot_ids(action, details),
        commit_user=actor,
        partitions=[_marked(p) for p in details.get("partitions", [])] if kind == "partition-mark" else [],
        details=details,
    )


def _marked(partition: dict[str, Any]) -> dict[str, Any]:
    """A marked partition in the event's partitions: a mark adds and removes nothing."""
    return {"partition": partition, "addedFiles": 0, "removedFiles": 0, "addedRows": 0, "removedRows": 0}


def _snapshot_ids(action: str, details: dict[str, Any]) -> list[int]:
    """The snapshots an action names: the expired range, the rollback's target, a tag's snapshot."""
    if action == "expire":
        first, last = details["snapshots"]
        return list(range(int(first), int(last) + 1))
    if action == "rollback":
        return [int(details["to"]["snapshotId"])]
    if "snapshotId" in details:
        return [int(details["snapshotId"])]
    return []


def table_event(
    table_id: str, table_uuid: str, kind: str, now: float, details: dict[str, Any] | None = None
) -> NewEvent:
    """A table created (`table-create`) or dropped (`table-drop`)."""
    database, _, name = table_id.partition(".")
    return NewEvent(table_id, database, name, table_uuid, kind, now, details=details)
