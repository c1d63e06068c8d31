"""Consumers: a streaming reader's `consumer/consumer-<id>` file protects the snapshots it has yet to read
from expiration. Storage is the truth, shared with Paimon's engines and pypaimon."""

from __future__ import annotations

import json

from coordinator.errors import ConsumerNotFound, InvalidRequest
from coordinator.storage.fileio import FileIO
from coordinator.usecases.maintenance.table_actions import TableActions
from coordinator.usecases.tables import Table
from coordinator_client.models import ConsumerModel


class Consumers:
    def __init__(self, actions: TableActions) -> None:
        self._actions = actions

    def set_consumer(
        self, table_id: str, consumer_id: str, next_snapshot_id: int, *, actor: str
    ) -> ConsumerModel:
        """Register or move a consumer; it protects `next_snapshot_id` and later from expiration.

        Raises: TableNotFound, InvalidRequest (a snapshot that is expired or beyond the next one),
        LockUnavailable, CommitConflict (LOCK_LOST).
        """
        actions = self._actions
        table = actions.tables.get(table_id)
        with actions.hold(table) as hold:
            earliest = actions.earliest_id(table)
            latest = actions.tables.latest_snapshot_id(table.id)
            low = earliest if earliest is not None else 1
            if not low <= next_snapshot_id <= latest + 1:
                raise InvalidRequest(
                    f"nextSnapshotId must be between the earliest retained snapshot ({low}) and the next "
                    f"one ({latest + 1}), got {next_snapshot_id}",
                    field="nextSnapshotId",
                )
            path = table.layout.consumer(consumer_id)
            actions.fileio.overwrite(path, json.dumps({"nextSnapshot": next_snapshot_id}).encode())
            actions.record(
                hold,
                table,
                actor=actor,
                action="set-consumer",
                details={"consumerId": consumer_id, "nextSnapshotId": next_snapshot_id},
            )
        return next(c for c in read_consumers(actions.fileio, table) if c.consumer_id == consumer_id)

    def list_consumers(self, table_id: str) -> list[ConsumerModel]:
        return read_consumers(self._actions.fileio, self._actions.tables.get(table_id))

    def delete_consumer(self, table_id: str, consumer_id: str, *, actor: str) -> None:
        """Raises: TableNotFound, ConsumerNotFound, LockUnavailable, CommitConflict (LOCK_LOST)."""
        actions = self._actions
        table = actions.tables.get(table_id)
        with actions.hold(table) as hold:
            path = table.layout.consumer(consumer_id)
            if not actions.fileio.exists(path):
                raise ConsumerNotFound(f"consumer {consumer_id!r} of {table_id} does not exist")
            actions.fileio.delete(path)
            actions.record(
                hold, table, actor=actor, action="delete-consumer", details={"consumerId": consumer_id}
            )


def read_consumers(fileio: FileIO, table: Table) -> list[ConsumerModel]:
    """The table's consumers by id, as their files on storage say."""
    out = []
    for stored in fileio.walk(table.layout.consumer_dir):
        name = stored.path.rsplit("/", 1)[-1]
        if not name.startswith("consumer-"):
            continue
        try:
            next_snapshot = int(json.loads(fileio.read(stored.path))["nextSnapshot"])
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            continue  # deleted meanwhile, or not a consumer file
        out.append(
            ConsumerModel(
                consumer_id=name[len("consumer-") :],
                next_snapshot_id=next_snapshot,
                modified_at=stored.modified_seconds,
            )
        )
    return sorted(out, key=lambda c: c.consumer_id)
