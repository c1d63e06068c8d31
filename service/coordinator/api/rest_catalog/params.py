"""The path parameters of /v1/{prefix}/databases/{database}/tables/{table}, checked once.

Names are checked here rather than by a `pattern=` on the parameter, because a `$` in a table name is not
a bad name but a Paimon feature the coordinator does not serve: `t$branch_b` (a branch) and `t$snapshots`
(a system table) answer 501, so the client knows it is the feature, not the name, that is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Path, Request

from coordinator.access.tokens import Principal
from coordinator.api.auth import Caller, refusal
from coordinator.api.deps import ServicesDep
from coordinator.errors import CatalogNotFound, Forbidden, InvalidRequest, NotSupported
from coordinator.usecases.tables import table_id_of
from coordinator_client.models import NAME_PATTERN, PRINTABLE_PATTERN

_NAME = re.compile(NAME_PATTERN)


async def known_prefix(
    prefix: Annotated[str, Path(max_length=128, pattern=PRINTABLE_PATTERN)], services: ServicesDep
) -> None:
    """The prefix a client got from GET /v1/config: this coordinator's catalog name."""
    if prefix != services.settings.catalog_name:
        raise CatalogNotFound(
            f"this coordinator serves catalog {services.settings.catalog_name}, not {prefix}"
        )


def checked_database_name(database: str) -> str:
    """Raises: InvalidRequest naming `database`."""
    if not _NAME.match(database):
        raise InvalidRequest(f"{database!r} is not a database name ({NAME_PATTERN})", field="database")
    return database


async def database_name(database: Annotated[str, Path(max_length=256, pattern=PRINTABLE_PATTERN)]) -> str:
    """Raises: InvalidRequest naming `database`."""
    return checked_database_name(database)


DatabaseName = Annotated[str, Depends(database_name)]


@dataclass(frozen=True)
class TableRef:
    database: str
    name: str

    @property
    def id(self) -> str:
        """The native API's id of the table: database.name."""
        return table_id_of(self.database, self.name)


async def table_ref(
    database: DatabaseName, table: Annotated[str, Path(max_length=256, pattern=PRINTABLE_PATTERN)]
) -> TableRef:
    """Raises: NotSupported for a branch or system table (`$`), InvalidRequest for another bad name."""
    if "$" in table:
        raise NotSupported(f"{table}: branches and system tables are not served by the coordinator")
    if not _NAME.match(table):
        raise InvalidRequest(f"{table!r} is not a table name ({NAME_PATTERN})", field="table")
    return TableRef(database, table)


TablePath = Annotated[TableRef, Depends(table_ref)]


async def database_reader(database: DatabaseName, principal: Caller) -> Principal:
    """A route of one database: tokens that read everything, or whose grant is in it. Decided on the
    name alone, so a 403 says nothing of whether the database exists."""
    if not principal.may_read_database(database):
        raise Forbidden(
            f"{principal.name} ({principal.role}, granted {principal.grant()}) may not read database "
            f"{database}"
        )
    return principal


async def table_reader(request: Request, table: TablePath, principal: Caller) -> Principal:
    """A route of one table: tokens that read everything, or whose grant covers it (by name, before
    the table is looked up)."""
    if not principal.may_read(table.database, table.name):
        raise refusal(principal, request.method, table.id)
    return principal


async def table_writer(table: TablePath, principal: Caller) -> Principal:
    """Commit to or roll back the table: admins, and writers whose grant covers its database or it."""
    if not principal.may_write(table.database, table.name):
        raise Forbidden(f"{principal.name} ({principal.role}) may not write to {table.id}")
    return principal


TableWriter = Annotated[Principal, Depends(table_writer)]
