"""Paimon's manifest records as immutable Python values: entries, data files, statistics, manifest metas.

The Avro codec (`format.manifest`) reads and writes them; `format.manifest_meta` describes a manifest
for its manifest list.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar, Final

# A BinaryRow of arity 0: 4-byte arity plus the 8-byte header word (see binary_row.EMPTY_ROW).
EMPTY_ROW: Final = bytes(12)


class FileKind(IntEnum):
    """Whether a manifest entry adds or deletes a data file."""

    ADD = 0
    DELETE = 1


@dataclass(frozen=True, slots=True)
class SimpleStats:
    """Min/max BinaryRows and per-field null counts (``None`` counts mean unknown)."""

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None

    EMPTY: ClassVar[SimpleStats]


SimpleStats.EMPTY = SimpleStats(EMPTY_ROW, EMPTY_ROW, ())


@dataclass(frozen=True, slots=True)
class DataFileMeta:
    """Metadata of one data file as stored in a manifest entry's ``_FILE`` record."""

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time: int | None = None  # millis; Paimon stores local wall-clock time
    delete_row_count: int | None = None
    embedded_index: bytes | None = None
    file_source: int | None = None  # 0 = APPEND, 1 = COMPACT
    # () = no value stats (pypaimon's default), None = stats over every written column.
    value_stats_cols: tuple[str, ...] | None = ()
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None
    write_cols_sequences: tuple[int, ...] | None = None


FileIdentifier = tuple[bytes, int, int, str, tuple[str, ...], bytes | None, str | None]


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One ADD or DELETE of a data file in a (partition, bucket)."""

    kind: FileKind
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> FileIdentifier:
        """Identity used to match a DELETE with its ADD (Paimon's FileEntry.Identifier)."""
        f = self.file
        return (
            self.partition,
            self.bucket,
            f.level,
            f.file_name,
            f.extra_files,
            f.embedded_index,
            f.external_path,
        )


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    """One manifest file as listed in a manifest list."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None
    total_buckets: int | None = None
    extra_files: tuple[str, ...] | None = None
