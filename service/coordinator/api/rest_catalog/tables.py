"""Tables: create (the coordinator picks the location and writes schema-0), list, get, alter, drop."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from coordinator.api.auth import Admin, Caller
from coordinator.api.deps import LockThreadsDep, ServicesDep
from coordinator.api.rest_catalog.errors import responses
from coordinator.api.rest_catalog.models import CreateTableRequest, GetTableResponse, ListTablesResponse
from coordinator.api.rest_catalog.paging import (
    DEFAULT,
    MaxResults,
    NamePattern,
    PageToken,
    TableNamePattern,
    TableType,
)
from coordinator.api.rest_catalog.params import DatabaseName, TablePath, database_reader, table_reader
from coordinator.api.rest_catalog.schemas import native_create, table_response
from coordinator.errors import (
    CommitConflict,
    DatabaseNotFound,
    InvalidRequest,
    LocationInUse,
    LockUnavailable,
    NotSupported,
    PurgeRefused,
    TableAlreadyExists,
    TableNotFound,
)
from coordinator_client.models import AlterTableRequest

# Every route names a database: one outside the token's grant is 403 before anything is looked up.
router = APIRouter(prefix="/{prefix}/databases/{database}/tables", dependencies=[Depends(database_reader)])


@router.get("", responses=responses(InvalidRequest, DatabaseNotFound))
def list_tables(
    database: DatabaseName,
    services: ServicesDep,
    caller: Caller,
    max_results: MaxResults = DEFAULT,
    page_token: PageToken = None,
    pattern: TableNamePattern = None,
    table_type: TableType = None,
) -> ListTablesResponse:
    """Names in order, one page at a time; `tableNamePattern` takes a name or a `prefix%`. Every table
    here is a Paimon table (`tableType` `table`); other types list nothing. A token granted one table
    lists that one."""
    wanted = NamePattern.of(pattern, field="tableNamePattern")
    services.databases.get(database)
    if table_type not in (None, "", "table"):
        return ListTablesResponse(tables=[])
    try:
        page = services.tables.page(
            limit=max_results,
            page_token=page_token,
            database=database,
            name_prefix=wanted.prefix,
            scope=caller.scope,
        )
    except InvalidRequest as error:
        raise InvalidRequest(error.message, field="pageToken") from None
    names, next_page = wanted.select([e.name for e in page.entries], page.next_page_token)
    return ListTablesResponse(tables=names, next_page_token=next_page)


@router.post("", responses=responses(InvalidRequest, DatabaseNotFound, TableAlreadyExists, LocationInUse))
def create_table(
    database: DatabaseName, body: CreateTableRequest, services: ServicesDep, _admin: Admin
) -> None:
    """Create a table at `<warehouse>/<database>.db/<table>` and write its `schema/schema-0`. The
    database must exist; the location is the coordinator's to choose (a `path` option is refused)."""
    request = native_create(database, body)
    services.databases.get(database)
    services.tables.create(request)


@router.get(
    "/{table}", responses=responses(TableNotFound, NotSupported), dependencies=[Depends(table_reader)]
)
def get_table(table: TablePath, services: ServicesDep) -> GetTableResponse:
    """The table as Paimon's clients load it: `isExternal` false (so they commit through POST
    .../commit), `path` its location with its scheme, `id` its uuid."""
    return table_response(services.tables.entry(table.id))


@router.post(
    "/{table}",
    responses=responses(InvalidRequest, TableNotFound, NotSupported, CommitConflict, LockUnavailable),
)
async def alter_table(
    table: TablePath, body: AlterTableRequest, services: ServicesDep, threads: LockThreadsDep, caller: Admin
) -> None:
    """Paimon's schema changes (add, rename, drop and move columns, widen types, comments, options), all
    or none, as the table's next schema (`schema/schema-N+1`): the native ALTER TABLE."""
    await threads.run(services.maintenance.alter_table, table.id, body, actor=caller.name)


@router.delete("/{table}", responses=responses(TableNotFound, NotSupported, PurgeRefused))
def drop_table(table: TablePath, services: ServicesDep, _admin: Admin) -> None:
    """Drop the table as Paimon drops a managed table, its folder with it; a table registered through
    the native API by location is only forgotten (its files were found, not made by the coordinator)."""
    services.databases.drop_table(table.id)
