"""POST/GET/DELETE /tables."""

from __future__ import annotations

from fastapi import APIRouter, Depends, status

from coordinator.api.auth import Admin, Caller, listing_scope, reader, table_reader
from coordinator.api.deps import ServicesDep
from coordinator.api.errors import AUTH_ERRORS, CREATE_ERRORS, DROP_ERRORS, TABLE_ERRORS, responses
from coordinator.api.paging import TablePageDep
from coordinator.api.params import TableId
from coordinator.errors import InvalidRequest
from coordinator.usecases.table_pages import TableEntry
from coordinator_client.models import (
    CreateTableRequest,
    SchemaFieldModel,
    SchemaModel,
    TableListResponse,
    TableResponse,
)

router = APIRouter(prefix="/tables", tags=["tables"], dependencies=[Depends(reader)], responses=AUTH_ERRORS)


def table_response(entry: TableEntry) -> TableResponse:
    schema = entry.schema
    return TableResponse(
        id=entry.id,
        database=entry.database,
        name=entry.name,
        uuid=entry.uuid,
        location=entry.location,
        schema=SchemaModel(
            id=schema.id,
            fields=[
                SchemaFieldModel(id=f.id, name=f.name, type=f.type, description=f.description)
                for f in schema.fields
            ],
            partition_keys=list(schema.partition_keys),
            primary_keys=list(schema.primary_keys),
            options=dict(schema.options),
            comment=schema.comment,
        ),
        latest_snapshot_id=entry.latest_snapshot_id or None,
        total_record_count=entry.stats.total_record_count,
        file_count=entry.stats.file_count,
        file_bytes=entry.stats.file_bytes,
        last_commit_at=entry.last_commit_at,
    )


@router.post("", status_code=status.HTTP_201_CREATED, responses=CREATE_ERRORS)
def create_table(body: CreateTableRequest, services: ServicesDep, _admin: Admin) -> TableResponse:
    """Create a table (writes schema/schema-0), or register an existing Paimon table by `location`.

    One folder is one table's: a location that another table's folder is, encloses or lies inside
    (spellings aside: `file://`, trailing slashes, URI options) is refused with 409 LOCATION_IN_USE,
    naming that table, and nothing is written."""
    table = services.tables.create(body)
    return table_response(services.tables.entry(table.id))


@router.get("", responses=responses(InvalidRequest))
def list_tables(services: ServicesDep, page: TablePageDep, caller: Caller) -> TableListResponse:
    """One page of tables in (database, name) order with their recorded sizes; the database alone
    answers. Follow `nextPageToken` for the next page. A token limited by a grant lists the grant's
    tables (403 for a `database` outside it)."""
    listed = services.tables.page(
        limit=page.limit,
        page_token=page.page_token,
        database=page.database,
        name_prefix=page.name_prefix,
        scope=listing_scope(caller, page.database),
    )
    return TableListResponse(
        tables=[table_response(e) for e in listed.entries], next_page_token=listed.next_page_token
    )


@router.get("/{table_id}", responses=TABLE_ERRORS, dependencies=[Depends(table_reader)])
def get_table(table_id: TableId, services: ServicesDep) -> TableResponse:
    return table_response(services.tables.entry(table_id))


@router.delete(
    "/{table_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=DROP_ERRORS,
    dependencies=[Depends(table_reader)],
)
def drop_table(table_id: TableId, services: ServicesDep, _admin: Admin, purge: bool = False) -> None:
    """Forget the table. Its files stay on storage: readers such as pypaimon, or the table registered
    again, still find them.

    `purge=true` also deletes the table's folder, exactly that folder, and only for a table the
    coordinator created. A table registered by `location` is never purged (its files were found, not
    made): 409 PURGE_REFUSED with `field` purge, and nothing changes. So is a purge of a folder another
    table's folder is, encloses or lies inside."""
    services.tables.drop(table_id, purge=purge)
