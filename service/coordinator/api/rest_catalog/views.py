"""Views: the coordinator keeps none, so it says so instead of answering 501.

Paimon's Flink catalog asks for a view whenever a table is missing (`getTable`, `tableExists`, so every
`CREATE TABLE IF NOT EXISTS` and `DROP TABLE`) and lists views in SHOW TABLES; a 501 there fails the
statement (Java's NotImplementedException is not caught on those paths), while "no such view" (404
VIEW) and an empty list are what a catalog without views answers. Creating, altering and dropping a
view are 501, declared here (not left to the fallback) so the API's document says so on these paths.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path

from coordinator.api.auth import Admin
from coordinator.api.deps import ServicesDep
from coordinator.api.rest_catalog.errors import responses
from coordinator.api.rest_catalog.models import ListViewsResponse
from coordinator.api.rest_catalog.paging import DEFAULT, MaxResults, PageToken
from coordinator.api.rest_catalog.params import DatabaseName, database_reader
from coordinator.errors import DatabaseNotFound, NotSupported, ViewNotFound
from coordinator_client.models import PRINTABLE_PATTERN

ViewName = Annotated[str, Path(max_length=256, pattern=PRINTABLE_PATTERN)]
"""Checked as a database name is on the wire (a name no client could mean is a 400, not a 404)."""

router = APIRouter(prefix="/{prefix}/databases/{database}/views", dependencies=[Depends(database_reader)])


@router.get("", responses=responses(DatabaseNotFound))
def list_views(
    database: DatabaseName,
    services: ServicesDep,
    max_results: MaxResults = DEFAULT,  # taken (and checked) as on every listing; there is one page
    page_token: PageToken = None,
) -> ListViewsResponse:
    """Always empty, for a database that exists (404 DATABASE otherwise, as for its tables)."""
    services.databases.get(database)
    return ListViewsResponse(views=[])


@router.get("/{view}", responses=responses(DatabaseNotFound, ViewNotFound))
def get_view(database: DatabaseName, view: ViewName, services: ServicesDep) -> None:
    """404 VIEW: no view exists here (404 DATABASE first, for a database that does not)."""
    services.databases.get(database)
    raise ViewNotFound(f"view {database}.{view} does not exist: the coordinator keeps no views")


@router.post("", responses=responses(NotSupported))
def create_view(database: DatabaseName, _admin: Admin) -> None:
    """501, for any database. An admin's call, as creating a table is: whoever else asks is refused
    first (403), as on every route that would change something."""
    raise NotSupported(f"creating a view in {database} is not served by the Paimon Commit Coordinator")


@router.post("/{view}", responses=responses(NotSupported))
def alter_view(database: DatabaseName, view: ViewName, _admin: Admin) -> None:
    raise NotSupported(f"altering view {database}.{view} is not served: the coordinator keeps no views")


@router.delete("/{view}", responses=responses(NotSupported))
def drop_view(database: DatabaseName, view: ViewName, _admin: Admin) -> None:
    raise NotSupported(f"dropping view {database}.{view} is not served: the coordinator keeps no views")
