"""A ManifestCommittable as a writer sends it -> Paimon manifest entries, validated field by field.

Paimon's collectChanges: newFiles -> ADD and deletedFiles -> DELETE (the append part), compactBefore ->
DELETE and compactAfter -> ADD (the compact part), changelog files to their own manifests. Every check
here names the offending field (by its name on the wire), and nothing in this module touches storage or
the database. What it reads is shaped by manifest_committable's Protocols, not by the wire models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from pydantic import JsonValue

from coordinator.domain.added_files import AddedFile, Where
from coordinator.domain.added_files import file_field as _file_path
from coordinator.domain.commit_digest import changes_digest
from coordinator.domain.manifest_committable import (
    CommitMessage,
    DataFile,
    KeyStats,
    ManifestCommittable,
)
from coordinator.domain.table_paths import check_name
from coordinator.domain.table_schema import TableShape
from coordinator.errors import InvalidRequest
from paimon_format.binary_row import EMPTY_ROW, encode_row
from paimon_format.manifest import DataFileMeta, FileKind, ManifestEntry, SimpleStats
from paimon_format.snapshot import CommitKind
from paimon_format.types import DataType
from paimon_format.values import from_json_value

DATA_FILE_SUFFIXES = (".parquet", ".orc", ".avro")
FORCE_CREATE_SNAPSHOT = "commit.force-create-snapshot"
"""Paimon's table option: every commit makes a snapshot, even one that changes nothing."""
FILE_SOURCE_APPEND = 0
FILE_SOURCE_COMPACT = 1


@dataclass(frozen=True)
class OverwriteTarget:
    """Which live files an OVERWRITE replaces: whole table, a set of partitions, or a partition spec."""

    whole_table: bool = False
    partitions: frozenset[bytes] = frozenset()
    spec: dict[int, object] | None = None

    def matches(self, partition: bytes, shape: TableShape) -> bool:
        if self.whole_table:
            return True
        if self.spec is not None:
            values = shape.decode_partition(partition)
            return all(values[i] == v for i, v in self.spec.items())
        return partition in self.partitions


@dataclass(frozen=True)
class ResolvedCommittable:
    """A committable as the commit pipeline sees it: everything later steps need, no wire model."""

    commit_user: str
    identifier: int
    watermark: int | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    base_snapshot_id: int | None = None
    append: list[ManifestEntry] = field(default_factory=list)
    append_changelog: list[ManifestEntry] = field(default_factory=list)
    compact: list[ManifestEntry] = field(default_factory=list)
    compact_changelog: list[ManifestEntry] = field(default_factory=list)
    overwrite: OverwriteTarget | None = None
    force_snapshot: bool = False
    """The table's `commit.force-create-snapshot`: a commit that changes nothing still gets a snapshot."""
    added: list[AddedFile] | None = None
    """The files it adds in its request's order, with their place in it; None when it came without a
    request body of messages (a REST proposal's manifests)."""

    @cached_property
    def kinds(self) -> tuple[CommitKind, ...]:
        """The kinds of the snapshots it asks for, in order: the one commit-kind rule.

        An overwrite, or an append that deletes files, is OVERWRITE; other appended or changelog files
        are APPEND; compaction changes are a COMPACT after it, as in Paimon. A commit of no changes asks
        for none (Paimon's writers ignore an empty commit), unless the table forces a snapshot: then it
        is an APPEND with an empty delta, which carries its identifier, watermark and properties.
        """
        kinds = []
        if self.overwrite is not None or any(e.kind == FileKind.DELETE for e in self.append):
            kinds.append(CommitKind.OVERWRITE)
        elif self.append or self.append_changelog:
            kinds.append(CommitKind.APPEND)
        if self.compact or self.compact_changelog:
            kinds.append(CommitKind.COMPACT)
        if not kinds and self.force_snapshot:
            kinds.append(CommitKind.APPEND)
        return tuple(kinds)

    @property
    def kind(self) -> CommitKind:
        """The kind a commit is counted under: its first snapshot's (APPEND when it asks for none)."""
        return self.kinds[0] if self.kinds else CommitKind.APPEND

    @cached_property
    def digest(self) -> str:
        """The digest of its changes: a resend is the same changes, not the same name (commit_digest)."""
        return changes_digest(self)

    @cached_property
    def file_names(self) -> frozenset[str]:
        """Every file it names, extra files included: files that are not orphans while it is pending."""
        names: set[str] = set()
        for entries in (self.append, self.append_changelog, self.compact, self.compact_changelog):
            for entry in entries:
                names.add(entry.file.file_name)
                names.update(entry.file.extra_files)
        return frozenset(names)


def resolve_committable(
    request: ManifestCommittable, shape: TableShape, *, now_millis: int
) -> ResolvedCommittable:
    """Validate a commit request against the table and turn it into manifest entries.

    This is the anti-corruption layer of the commit pipeline: the committable as sent ends here (the
    wire's CommitRequest, or anything of its shape), and every rejection is an InvalidRequest naming the
    offending field.

    Raises:
        InvalidRequest: naming the first offending field.
    """
    resolver = _Resolver(shape, now_millis)
    append: list[ManifestEntry] = []
    append_changelog: list[ManifestEntry] = []
    compact: list[ManifestEntry] = []
    compact_changelog: list[ManifestEntry] = []
    added: list[AddedFile] = []
    # (wire name, attribute, kind, file source) of each file list of a message, and where its entries go.
    lists = (
        ("newFiles", "new_files", FileKind.ADD, FILE_SOURCE_APPEND, append),
        ("deletedFiles", "deleted_files", FileKind.DELETE, None, append),
        ("changelogFiles", "changelog_files", FileKind.ADD, FILE_SOURCE_APPEND, append_changelog),
        ("compactBefore", "compact_before", FileKind.DELETE, None, compact),
        ("compactAfter", "compact_after", FileKind.ADD, FILE_SOURCE_COMPACT, compact),
        (
            "compactChangelogFiles",
            "compact_changelog_files",
            FileKind.ADD,
            FILE_SOURCE_COMPACT,
            compact_changelog,
        ),
    )
    for i, message in enumerate(request.messages):
        partition = resolver.partition(message.partition, i)
        total_buckets = resolver.total_buckets(message, i)
        for name, attribute, kind, source, target_list in lists:
            files: Sequence[DataFile] = getattr(message, attribute)
            if not files:
                continue
            for j, f in enumerate(files):
                meta = resolver.data_file(f, (i, name, j), source)
                entry = ManifestEntry(kind, partition, message.bucket, total_buckets, meta)
                target_list.append(entry)
                if kind == FileKind.ADD:
                    added.append(AddedFile(entry, (i, name, j), f.schema_id is not None))
    return ResolvedCommittable(
        request.commit_user,
        request.identifier,
        watermark=request.watermark,
        properties=dict(request.properties),
        base_snapshot_id=request.base_snapshot_id,
        append=append,
        append_changelog=append_changelog,
        compact=compact,
        compact_changelog=compact_changelog,
        overwrite=_overwrite_target(request, shape, append, compact or compact_changelog),
        force_snapshot=shape.schema.options.get(FORCE_CREATE_SNAPSHOT, "false").lower() == "true",
        added=added,
    )


def _overwrite_target(
    request: ManifestCommittable,
    shape: TableShape,
    append: list[ManifestEntry],
    compacts: list[ManifestEntry],
) -> OverwriteTarget | None:
    spec = request.overwrite
    if spec is None:
        return None
    if compacts:
        raise InvalidRequest("an overwrite cannot carry compaction changes", field="overwrite")
    if spec.mode == "table" or (spec.mode == "dynamic" and not shape.partition_names):
        return OverwriteTarget(whole_table=True)
    if spec.mode == "dynamic":
        if spec.partition is not None:
            raise InvalidRequest(
                "a dynamic overwrite takes its partitions from the new files", field="overwrite.partition"
            )
        return OverwriteTarget(partitions=frozenset(e.partition for e in append))
    return partition_spec_target(spec.partition, shape, append)


def partition_spec_target(
    spec: Mapping[str, JsonValue] | None, shape: TableShape, appended: list[ManifestEntry]
) -> OverwriteTarget:
    if not spec:
        raise InvalidRequest("a static overwrite needs a partition", field="overwrite.partition")
    values: dict[int, object] = {}
    for name, raw in spec.items():
        if name not in shape.partition_names:
            raise InvalidRequest(f"{name!r} is not a partition key", field=f"overwrite.partition.{name}")
        index = shape.partition_names.index(name)
        values[index] = _typed(raw, shape.partition_types[index], f"overwrite.partition.{name}")
    target = OverwriteTarget(spec=values)
    for entry in appended:
        if not target.matches(entry.partition, shape):
            raise InvalidRequest(
                f"new file {entry.file.file_name} lies outside the overwritten partition",
                field="overwrite.partition",
            )
    return target


def _typed(raw: JsonValue, data_type: DataType, path: str) -> object:
    try:
        return from_json_value(raw, data_type, field=path)
    except ValueError as e:
        raise InvalidRequest(str(e), field=path) from None


class _Resolver:
    def __init__(self, shape: TableShape, now_millis: int) -> None:
        self.shape = shape
        self.now_millis = now_millis
        self._partitions: dict[tuple[tuple[str, str, object], ...], bytes] = {}

    def partition(self, values: Mapping[str, JsonValue], message: int) -> bytes:
        """The BinaryRow of a message's partition, encoded once per distinct partition of the commit."""
        shape = self.shape
        cache_key: tuple[tuple[str, str, object], ...] | None
        try:
            # The type is part of the key: 1, 1.0 and true are equal in Python, not in a partition.
            if len(values) == 1:
                ((name, value),) = values.items()
                cache_key = ((name, type(value).__name__, value),)
            else:
                cache_key = tuple(sorted((k, type(v).__name__, v) for k, v in values.items()))
            cached = self._partitions.get(cache_key)
        except TypeError:  # a list or an object as a value: invalid, and said so below
            cache_key = cached = None
        if cached is not None:
            return cached
        path = f"messages[{message}].partition"
        for name in values:
            if name not in shape.partition_names:
                raise InvalidRequest(f"{name!r} is not a partition key of this table", field=f"{path}.{name}")
        typed = []
        for name, data_type in zip(shape.partition_names, shape.partition_types, strict=True):
            if name not in values:
                raise InvalidRequest(f"partition value for {name!r} is missing", field=f"{path}.{name}")
            typed.append(_typed(values[name], data_type, f"{path}.{name}"))
        row = shape.encode_partition(typed)
        if cache_key is not None:
            self._partitions[cache_key] = row
        return row

    def total_buckets(self, message: CommitMessage, index: int) -> int:
        table_buckets = self.shape.bucket
        if table_buckets <= 0:
            if message.bucket == 0 and message.total_buckets in (None, table_buckets):
                return table_buckets
            path = f"messages[{index}]"
            if message.bucket != 0:
                raise InvalidRequest(
                    f"bucket {message.bucket} out of range: a bucket-unaware table writes bucket 0",
                    field=f"{path}.bucket",
                )
            if message.total_buckets not in (None, table_buckets):
                raise InvalidRequest(
                    f"totalBuckets must be {table_buckets} for this table", field=f"{path}.totalBuckets"
                )
            return table_buckets
        total = table_buckets if message.total_buckets is None else message.total_buckets
        path = f"messages[{index}]"
        if total <= 0:
            raise InvalidRequest(
                "totalBuckets must be positive for a fixed-bucket table", field=f"{path}.totalBuckets"
            )
        if message.bucket >= total:
            raise InvalidRequest(f"bucket {message.bucket} out of range [0, {total})", field=f"{path}.bucket")
        return total

    def key(self, values: Sequence[JsonValue], path: str) -> bytes:
        shape = self.shape
        if len(values) != len(shape.key_types):
            raise InvalidRequest(
                f"expected {len(shape.key_types)} key value(s) {list(shape.key_names)}, got {len(values)}",
                field=path,
            )
        typed = [
            _typed(v, t, f"{path}[{i}]") for i, (v, t) in enumerate(zip(values, shape.key_types, strict=True))
        ]
        return encode_row(typed, shape.key_types)

    def key_stats(self, stats: KeyStats | None, min_key: bytes, max_key: bytes, path: str) -> SimpleStats:
        shape = self.shape
        arity = len(shape.key_types)
        if arity == 0:
            if stats is not None:
                raise InvalidRequest("an append table has no key stats", field=path)
            return SimpleStats.EMPTY
        if stats is None:
            if arity > 1:
                raise InvalidRequest(
                    "keyStats are required when the primary key has several fields", field=path
                )
            # With one key field, the file's min and max key are exactly its key statistics.
            return SimpleStats(min_key, max_key, (0,))
        if not len(stats.min_values) == len(stats.max_values) == len(stats.null_counts) == arity:
            raise InvalidRequest(f"keyStats must have {arity} value(s) per list", field=path)
        return SimpleStats(
            self.key(stats.min_values, f"{path}.minValues"),
            self.key(stats.max_values, f"{path}.maxValues"),
            tuple(stats.null_counts),
        )

    def data_file(self, f: DataFile, where: Where, source: int | None) -> DataFileMeta:
        """The DataFileMeta of file `where`: (message, file list, position in it)."""
        shape = self.shape
        # A file sent without its schemaId was written with the table's current schema, never schema 0:
        # its entry would make readers read columns added since as null (file_checks checks which).
        schema_id = shape.schema.id if f.schema_id is None else f.schema_id
        if (
            not f.file_name.endswith(DATA_FILE_SUFFIXES)
            or f.min_sequence_number > f.max_sequence_number
            or f.delete_row_count > f.row_count
            or f.level > shape.max_level
            or schema_id > shape.schema.id
        ):
            self._refuse(f, _file_path(where))
        if f.extra_files:
            self._check_extra_files(f.extra_files, _file_path(where))
        if shape.key_types or f.min_key or f.max_key or f.key_stats is not None:
            path = _file_path(where)
            min_key = self.key(f.min_key, f"{path}.minKey")
            max_key = self.key(f.max_key, f"{path}.maxKey")
            if shape.key_types and shape.decode_key(min_key) > shape.decode_key(max_key):
                raise InvalidRequest("minKey is greater than maxKey", field=f"{path}.minKey")
            key_stats = self.key_stats(f.key_stats, min_key, max_key, f"{path}.keyStats")
        else:  # an append table's file: no key, no key statistics
            min_key = max_key = EMPTY_ROW
            key_stats = SimpleStats.EMPTY
        return DataFileMeta(
            file_name=f.file_name,
            file_size=f.file_size,
            row_count=f.row_count,
            min_key=min_key,
            max_key=max_key,
            key_stats=key_stats,
            value_stats=SimpleStats.EMPTY,
            min_sequence_number=f.min_sequence_number,
            max_sequence_number=f.max_sequence_number,
            schema_id=schema_id,
            level=f.level,
            extra_files=tuple(f.extra_files),
            creation_time=f.creation_time if f.creation_time is not None else self.now_millis,
            delete_row_count=f.delete_row_count,
            file_source=f.file_source if f.file_source is not None else source,
            value_stats_cols=(),
        )

    def _refuse(self, f: DataFile, path: str) -> None:
        """Raises the InvalidRequest for the first of a file's numbers or names that is wrong."""
        shape = self.shape
        if not f.file_name.endswith(DATA_FILE_SUFFIXES):
            raise InvalidRequest(
                f"file name must end with one of {', '.join(DATA_FILE_SUFFIXES)}", field=f"{path}.fileName"
            )
        if f.min_sequence_number > f.max_sequence_number:
            raise InvalidRequest(
                "minSequenceNumber is greater than maxSequenceNumber", field=f"{path}.minSequenceNumber"
            )
        if f.delete_row_count > f.row_count:
            raise InvalidRequest("deleteRowCount is greater than rowCount", field=f"{path}.deleteRowCount")
        if f.level > shape.max_level:
            raise InvalidRequest(
                f"level {f.level} is above the table's top level {shape.max_level}", field=f"{path}.level"
            )
        if f.schema_id is not None and f.schema_id > shape.schema.id:
            raise InvalidRequest(
                f"schema {f.schema_id} does not exist (latest is {shape.schema.id})", field=f"{path}.schemaId"
            )

    @staticmethod
    def _check_extra_files(extra_files: Sequence[str], path: str) -> None:
        # The wire model already holds them to bare names; a body built without it is held here.
        for j, extra in enumerate(extra_files):
            check_name(extra, f"{path}.extraFiles[{j}]", "extra file")
