"""What a manifest a writer wrote itself (Paimon's REST protocol) must hold before anything is decided.

A native commit's files arrive as JSON the request models and domain/committable check field by field; a
REST writer's arrive inside Avro manifests it wrote, which decode into whatever its writer schema says.
Everything the coordinator later reads off an entry or a manifest's meta is checked here, so that no
entry can make a commit, a scan or a maintenance action fail with a 500 or reach out of the table:

- names: every file name (data, changelog, extra files, manifests) is bare, and an external path lies
  under the table's external roots (domain/table_paths);
- layout: the partition is a BinaryRow of the table's partition types, the bucket fits the table's
  bucket mode, a primary-key table's keys and key statistics are rows of its trimmed primary key (an
  append table's are never read), the level is one of the table's levels, the schema id one of its
  schemas;
- numbers: Avro ints and longs where Paimon has them, sizes and counts not negative and below
  `MAX_COUNT`, deleteRowCount within rowCount, a manifest's counts of ADD and DELETE entries as its
  manifest list says.

Refusals are InvalidRequest (PathOutsideTable for a path) naming the entry as
`<where>.<field>`, e.g. `snapshot.deltaManifestList[0].entries[3].fileName`. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from coordinator.domain.table_paths import (
    check_external_path,
    check_name,
    external_roots,
    name_problem,
    with_naming,
)
from coordinator.domain.table_schema import TableShape
from coordinator.errors import InvalidRequest
from paimon_format.binary_row import RowCodec, decode_row, row_codec
from paimon_format.bucket import POSTPONE_BUCKET
from paimon_format.manifest import FileKind, ManifestEntry, ManifestFileMeta, SimpleStats

MAX_COUNT = 2**44
"""The largest file size (16 TiB) or row count of one file or manifest count taken: Paimon rolls data
files at a few hundred MiB. A table's sizes are sums kept in BIGINT columns, which half a million files
at this bound still fit; a writer claiming more is broken or hostile."""

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


@dataclass
class EntryRules:
    """One table's rules for the entries a proposal names, with the partitions already found good."""

    shape: TableShape
    roots: tuple[str, ...]
    _keys: RowCodec
    _partitions: set[bytes] = field(default_factory=set)

    @classmethod
    def of(cls, shape: TableShape) -> EntryRules:
        return cls(shape, external_roots(shape.schema.options), row_codec(shape.key_types))

    def check_entries(self, entries: Sequence[ManifestEntry], meta: ManifestFileMeta, where: str) -> None:
        """Every entry of the manifest `meta` (named `where`), and that `meta` counts them right.

        Raises:
            InvalidRequest, PathOutsideTable: naming `<where>.entries[j].<field>` or `<where>.<count>`.
        """
        for j, entry in enumerate(entries):
            self.check_entry(entry, f"{where}.entries[{j}]")
        added = sum(1 for e in entries if e.kind == FileKind.ADD)
        for name, said, found in (
            ("numAddedFiles", meta.num_added_files, added),
            ("numDeletedFiles", meta.num_deleted_files, len(entries) - added),
        ):
            if said != found:
                raise InvalidRequest(
                    f"{where}.{name}: the manifest list says {said}, manifest {meta.file_name} has {found}",
                    field=f"{where}.{name}",
                )

    def check_entry(self, entry: ManifestEntry, where: str) -> None:
        """One manifest entry (see the module docstring).

        Raises:
            InvalidRequest, PathOutsideTable: naming `<where>.<field>`.
        """
        f = entry.file
        if name_problem(f.file_name) is not None:  # the field's name is made only for a refusal
            check_name(f.file_name, f"{where}.fileName", "data file")
        if not isinstance(f.extra_files, tuple):
            _refuse(where, "extraFiles", "must be a list of file names")
        for k, extra in enumerate(f.extra_files):
            check_name(extra, f"{where}.extraFiles[{k}]", "extra file")
        if f.external_path is not None:
            check_external_path(f.external_path, self.roots, f"{where}.externalPath")
        self._check_partition(entry.partition, where)
        self._check_bucket(entry, where)
        shape = self.shape
        _number(f.file_size, where, "fileSize", 0, MAX_COUNT)
        rows = _number(f.row_count, where, "rowCount", 0, MAX_COUNT)
        if f.delete_row_count is not None:
            _number(f.delete_row_count, where, "deleteRowCount", 0, rows)
        _number(f.min_sequence_number, where, "minSequenceNumber", *INT64)
        _number(f.max_sequence_number, where, "maxSequenceNumber", *INT64)
        _number(f.level, where, "level", 0, shape.max_level)
        _number(f.schema_id, where, "schemaId", 0, shape.schema.id)
        if f.creation_time is not None:
            _number(f.creation_time, where, "creationTime", *INT64)
        if shape.key_types:  # conflict checks decode keys; the scan plan answers them as JSON values
            self._check_key(f.min_key, where, "minKey")
            self._check_key(f.max_key, where, "maxKey")
            self._check_stats(f.key_stats, (f.min_key, f.max_key), where)

    def check_meta(self, meta: ManifestFileMeta, where: str) -> None:
        """One record of a manifest list: its manifest's name and the numbers the pipeline reads.

        Raises:
            InvalidRequest, PathOutsideTable: naming `<where>.<field>`.
        """
        check_name(meta.file_name, f"{where}.fileName", "manifest")
        _number(meta.file_size, where, "fileSize", 0, MAX_COUNT)
        _number(meta.num_added_files, where, "numAddedFiles", 0, MAX_COUNT)
        _number(meta.num_deleted_files, where, "numDeletedFiles", 0, MAX_COUNT)
        _number(meta.schema_id, where, "schemaId", 0, self.shape.schema.id)
        optional = (
            ("minBucket", meta.min_bucket, INT32),
            ("maxBucket", meta.max_bucket, INT32),
            ("minLevel", meta.min_level, INT32),
            ("maxLevel", meta.max_level, INT32),
            ("totalBuckets", meta.total_buckets, INT32),
            ("minRowId", meta.min_row_id, INT64),
            ("maxRowId", meta.max_row_id, INT64),
        )
        for name, value, (lo, hi) in optional:
            if value is not None:
                _number(value, where, name, lo, hi)
        stats = meta.partition_stats
        if not isinstance(stats.min_values, bytes) or not isinstance(stats.max_values, bytes):
            _refuse(where, "partitionStats", "min and max values must be BinaryRow bytes")

    def _check_partition(self, partition: object, where: str) -> None:
        if isinstance(partition, bytes) and partition in self._partitions:
            return
        shape = self.shape
        if not isinstance(partition, bytes):
            _refuse(where, "partition", "must be BinaryRow bytes")
        try:
            decode_row(partition, shape.partition_types)
            if shape.partition_types:
                shape.partition_dir(partition)  # the folder its files are in must be one Paimon writes
        except (ValueError, TypeError, OverflowError) as error:
            _refuse(
                where,
                "partition",
                f"is not a row of the table's partition keys {list(shape.partition_names)}: {error}",
            )
        self._partitions.add(partition)

    def _check_bucket(self, entry: ManifestEntry, where: str) -> None:
        table = self.shape.bucket
        bucket = _number(entry.bucket, where, "bucket", *INT32)
        total = _number(entry.total_buckets, where, "totalBuckets", *INT32)
        if total > 0:  # fixed buckets: the table's, or the buckets a postpone table's compaction made
            if not 0 <= bucket < total:
                _refuse(where, "bucket", f"{bucket} is out of range [0, {total}) of totalBuckets {total}")
            return
        if table > 0:
            _refuse(where, "totalBuckets", f"must be positive for a table of {table} buckets, got {total}")
        if total != table:
            _refuse(where, "totalBuckets", f"must be {table} (the table's bucket option) or positive")
        if table == POSTPONE_BUCKET:
            if bucket != POSTPONE_BUCKET:
                _refuse(where, "bucket", f"must be {POSTPONE_BUCKET} (postpone) when totalBuckets is {total}")
        elif self.shape.has_primary_key:
            if bucket < 0:  # dynamic buckets: any bucket the writer assigned
                _refuse(where, "bucket", f"must not be negative, got {bucket}")
        elif bucket != 0:
            _refuse(where, "bucket", f"must be 0 in a bucket-unaware table, got {bucket}")

    def _check_key(self, row: object, where: str, name: str) -> None:
        try:
            if not isinstance(row, bytes):
                raise ValueError("must be BinaryRow bytes")
            self._keys.decode(row)
        except (ValueError, TypeError, OverflowError) as error:
            _refuse(
                where, name, f"must be a row of the trimmed primary key {list(self.shape.key_names)}: {error}"
            )

    def _check_stats(self, stats: SimpleStats, keys: tuple[bytes, bytes], where: str) -> None:
        if stats == SimpleStats.EMPTY:  # no key statistics kept: nothing to read
            return
        if stats.min_values not in keys:  # Paimon's writers repeat the keys: checked already
            self._check_key(stats.min_values, where, "keyStats.minValues")
        if stats.max_values not in keys:
            self._check_key(stats.max_values, where, "keyStats.maxValues")
        counts = stats.null_counts
        if counts is not None and (
            not isinstance(counts, tuple)
            or len(counts) != len(self.shape.key_types)
            or any(c is not None and not _is_int(c) for c in counts)
        ):
            _refuse(where, "keyStats.nullCounts", f"must hold {len(self.shape.key_types)} counts")


def _number(value: object, where: str, name: str, lo: int, hi: int) -> int:
    if type(value) is int and lo <= value <= hi:  # the common case first: a commit checks every entry
        return value
    if not _is_int(value):
        _refuse(where, name, f"must be an integer, not {type(value).__name__}")
    assert isinstance(value, int)  # for mypy: _is_int said so
    if not lo <= value <= hi:
        _refuse(where, name, f"{value} is out of range [{lo}, {hi}]")
    return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _refuse(where: str, name: str, problem: str) -> NoReturn:
    field = f"{where}.{name}"
    message = f"{field} {problem}" if problem[0].islower() else f"{field}: {problem}"
    raise InvalidRequest(with_naming(message, field), field=field)
