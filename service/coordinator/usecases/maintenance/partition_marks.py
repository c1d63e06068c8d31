"""Partition mark-done through the coordinator (both doors): recorded in the table's history and, in the
same transaction, as a `partition-mark` event of the feed, so a downstream job waits on the feed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import JsonValue

from coordinator.domain.partition_marks import marked_partitions
from coordinator.usecases.maintenance.table_actions import TableActions

ACTION = "mark-partitions-done"


class PartitionMarks:
    def __init__(self, actions: TableActions) -> None:
        self._actions = actions

    def mark_done(
        self,
        table_id: str,
        specs: Sequence[Mapping[str, JsonValue]],
        *,
        actor: str,
        field: str = "partitions",
        as_text: bool = False,
    ) -> list[dict[str, JsonValue]]:
        """Mark whole partitions done; returns them as recorded. Checked before the table is held, so a
        refused mark writes nothing.

        Raises:
            TableNotFound, InvalidRequest (naming the partition), LockUnavailable, CommitConflict (LOCK_LOST).
        """
        actions = self._actions
        table = actions.tables.get(table_id)
        partitions = marked_partitions(table.shape, specs, field=field, as_text=as_text)
        with actions.hold(table) as hold:
            actions.record(hold, table, actor=actor, action=ACTION, details={"partitions": partitions})
        return partitions
