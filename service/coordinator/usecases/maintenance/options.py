"""Changing a table's options: the next schema version, written to storage and then to the database."""

from __future__ import annotations

import dataclasses

from coordinator.db import repositories as repo
from coordinator.domain.retention import Retention
from coordinator.errors import InvalidRequest
from coordinator.usecases.commits import Committer
from coordinator.usecases.maintenance.table_actions import TableActions
from coordinator.usecases.tables import Table
from coordinator_client.models import SetOptionsRequest

FIXED_OPTIONS = frozenset(
    {"bucket", "bucket-key", "primary-key", "partition", "merge-engine", "sequence.field", "path"}
)
"""Options that decide where rows and files are: changing them would orphan what is written."""


class TableOptions:
    def __init__(self, actions: TableActions, committer: Committer) -> None:
        self._actions = actions
        self._committer = committer

    def set_options(self, table_id: str, request: SetOptionsRequest, *, actor: str) -> Table:
        """Write the next schema version with the options changed.

        Raises:
            TableNotFound, InvalidRequest (naming the option), LockUnavailable, CommitConflict (LOCK_LOST).
        """
        actions = self._actions
        table = actions.tables.get(table_id)
        for key in [*request.set, *request.remove]:
            if key in FIXED_OPTIONS:
                where = "set" if key in request.set else "remove"
                raise InvalidRequest(
                    f"option {key!r} cannot be changed on an existing table", field=f"{where}.{key}"
                )
        with actions.hold(table) as hold:
            table = actions.tables.refresh(table_id)
            schema = table.shape.schema
            options = {k: v for k, v in schema.options.items() if k not in request.remove}
            options.update(request.set)
            try:
                Retention.of(options)
            except ValueError as error:
                named = next((k for k in request.set if k in str(error)), None)
                raise InvalidRequest(str(error), field=f"set.{named}" if named else "set") from None
            new = dataclasses.replace(
                schema, id=schema.id + 1, options=options, time_millis=actions.clock.millis()
            )
            actions.fileio.write_new(table.layout.schema(new.id), new.to_json().encode())
            details: dict[str, object] = {
                "schemaId": new.id,
                "set": dict(request.set),
                "removed": list(request.remove),
            }
            try:
                with actions.recorded(
                    hold, table, actor=actor, action="set-options", details=details
                ) as conn:
                    repo.update_schema(conn, table.id, new.id, new.to_json())
            except BaseException:
                actions.fileio.delete(table.layout.schema(new.id))
                raise
            self._committer.forget_state(table.id)
            return actions.tables.refresh(table_id)
