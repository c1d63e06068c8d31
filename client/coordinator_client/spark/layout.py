"""What a Spark job needs to know of a Paimon table: column types, keys, buckets and where files go.

The driver builds a SparkTable once from the coordinator's answer and ships it to the executors by
pickling, so executors never call the coordinator; they only read and write files under the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from coordinator_client.models import LiveFileModel, TableResponse
from paimon_format.location import local_path
from paimon_format.memory_size import parse_memory_size
from paimon_format.partition_path import bucket_dir, partition_path
from paimon_format.schema import SchemaField, TableSchema
from paimon_format.types import DataType, parse_type
from paimon_format.values import from_json_value

KEY_PREFIX = "_KEY_"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
# Paimon's RowKind bytes in _VALUE_KIND.
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3

_ARROW: dict[str, pa.DataType] = {
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "DATE": pa.date32(),
}


def arrow_type(t: DataType) -> pa.DataType:
    """The Arrow type Paimon's Parquet files (and pypaimon) use for a Paimon type."""
    if t.root in _ARROW:
        return _ARROW[t.root]
    if t.is_string:
        return pa.string()
    if t.is_binary:
        return pa.binary()
    if t.is_decimal:
        return pa.decimal128(t.decimal_precision, t.decimal_scale)
    if t.is_timestamp:
        precision = t.time_precision
        unit = "s" if precision == 0 else "ms" if precision <= 3 else "us" if precision <= 6 else "ns"
        return pa.timestamp(unit, tz="UTC" if t.root == "TIMESTAMP_LTZ" else None)
    raise ValueError(f"the Spark writer does not handle Paimon type {t}")


def filesystem(location: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem and root path of a table location (a local path or a URI)."""
    local = local_path(location)
    if local is not None:
        return pafs.LocalFileSystem(), local
    fs, path = pafs.FileSystem.from_uri(location)
    return fs, path


@dataclass(frozen=True)
class SparkTable:
    """A coordinator-managed table as its Spark jobs see it: columns, keys, buckets and file paths;
    picklable and cheap to ship."""

    table_id: str
    location: str
    schema: TableSchema

    @classmethod
    def of(cls, table: TableResponse) -> SparkTable:
        s = table.schema_
        fields = tuple(SchemaField(f.id, f.name, f.type, f.description) for f in s.fields)
        schema = TableSchema(
            id=s.id,
            fields=fields,
            highest_field_id=max((f.id for f in fields), default=-1),
            partition_keys=tuple(s.partition_keys),
            primary_keys=tuple(s.primary_keys),
            options=dict(s.options),
            comment=s.comment,
        )
        layout = cls(table.id, table.location, schema)
        layout.value_schema  # noqa: B018 -- fail on the driver, before any task, on a type we cannot write
        return layout

    # ---------------------------------------------------------------- columns and keys

    @cached_property
    def columns(self) -> tuple[tuple[str, DataType], ...]:
        out = []
        for f in self.schema.fields:
            if not isinstance(f.type, str):
                raise ValueError(f"column {f.name!r}: nested types are not handled by the Spark writer")
            out.append((f.name, parse_type(f.type)))
        return tuple(out)

    @cached_property
    def types(self) -> dict[str, DataType]:
        return dict(self.columns)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    @property
    def partition_keys(self) -> tuple[str, ...]:
        return self.schema.partition_keys

    @property
    def primary_keys(self) -> tuple[str, ...]:
        return self.schema.primary_keys

    @property
    def has_primary_key(self) -> bool:
        return bool(self.schema.primary_keys)

    @property
    def key_names(self) -> tuple[str, ...]:
        """The trimmed primary key: what `_KEY_*` columns, min/max keys and key stats hold."""
        return self.schema.trimmed_primary_keys

    @property
    def key_types(self) -> tuple[DataType, ...]:
        return tuple(self.types[k].not_null() for k in self.key_names)

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        return self.schema.bucket_keys

    @property
    def bucket_key_types(self) -> tuple[DataType, ...]:
        return tuple(self.types[k].not_null() for k in self.bucket_keys)

    @property
    def num_buckets(self) -> int:
        """The `bucket` option: positive for fixed buckets, -1 for bucket-unaware append tables."""
        return self.schema.bucket

    @property
    def max_level(self) -> int:
        return self.schema.max_level

    @property
    def target_file_size(self) -> int:
        default = "128 mb" if self.has_primary_key else "256 mb"
        return parse_memory_size(self.schema.options.get("target-file-size", default))

    @property
    def compression(self) -> tuple[str, int | None]:
        """Parquet codec and level: `file.compression` (zstd) at `file.compression.zstd-level` (1)."""
        options = self.schema.options
        codec = options.get("file.compression", "zstd").lower()
        level = int(options.get("file.compression.zstd-level", "1")) if codec == "zstd" else None
        return codec, level

    # ---------------------------------------------------------------- arrow schemas

    @cached_property
    def value_schema(self) -> pa.Schema:
        """The table's columns as Arrow fields."""
        return pa.schema([pa.field(n, arrow_type(t), t.nullable) for n, t in self.columns])

    @cached_property
    def file_schema(self) -> pa.Schema:
        """Columns of a data file: `_KEY_*`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, then the table's columns."""
        if not self.has_primary_key:
            return self.value_schema
        keys = zip(self.key_names, self.key_types, strict=True)
        system = [pa.field(KEY_PREFIX + k, arrow_type(t), False) for k, t in keys]
        system += [pa.field(SEQUENCE_NUMBER, pa.int64(), False), pa.field(VALUE_KIND, pa.int8(), False)]
        return pa.schema([*system, *self.value_schema])

    # ---------------------------------------------------------------- paths

    def partition_dir(self, values: Sequence[object]) -> str:
        """'k1=v1/k2=v2' of partition values ('' for an unpartitioned table)."""
        names = self.partition_keys
        return partition_path(
            names,
            values,
            [self.types[n] for n in names],
            default_name=self.schema.default_partition_name,
        )

    def bucket_path(self, partition_values: Sequence[object], bucket: int) -> str:
        """Directory of one bucket, relative to the table's location."""
        partition = self.partition_dir(partition_values)
        return f"{partition}/{bucket_dir(bucket)}" if partition else bucket_dir(bucket)

    def partition_values(self, partition: Mapping[str, Any]) -> tuple[object, ...]:
        """Python values of a partition given as JSON values (as the coordinator's answers carry it)."""
        return tuple(from_json_value(partition[n], self.types[n], field=n) for n in self.partition_keys)

    def directory_of(self, file: LiveFileModel) -> str:
        """Bucket directory of a live file, relative to the table's location."""
        return self.bucket_path(self.partition_values(file.partition), file.bucket)

    def check_mergeable(self) -> None:
        """Fail unless primary-key rows merge as the reader and compactor do: newest row per key wins."""
        options = self.schema.options
        engine = options.get("merge-engine", "deduplicate")
        if self.has_primary_key and (engine != "deduplicate" or "sequence.field" in options):
            raise ValueError(
                f"{self.table_id}: merge-engine {engine!r} / sequence.field are not handled from Spark; "
                "only the deduplicate merge engine ordered by sequence number is"
            )

    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        return filesystem(self.location)
