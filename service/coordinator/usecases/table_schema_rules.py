"""A new table's schema-0, validated: Paimon's rules plus the bucket modes the coordinator commits to."""

from __future__ import annotations

from coordinator.domain.retention import Retention
from coordinator.domain.table_schema import TableShape
from coordinator.errors import InvalidRequest
from coordinator_client.models import CreateTableRequest
from paimon_format.schema import SchemaField, TableSchema
from paimon_format.types import parse_type


def build_schema(request: CreateTableRequest, *, now_millis: int) -> TableSchema:
    """schema-0 of a new table, validated: Paimon's rules plus what the coordinator supports.

    Raises:
        InvalidRequest: naming the offending field.
    """
    if not request.fields:
        raise InvalidRequest("a new table needs fields (or a location to register)", field="fields")
    names = [f.name for f in request.fields]
    for i, f in enumerate(request.fields):
        if names.index(f.name) != i:
            raise InvalidRequest(f"duplicate field name {f.name!r}", field=f"fields[{i}].name")
    types = []
    for i, f in enumerate(request.fields):
        try:
            t = parse_type(f.type)
        except ValueError as e:
            raise InvalidRequest(str(e), field=f"fields[{i}].type") from None
        types.append(t)
    for key_list, label in ((request.partition_keys, "partitionKeys"), (request.primary_keys, "primaryKeys")):
        for i, key in enumerate(key_list):
            if key not in names:
                raise InvalidRequest(f"{key!r} is not a field of the table", field=f"{label}[{i}]")
            if key_list.index(key) != i:
                raise InvalidRequest(f"{key!r} is listed twice", field=f"{label}[{i}]")
    if request.primary_keys:
        for key in request.partition_keys:
            if key not in request.primary_keys:
                raise InvalidRequest(
                    f"the primary key must include the partition key {key!r}", field="primaryKeys"
                )
    options = {"file.format": "parquet", **request.options}
    try:
        Retention.of(options)
    except ValueError as error:
        named = next((k for k in request.options if k in str(error)), None)
        raise InvalidRequest(str(error), field=f"options.{named}" if named else "options") from None
    if request.primary_keys:
        # Primary-key columns are NOT NULL in Paimon.
        types = [t.not_null() if n in request.primary_keys else t for n, t in zip(names, types, strict=True)]
    fields = tuple(
        SchemaField(i, f.name, str(t), f.description)
        for i, (f, t) in enumerate(zip(request.fields, types, strict=True))
    )
    schema = TableSchema(
        id=0,
        fields=fields,
        highest_field_id=len(fields) - 1,
        partition_keys=tuple(request.partition_keys),
        primary_keys=tuple(request.primary_keys),
        options=options,
        comment=request.comment,
        time_millis=now_millis,
    )
    check_supported(schema, field="options.bucket")
    return schema


def check_supported(schema: TableSchema, *, field: str) -> None:
    """The bucket modes the coordinator commits to: fixed buckets, or bucket-unaware append tables."""
    raw = schema.options.get("bucket", "-1")
    try:
        bucket = int(raw)
    except ValueError:
        raise InvalidRequest(f"bucket must be an integer, got {raw!r}", field=field) from None
    if schema.primary_keys and bucket < 1:
        raise InvalidRequest(
            "primary-key tables need a fixed bucket count (bucket >= 1); dynamic and postpone buckets "
            "are not supported",
            field=field,
        )
    if (not schema.primary_keys and bucket == 0) or bucket < -1:
        raise InvalidRequest(f"bucket must be -1 (unaware) or >= 1, got {bucket}", field=field)
    if not schema.primary_keys and bucket >= 1 and not schema.options.get("bucket-key"):
        raise InvalidRequest("an append table with fixed buckets needs the bucket-key option", field=field)
    try:
        TableShape.of(schema)
    except ValueError as e:
        raise InvalidRequest(str(e), field=field) from None
