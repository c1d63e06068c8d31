"""Builders for the pure domain tests: table shapes, data files and manifest entries, all in memory.

Shapes come from the project's own TableSchema and TableShape.of, so a test sees exactly what the commit
path derives from a schema file. Nothing here touches storage, a database or pypaimon.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from coordinator.domain.live_files import LiveFiles
from coordinator.domain.table_schema import TableShape
from coordinator_client.models import CommitRequest
from paimon_format.binary_row import encode_row
from paimon_format.manifest import DataFileMeta, FileKind, ManifestEntry, SimpleStats
from paimon_format.schema import SchemaField, TableSchema
from paimon_format.types import parse_type

ADD = FileKind.ADD
DELETE = FileKind.DELETE

# The partition and key types of the shapes below, parsed once.
DT_TYPE = parse_type("STRING")
KEY_TYPE = parse_type("BIGINT NOT NULL")


def shape(
    fields: Mapping[str, str],
    *,
    partition_keys: Sequence[str] = (),
    primary_keys: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
    schema_id: int = 0,
) -> TableShape:
    """The TableShape of a schema with these fields (name -> Paimon type) and options."""
    schema = TableSchema(
        id=schema_id,
        fields=tuple(SchemaField(i, name, type_) for i, (name, type_) in enumerate(fields.items())),
        highest_field_id=len(fields) - 1,
        partition_keys=tuple(partition_keys),
        primary_keys=tuple(primary_keys),
        options=dict(options or {}),
    )
    return TableShape.of(schema)


def append_shape(**options: str) -> TableShape:
    """An append table `(dt STRING, id BIGINT, v STRING)` partitioned by dt, bucket-unaware by default."""
    return shape({"dt": "STRING", "id": "BIGINT", "v": "STRING"}, partition_keys=["dt"], options=options)


def pk_shape(buckets: int = 2) -> TableShape:
    """A primary-key table `(dt, id)` partitioned by dt, with `buckets` fixed buckets; the key is `id`."""
    return shape(
        {"dt": "STRING NOT NULL", "id": "BIGINT NOT NULL", "v": "STRING"},
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": str(buckets)},
    )


def partition(dt: str) -> bytes:
    """The BinaryRow of partition `dt` for the shapes above."""
    return encode_row([dt], [DT_TYPE])


def key(value: int) -> bytes:
    """The BinaryRow of a BIGINT primary key `id`."""
    return encode_row([value], [KEY_TYPE])


def data_file(
    name: str,
    *,
    rows: int = 10,
    level: int = 0,
    keys: tuple[int, int] | None = None,
    size: int = 1024,
) -> DataFileMeta:
    """A data file's metadata; `keys` is its (min, max) primary key, None for an append-table file."""
    min_key, max_key = (key(keys[0]), key(keys[1])) if keys is not None else (b"", b"")
    return DataFileMeta(
        file_name=name,
        file_size=size,
        row_count=rows,
        min_key=min_key,
        max_key=max_key,
        key_stats=SimpleStats.EMPTY,
        value_stats=SimpleStats.EMPTY,
        min_sequence_number=0,
        max_sequence_number=0,
        schema_id=0,
        level=level,
    )


def entry(
    kind: FileKind,
    name: str,
    *,
    dt: str = "a",
    bucket: int = 0,
    total_buckets: int = 2,
    level: int = 0,
    keys: tuple[int, int] | None = None,
    rows: int = 10,
) -> ManifestEntry:
    """One manifest entry of partition `dt`, bucket `bucket`."""
    return ManifestEntry(
        kind, partition(dt), bucket, total_buckets, data_file(name, rows=rows, level=level, keys=keys)
    )


def live(*snapshots: Iterable[ManifestEntry]) -> LiveFiles:
    """The live files after applying each group of entries as snapshots 1, 2, ..."""
    files = LiveFiles()
    for snapshot_id, delta in enumerate(snapshots, start=1):
        files.apply(list(delta), snapshot_id)
    return files


def deleted(e: ManifestEntry) -> ManifestEntry:
    """The DELETE entry of a live ADD, as a committer would send it."""
    return replace(e, kind=FileKind.DELETE)


def file_json(name: str = "data-1.parquet", **fields: object) -> dict[str, object]:
    """A DataFile of a commit message as a writer sends it (camelCase JSON)."""
    return {"fileName": name, "fileSize": 100, "rowCount": 10, **fields}


def commit_request(*messages: Mapping[str, object], **fields: object) -> CommitRequest:
    """A CommitRequest of these messages, validated by the wire model as the API would."""
    return CommitRequest.model_validate(
        {"commitUser": "writer", "identifier": 1, **fields, "messages": messages}
    )
