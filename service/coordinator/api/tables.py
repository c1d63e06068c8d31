"""POST/GET/DELETE /tables."""

from __future__ import annotations

from fastapi import APIRouter, Depends, status

from coordinator.api.auth import Admin, reader
from coordinator.api.deps import ServicesDep
from coordinator.api.errors import AUTH_ERRORS, CREATE_ERRORS, TABLE_ERRORS
from coordinator.usecases.tables import Table
from coordinator_client.models import (
    CreateTableRequest,
    SchemaFieldModel,
    SchemaModel,
    TableListResponse,
    TableResponse,
)

router = APIRouter(prefix="/tables", tags=["tables"], dependencies=[Depends(reader)], responses=AUTH_ERRORS)


def table_response(table: Table, latest: int) -> TableResponse:
    schema = table.shape.schema
    return TableResponse(
        id=table.id,
        database=table.database,
        name=table.name,
        uuid=table.uuid,
        location=table.location,
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
        latest_snapshot_id=latest or None,
    )


@router.post("", status_code=status.HTTP_201_CREATED, responses=CREATE_ERRORS)
def create_table(body: CreateTableRequest, services: ServicesDep, _admin: Admin) -> TableResponse:
    """Create a table (writes schema/schema-0), or register an existing Paimon table by `location`."""
    table = services.tables.create(body)
    return table_response(table, services.tables.latest_snapshot_id(table.id))


@router.get("")
def list_tables(services: ServicesDep) -> TableListResponse:
    return TableListResponse(tables=[table_response(t, latest) for t, latest in services.tables.list()])


@router.get("/{table_id}", responses=TABLE_ERRORS)
def get_table(table_id: str, services: ServicesDep) -> TableResponse:
    table = services.tables.get(table_id)
    return table_response(table, services.tables.latest_snapshot_id(table_id))


@router.delete("/{table_id}", status_code=status.HTTP_204_NO_CONTENT, responses=TABLE_ERRORS)
def drop_table(table_id: str, services: ServicesDep, _admin: Admin, purge: bool = True) -> None:
    """Forget the table; with purge (the default) its folder is deleted too."""
    services.tables.drop(table_id, purge=purge)
