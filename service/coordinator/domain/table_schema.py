"""What the commit path needs to know about a table's schema, derived once per table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from paimon_format.binary_row import decode_row, encode_row
from paimon_format.partition_path import partition_path
from paimon_format.schema import TableSchema
from paimon_format.types import DataType, parse_type
from paimon_format.values import to_json_value


@dataclass(frozen=True)
class TableShape:
    """Partition and key types, bucket mode and options of one table schema."""

    schema: TableSchema
    partition_names: tuple[str, ...]
    partition_types: tuple[DataType, ...]
    key_names: tuple[str, ...]
    key_types: tuple[DataType, ...]
    bucket: int
    max_level: int
    default_partition_name: str
    _decoded: dict[bytes, tuple[object, ...]] = field(default_factory=dict, compare=False, repr=False)
    _dirs: dict[bytes, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, schema: TableSchema) -> TableShape:
        """Derive the shape; raises ValueError on a schema the coordinator cannot commit to."""
        keys = schema.trimmed_primary_keys
        types = {
            f.name: _key_type(f.name, f.type)
            for f in schema.fields
            if f.name in (*keys, *schema.partition_keys)
        }
        return cls(
            schema=schema,
            partition_names=tuple(schema.partition_keys),
            partition_types=tuple(types[k] for k in schema.partition_keys),
            key_names=tuple(keys),
            key_types=tuple(types[k].not_null() for k in keys),
            bucket=schema.bucket,
            max_level=schema.max_level,
            default_partition_name=schema.default_partition_name,
        )

    @property
    def has_primary_key(self) -> bool:
        return bool(self.schema.primary_keys)

    def encode_partition(self, values: Sequence[object]) -> bytes:
        return encode_row(values, self.partition_types)

    def decode_partition(self, row: bytes) -> tuple[object, ...]:
        """Partition values of a BinaryRow, memoised: a table has few partitions and they repeat."""
        cached = self._decoded.get(row)
        if cached is None:
            cached = tuple(decode_row(row, self.partition_types))
            self._decoded[row] = cached
        return cached

    def decode_key(self, row: bytes) -> tuple[object, ...]:
        return _decode_key(row, self.key_types)

    def partition_json(self, row: bytes) -> dict[str, object]:
        values = self.decode_partition(row)
        return {
            n: to_json_value(v, t)
            for n, v, t in zip(self.partition_names, values, self.partition_types, strict=True)
        }

    def key_json(self, row: bytes) -> list[object]:
        if not self.key_types:
            return []
        return [to_json_value(v, t) for v, t in zip(self.decode_key(row), self.key_types, strict=True)]

    def partition_dir(self, row: bytes) -> str:
        """The folder of a partition, memoised like its values: a commit of many files asks per file."""
        cached = self._dirs.get(row)
        if cached is None:
            cached = self._dirs[row] = partition_path(
                self.partition_names,
                self.decode_partition(row),
                self.partition_types,
                default_name=self.default_partition_name,
            )
        return cached


def _key_type(name: str, text: object) -> DataType:
    # Nested types (JSON objects in the schema file) are fine for values, never for keys and partitions.
    if not isinstance(text, str):
        raise ValueError(f"field {name!r}: nested types cannot be partition or key fields")
    return parse_type(text)


@lru_cache(maxsize=65536)
def _decode_key(row: bytes, types: tuple[DataType, ...]) -> tuple[object, ...]:
    return tuple(decode_row(row, types))
