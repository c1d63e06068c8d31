"""Databases: create, list, get, alter options, drop."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from coordinator.api.auth import Admin, Caller
from coordinator.api.deps import ServicesDep
from coordinator.api.rest_catalog.errors import responses
from coordinator.api.rest_catalog.models import (
    AlterDatabaseRequest,
    AlterDatabaseResponse,
    CreateDatabaseRequest,
    GetDatabaseResponse,
    ListDatabasesResponse,
)
from coordinator.api.rest_catalog.paging import (
    DEFAULT,
    DatabaseNamePattern,
    MaxResults,
    NamePattern,
    PageToken,
)
from coordinator.api.rest_catalog.params import DatabaseName, checked_database_name, database_reader
from coordinator.errors import (
    DatabaseAlreadyExists,
    DatabaseNotFound,
    InvalidRequest,
    PurgeRefused,
)

router = APIRouter(prefix="/{prefix}/databases")


@router.get("", responses=responses(InvalidRequest))
def list_databases(
    services: ServicesDep,
    caller: Caller,
    max_results: MaxResults = DEFAULT,
    page_token: PageToken = None,
    pattern: DatabaseNamePattern = None,
) -> ListDatabasesResponse:
    """Names in order, one page at a time; `databaseNamePattern` takes a name or a `prefix%`. A token
    limited by a grant lists its grant's database only."""
    wanted = NamePattern.of(pattern, field="databaseNamePattern")
    scope = caller.scope
    if scope is not None:
        if not wanted.matches(scope.database):
            return ListDatabasesResponse(databases=[])
        wanted = NamePattern(scope.database, exact=True)
    page = services.databases.page(limit=max_results, page_token=page_token, prefix=wanted.prefix)
    names, next_page = wanted.select(page.names, page.next_page_token)
    return ListDatabasesResponse(databases=names, next_page_token=next_page)


@router.post("", responses=responses(InvalidRequest, DatabaseAlreadyExists))
def create_database(body: CreateDatabaseRequest, services: ServicesDep, _admin: Admin) -> None:
    services.databases.create(_checked_name(body.name), dict(body.options or {}))


@router.get("/{database}", responses=responses(DatabaseNotFound), dependencies=[Depends(database_reader)])
def get_database(database: DatabaseName, services: ServicesDep) -> GetDatabaseResponse:
    found = services.databases.get(database)
    return GetDatabaseResponse(
        id=found.name,
        name=found.name,
        location=found.location,
        options=found.options,
        created_at=int(found.created_at * 1000),
    )


@router.post("/{database}", responses=responses(InvalidRequest, DatabaseNotFound))
def alter_database(
    database: DatabaseName, body: AlterDatabaseRequest, services: ServicesDep, _admin: Admin
) -> AlterDatabaseResponse:
    changes = services.databases.alter(database, updates=dict(body.updates), removals=list(body.removals))
    return AlterDatabaseResponse(removed=changes.removed, updated=changes.updated, missing=changes.missing)


@router.delete("/{database}", responses=responses(DatabaseNotFound, PurgeRefused))
def drop_database(database: DatabaseName, services: ServicesDep, _admin: Admin) -> None:
    """Drop the database and its tables, each as DELETE .../tables/{table} drops one.

    Paimon's clients check that a database is empty before they drop it, unless their user asked for a
    cascade: a drop that arrives here is one."""
    services.databases.drop(database)


def _checked_name(name: str) -> str:
    try:
        return checked_database_name(name)
    except InvalidRequest as error:
        raise InvalidRequest(error.message, field="name") from None
