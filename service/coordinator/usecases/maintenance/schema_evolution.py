"""ALTER TABLE: the next schema version, written to storage and then to the database, under the table's hold.

Setting options is the same action with SetOption and RemoveOption changes only: one implementation.
The schema file comes first (written once under its new name: `schema/schema-<N+1>` never existed), then
one fenced transaction moves the table row to it and records the history row; if that transaction fails,
the file is deleted again, so a refused or failed alter leaves storage and the database as they were.
Commits waiting for the table meanwhile see the new schema id under the lock and are decided against it
(catch_up.CatchUp.context); data files keep the schema id they were written with, and readers evolve them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from coordinator.commit.table_state import TableStates
from coordinator.db import repositories as repo
from coordinator.domain.schema_changes import evolve_schema
from coordinator.errors import InvalidRequest
from coordinator.usecases.maintenance.table_actions import TableActions
from coordinator.usecases.tables import Table
from coordinator_client.models import (
    AlterTableRequest,
    RemoveOption,
    SchemaChange,
    SetOption,
    SetOptionsRequest,
)

_CHANGE_FIELD = re.compile(r"^changes\[(\d+)\]")


class SchemaEvolution:
    def __init__(self, actions: TableActions, states: TableStates) -> None:
        self._actions = actions
        self._states = states

    def alter_table(self, table_id: str, request: AlterTableRequest, *, actor: str) -> Table:
        """Apply Paimon schema changes, all or none, as the table's next schema version.

        Raises:
            TableNotFound, InvalidRequest (naming the change, e.g. `changes[2].newDataType`),
            LockUnavailable, CommitConflict (LOCK_LOST).
        """
        details: dict[str, object] = {
            "changes": [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in request.changes]
        }
        return self._evolve(table_id, request.changes, actor=actor, action="alter-table", details=details)

    def set_options(self, table_id: str, request: SetOptionsRequest, *, actor: str) -> Table:
        """Set and remove options as the next schema version (refusals name `set.<key>`/`remove.<key>`).

        Raises:
            TableNotFound, InvalidRequest (naming the option), LockUnavailable, CommitConflict (LOCK_LOST).
        """
        changes: list[SchemaChange] = [SetOption(key=k, value=v) for k, v in request.set.items()]
        changes += [RemoveOption(key=k) for k in request.remove]
        names = [f"set.{k}" for k in request.set] + [f"remove.{k}" for k in request.remove]
        details: dict[str, object] = {"set": dict(request.set), "removed": list(request.remove)}
        try:
            return self._evolve(table_id, changes, actor=actor, action="set-options", details=details)
        except InvalidRequest as error:
            match = _CHANGE_FIELD.match(error.field or "")
            field = names[int(match.group(1))] if match else "set"
            message = _CHANGE_FIELD.sub(field, error.message)
            raise InvalidRequest(message, field=field) from None

    def _evolve(
        self,
        table_id: str,
        changes: Sequence[SchemaChange],
        *,
        actor: str,
        action: str,
        details: dict[str, object],
    ) -> Table:
        actions = self._actions
        table = actions.tables.get(table_id)
        # Refused before the hold when the changes cannot apply to the schema as it is now; decided
        # again under the hold, against the schema another replica may have moved on meanwhile.
        evolve_schema(table.shape.schema, changes, now_millis=actions.clock.millis())
        with actions.hold(table) as hold:
            table = actions.tables.refresh(table_id)
            new = evolve_schema(table.shape.schema, changes, now_millis=actions.clock.millis())
            path = table.layout.schema(new.id)
            actions.fileio.write_new(path, new.to_json().encode())
            try:
                with actions.recorded(
                    hold, table, actor=actor, action=action, details={"schemaId": new.id, **details}
                ) as conn:
                    repo.update_schema(conn, table.id, new.id, new.to_json())
            except BaseException:
                actions.fileio.delete(path)
                raise
            self._states.invalidate(table.id)
            return actions.tables.refresh(table_id)
