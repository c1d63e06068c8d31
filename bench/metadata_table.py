"""A big Paimon table made of metadata only: schema, manifests, manifest lists and one snapshot, no data file.

A scan plan never opens data files, so a million-file table for the scan-plan benchmark (and its test) is
written straight as manifests in seconds, with the client package's format code, and then registered with
the coordinator by its location. The entries are sorted by partition and rolled into manifests of
`per_manifest` entries, as a merged table's base manifests are, so each manifest's partition statistics
cover a narrow range. The delta manifest list holds one manifest of DELETE entries (a compaction that
removed `deleted` files, spread over all partitions), so a plan must apply deletes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from paimon_format.binary_row import EMPTY_ROW, decode_row, encode_row
from paimon_format.manifest import (
    DataFileMeta,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    encode_manifest,
    encode_manifest_list,
)
from paimon_format.manifest_meta import manifest_file_meta, partition_stats
from paimon_format.schema import SchemaField, TableSchema
from paimon_format.snapshot import CommitKind, Snapshot, format_hint
from paimon_format.types import parse_type

_DT = parse_type("STRING")


@dataclass(frozen=True)
class MetadataTable:
    location: Path
    files: int
    """Live files at snapshot 1 (ADD entries less the deleted ones)."""
    partitions: list[str]
    manifests: int
    """Manifests of snapshot 1, the delete manifest included."""


def partition_name(i: int) -> str:
    return f"p{i:04d}"


def write_metadata_table(
    location: Path, *, files: int, partitions: int, per_manifest: int = 20_000, deleted: int = 0
) -> MetadataTable:
    """Write an append table `(dt STRING, id BIGINT)` partitioned by dt with `files` ADD entries spread
    evenly over `partitions` partitions, and `deleted` of them removed again in the delta manifest."""
    (location / "schema").mkdir(parents=True)
    (location / "manifest").mkdir()
    (location / "snapshot").mkdir()
    schema = TableSchema(
        id=0,
        fields=(SchemaField(0, "dt", "STRING"), SchemaField(1, "id", "BIGINT")),
        highest_field_id=1,
        partition_keys=("dt",),
        options={"bucket": "-1", "file.format": "parquet"},
    )
    (location / "schema" / "schema-0").write_text(schema.to_json())
    names = [partition_name(i) for i in range(partitions)]
    rows = {name: encode_row([name], [_DT]) for name in names}

    def adds() -> Iterator[ManifestEntry]:
        for n in range(files):
            name = names[n * partitions // files]  # sorted by partition
            yield ManifestEntry(FileKind.ADD, rows[name], 0, -1, _file(f"data-{n:08d}-0.parquet"))

    base: list[ManifestFileMeta] = []
    chunk: list[ManifestEntry] = []
    for entry in adds():
        chunk.append(entry)
        if len(chunk) == per_manifest:
            base.append(_write_manifest(location, f"manifest-scan-{len(base)}", chunk))
            chunk = []
    if chunk:
        base.append(_write_manifest(location, f"manifest-scan-{len(base)}", chunk))
    step = max(1, files // deleted) if deleted else 0
    removed = (
        [
            ManifestEntry(
                FileKind.DELETE, rows[names[n * partitions // files]], 0, -1, _file(f"data-{n:08d}-0.parquet")
            )
            for n in range(0, files, step)[:deleted]
        ]
        if deleted
        else []
    )
    delta = [_write_manifest(location, "manifest-scan-deletes", removed)] if removed else []
    (location / "manifest" / "manifest-list-scan-0").write_bytes(encode_manifest_list(base))
    (location / "manifest" / "manifest-list-scan-1").write_bytes(encode_manifest_list(delta))
    snapshot = Snapshot(
        id=1,
        schema_id=0,
        base_manifest_list="manifest-list-scan-0",
        delta_manifest_list="manifest-list-scan-1",
        total_record_count=files - len(removed),
        delta_record_count=-len(removed),
        commit_user="metadata-table",
        commit_identifier=1,
        commit_kind=CommitKind.COMPACT,
        time_millis=0,
    )
    (location / "snapshot" / "snapshot-1").write_text(snapshot.to_json())
    (location / "snapshot" / "LATEST").write_bytes(format_hint(1))
    return MetadataTable(location, files - len(removed), names, len(base) + len(delta))


def _file(name: str) -> DataFileMeta:
    return DataFileMeta(
        file_name=name,
        file_size=1024,
        row_count=10,
        min_key=EMPTY_ROW,
        max_key=EMPTY_ROW,
        key_stats=SimpleStats.EMPTY,
        value_stats=SimpleStats.EMPTY,
        min_sequence_number=0,
        max_sequence_number=0,
        schema_id=0,
        level=0,
        creation_time=0,
        delete_row_count=0,
        file_source=0,
    )


def _write_manifest(location: Path, name: str, entries: list[ManifestEntry]) -> ManifestFileMeta:
    data = encode_manifest(entries)
    (location / "manifest" / name).write_bytes(data)
    stats = partition_stats(
        (e.partition for e in entries),
        lambda row: decode_row(row, [_DT]),
        lambda values: encode_row(values, [_DT]),
        1,
    )
    return manifest_file_meta(name, len(data), entries, 0, stats)
