"""Paimon's REST schema to the native table request and back."""

from __future__ import annotations

from pydantic import ValidationError

from coordinator.api.rest_catalog.models import CreateTableRequest, DataField, GetTableResponse, RestSchema
from coordinator.errors import InvalidRequest
from coordinator.usecases.table_pages import TableEntry
from coordinator_client.models import CreateTableRequest as NativeCreateTableRequest
from coordinator_client.models import FieldSpec
from paimon_format.schema import SchemaField

PATH_OPTION = "path"
"""Paimon's table location option: the clients add it from GetTableResponse.path themselves; a
location chosen by the client would make the table external, whose commits bypass the catalog."""


def native_create(database: str, body: CreateTableRequest) -> NativeCreateTableRequest:
    """The native API's request for the table a REST client asks for; the coordinator picks its location.

    Raises:
        InvalidRequest: naming the field (as the REST body spells it).
    """
    if body.identifier.database != database:
        raise InvalidRequest(
            f"identifier.database {body.identifier.database!r} is not the path's database {database!r}",
            field="identifier.database",
        )
    schema = body.schema_
    if PATH_OPTION in schema.options:
        raise InvalidRequest(
            "the coordinator chooses a table's location; external tables are not served",
            field="schema.options.path",
        )
    fields = []
    for i, f in enumerate(schema.fields):
        if not isinstance(f.type, str):
            raise InvalidRequest(
                f"field {f.name!r}: nested types (ROW, ARRAY, MAP, MULTISET) are not supported",
                field=f"schema.fields[{i}].type",
            )
        fields.append((i, f))
    try:
        return NativeCreateTableRequest(
            database=database,
            name=body.identifier.object,
            fields=[_field(i, f) for i, f in fields],
            partition_keys=schema.partition_keys,
            primary_keys=schema.primary_keys,
            options=schema.options,
            comment=schema.comment,
        )
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidRequest(f"{where}: {first['msg']}", field=_rest_field(where)) from None


def _field(i: int, f: DataField) -> FieldSpec:
    try:
        return FieldSpec(name=f.name, type=str(f.type), description=f.description)
    except ValidationError as error:
        first = error.errors()[0]
        where = f"schema.fields[{i}].{'.'.join(str(p) for p in first['loc'])}"
        raise InvalidRequest(f"{where}: {first['msg']}", field=where) from None


def _rest_field(native: str) -> str:
    """Where the REST body holds what the native request calls `native`."""
    head = native.split(".", 1)[0]
    return {
        "name": "identifier.object",
        "partition_keys": "schema.partitionKeys",
        "primary_keys": "schema.primaryKeys",
        "options": "schema.options",
        "comment": "schema.comment",
    }.get(head, native)


COMMIT_RETRY_DEFAULTS = {"commit.max-retries": "100", "commit.max-retry-wait": "1s"}
"""Retry options Paimon's clients read from the table's options, unless the table sets its own. A
proposal whose base moved costs the coordinator one read under the lock and is answered `success: false`
at once, so a client may retry far more often than Paimon's defaults (10 times, waits growing to 10 s)
allow: with those, 8 pypaimon writers on one table saw 2% of their commits give up (bench/README.md)."""


def table_response(entry: TableEntry) -> GetTableResponse:
    schema = entry.schema
    return GetTableResponse(
        id=entry.uuid,
        name=entry.name,
        path=full_location(entry.location),
        is_external=False,
        schema_id=schema.id,
        schema=RestSchema(
            fields=[_data_field(f) for f in schema.fields],
            partition_keys=list(schema.partition_keys),
            primary_keys=list(schema.primary_keys),
            options=COMMIT_RETRY_DEFAULTS | {k: v for k, v in schema.options.items() if k != PATH_OPTION},
            comment=schema.comment,
        ),
        created_at=int(entry.created_at * 1000),
        # The time of the table's latest schema: when its definition last changed.
        updated_at=schema.time_millis or None,
    )


def _data_field(field: SchemaField) -> DataField:
    kind = field.type if isinstance(field.type, str) else dict(field.type)
    return DataField(id=field.id, name=field.name, type=kind, description=field.description)


def full_location(location: str) -> str:
    """`location` with its scheme: a local folder as a `file://` URI, which every client's FileIO opens."""
    return location if "://" in location else f"file://{location}"
