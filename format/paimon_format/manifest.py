"""Paimon manifest files and manifest lists: Avro bytes <-> immutable records (record version 2).

The Avro schemas carry exactly the fields pypaimon 2.1.0 writes, which is Java Paimon's set plus two
manifest-list fields (``_TOTAL_BUCKETS``, ``_EXTRA_FILES``); Java maps fields by name and ignores them.
Encoding and decoding use fastavro. Decoding reads with the writer's schema and tolerates absent
optional and unknown extra fields, so files written by pypaimon, Java Paimon or older versions decode.

The records themselves are in `format.manifest_model` (imported from here as before); how a manifest is
described in its list, in `format.manifest_meta`.
"""

from __future__ import annotations

import functools
import io
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Final, TypeVar, cast

import fastavro

from paimon_format.avro_container import raw_blocks, read_header
from paimon_format.entry_encoding import EntryEncoder, encode_entries, zigzag

# The records, imported from here by every caller of the codec.
from paimon_format.manifest_model import EMPTY_ROW
from paimon_format.manifest_model import DataFileMeta as DataFileMeta
from paimon_format.manifest_model import FileIdentifier as FileIdentifier
from paimon_format.manifest_model import FileKind as FileKind
from paimon_format.manifest_model import ManifestEntry as ManifestEntry
from paimon_format.manifest_model import ManifestFileMeta as ManifestFileMeta
from paimon_format.manifest_model import SimpleStats as SimpleStats

_VERSION: Final = 2
_CODEC: Final = "zstandard"  # Paimon's default manifest.compression is zstd
_SYNC_INTERVAL: Final = 64_000  # Java Avro's
_COPYABLE: Final = (b"zstandard", b"null")
_COPIED_BLOCK_RECORDS: Final = 64
"""A zstd block of at least this many entries is copied by a merge as it is: a joined block of small
manifests has hundreds, a streaming commit's manifest a few."""

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd  # fastavro's own zstandard codec uses the same

_T = TypeVar("_T")

# --------------------------------------------------------------------------------------------------
# Avro schemas. They go verbatim into each file header; the record encoders below must follow the
# field order. Record names follow Java's converter, though readers ignore them.
# --------------------------------------------------------------------------------------------------

_NAMESPACE = "org.apache.paimon.avro.generated"
_STRINGS = {"type": "array", "items": "string"}


def _optional(name: str, avro_type: object) -> dict[str, object]:
    return {"name": name, "type": ["null", avro_type], "default": None}


def _stats_schema(name: str) -> dict[str, object]:
    return {
        "type": "record",
        "name": name,
        "fields": [
            {"name": "_MIN_VALUES", "type": "bytes"},
            {"name": "_MAX_VALUES", "type": "bytes"},
            _optional("_NULL_COUNTS", {"type": "array", "items": ["null", "long"]}),
        ],
    }


MANIFEST_SCHEMA: Final[Mapping[str, object]] = {
    "type": "record",
    "name": "record",
    "namespace": _NAMESPACE,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {
            "name": "_FILE",
            "type": {
                "type": "record",
                "name": "record__FILE",
                "fields": [
                    {"name": "_FILE_NAME", "type": "string"},
                    {"name": "_FILE_SIZE", "type": "long"},
                    {"name": "_ROW_COUNT", "type": "long"},
                    {"name": "_MIN_KEY", "type": "bytes"},
                    {"name": "_MAX_KEY", "type": "bytes"},
                    {"name": "_KEY_STATS", "type": _stats_schema("record__FILE__KEY_STATS")},
                    {"name": "_VALUE_STATS", "type": _stats_schema("record__FILE__VALUE_STATS")},
                    {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
                    {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
                    {"name": "_SCHEMA_ID", "type": "long"},
                    {"name": "_LEVEL", "type": "int"},
                    {"name": "_EXTRA_FILES", "type": _STRINGS},
                    _optional("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
                    _optional("_DELETE_ROW_COUNT", "long"),
                    _optional("_EMBEDDED_FILE_INDEX", "bytes"),
                    _optional("_FILE_SOURCE", "int"),
                    _optional("_VALUE_STATS_COLS", _STRINGS),
                    _optional("_EXTERNAL_PATH", "string"),
                    _optional("_FIRST_ROW_ID", "long"),
                    _optional("_WRITE_COLS", _STRINGS),
                    _optional("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}),
                ],
            },
        },
    ],
}

MANIFEST_LIST_SCHEMA: Final[Mapping[str, object]] = {
    "type": "record",
    "name": "record",
    "namespace": _NAMESPACE,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats_schema("record__PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        _optional("_MIN_BUCKET", "int"),
        _optional("_MAX_BUCKET", "int"),
        _optional("_MIN_LEVEL", "int"),
        _optional("_MAX_LEVEL", "int"),
        _optional("_MIN_ROW_ID", "long"),
        _optional("_MAX_ROW_ID", "long"),
        _optional("_TOTAL_BUCKETS", "int"),
        _optional("_EXTRA_FILES", _STRINGS),
    ],
}

# --------------------------------------------------------------------------------------------------
# Encoding: plain dicts in Avro field order, written by fastavro with the schema parsed once.
# --------------------------------------------------------------------------------------------------

_PARSED_MANIFEST: Final = fastavro.parse_schema(dict(MANIFEST_SCHEMA))
_PARSED_MANIFEST_LIST: Final = fastavro.parse_schema(dict(MANIFEST_LIST_SCHEMA))
_PARSED_SCHEMAS: Final = {"manifest": _PARSED_MANIFEST, "manifest-list": _PARSED_MANIFEST_LIST}


def _schema_bytes(parsed: Any) -> bytes:
    """The schema as this module writes it into a container's header."""
    buffer = io.BytesIO()
    fastavro.writer(buffer, parsed, [])
    return read_header(buffer.getvalue()).metadata["avro.schema"]


_MANIFEST_SCHEMA_BYTES: Final = _schema_bytes(_PARSED_MANIFEST)
_INT_RANGE: Final = range(-0x8000_0000, 0x8000_0000)
_LONG_RANGE: Final = range(-(2**63), 2**63)


def _int(n: int) -> int:
    # Java's Avro decoder rejects an int field beyond 32 bits, so fail here with a clear message.
    if n not in _INT_RANGE:
        raise ValueError(f"{n} does not fit an Avro int")
    return n


def _long(n: int | None) -> int | None:
    if n is not None and n not in _LONG_RANGE:
        raise ValueError(f"{n} does not fit an Avro long")
    return n


def _stats_record(stats: SimpleStats) -> dict[str, Any]:
    # fastavro reads a tuple inside a union as (branch, value), so arrays go in as lists.
    nulls = None if stats.null_counts is None else list(stats.null_counts)
    return {"_MIN_VALUES": stats.min_values, "_MAX_VALUES": stats.max_values, "_NULL_COUNTS": nulls}


def _list_or_none(values: tuple[Any, ...] | None) -> list[Any] | None:
    return None if values is None else list(values)


def _meta_record(meta: ManifestFileMeta) -> dict[str, Any]:
    def small(n: int | None) -> int | None:
        return None if n is None else _int(n)

    return {
        "_VERSION": _VERSION,
        "_FILE_NAME": meta.file_name,
        "_FILE_SIZE": _long(meta.file_size),
        "_NUM_ADDED_FILES": _long(meta.num_added_files),
        "_NUM_DELETED_FILES": _long(meta.num_deleted_files),
        "_PARTITION_STATS": _stats_record(meta.partition_stats),
        "_SCHEMA_ID": _long(meta.schema_id),
        "_MIN_BUCKET": small(meta.min_bucket),
        "_MAX_BUCKET": small(meta.max_bucket),
        "_MIN_LEVEL": small(meta.min_level),
        "_MAX_LEVEL": small(meta.max_level),
        "_MIN_ROW_ID": _long(meta.min_row_id),
        "_MAX_ROW_ID": _long(meta.max_row_id),
        "_TOTAL_BUCKETS": small(meta.total_buckets),
        "_EXTRA_FILES": _list_or_none(meta.extra_files),
    }


@functools.cache
def _header(schema_name: str) -> bytes:
    """The Avro container header of every file this process writes with the named schema, its sync marker
    last. Rendering a header means serialising the schema to JSON, a good part of a small commit's CPU,
    so it is made once: the sync marker only has to be one the file's own blocks end with, and readers
    take it from the header."""
    buffer = io.BytesIO()
    fastavro.writer(buffer, _PARSED_SCHEMAS[schema_name], [], codec=_CODEC)
    return buffer.getvalue()


_compressors = threading.local()


def _compressed(data: bytes) -> bytes:
    """`data` as one zstd frame, by this thread's compressor: zstd.compress() sets up a new context for
    every call, which costs more than compressing a small commit's manifest."""
    compressor: zstd.ZstdCompressor | None = getattr(_compressors, "compressor", None)
    if compressor is None:
        compressor = _compressors.compressor = zstd.ZstdCompressor()
    return compressor.compress(data, mode=zstd.ZstdCompressor.FLUSH_FRAME)


def _container(schema_name: str, records: Sequence[bytes]) -> bytes:
    """One Avro container file of records already encoded, in order: the header, then blocks cut as soon
    as they reach the sync interval, each compressed with zstd and followed by the sync marker (what
    fastavro's writer would write)."""
    header = _header(schema_name)
    sync = header[-16:]
    parts = [header]
    start = size = 0
    for end, record in enumerate(records, 1):
        size += len(record)
        if size >= _SYNC_INTERVAL or end == len(records):
            compressed = _compressed(b"".join(records[start:end]))
            parts += (zigzag(end - start), zigzag(len(compressed)), compressed, sync)
            start, size = end, 0
    return b"".join(parts)


def encode_manifest(entries: Sequence[ManifestEntry]) -> bytes:
    """Serialise manifest entries into the bytes of one Avro manifest file."""
    return manifest_container(encode_entries(entries))


def manifest_container(records: Sequence[bytes]) -> bytes:
    """One Avro manifest file of entries already encoded (`encode_entries`), in order."""
    return _container("manifest", records)


def concatenate_manifests(files: Sequence[bytes]) -> bytes | None:
    """One manifest file holding the entries of `files` in order, made by copying their Avro blocks,
    never decoding an entry; None when a file was written with another schema than ours, or a codec
    other than zstd or none, whose blocks could not be copied as they are, or one that is damaged.

    A merged manifest is merged again at every later minor merge until it reaches the target size, so
    its cost must not grow with it: a full block is copied still compressed, and only the small blocks
    (one per small manifest) are decompressed and joined into full ones, which later merges copy."""
    header = _header("manifest")
    sync = header[-16:]
    parts: list[bytes | memoryview] = [header]
    small: list[bytes] = []
    small_count = small_size = 0

    def flush_small() -> None:
        nonlocal small_count, small_size
        if small_count:
            compressed = _compressed(b"".join(small))
            parts.extend((zigzag(small_count), zigzag(len(compressed)), compressed, sync))
            small.clear()
            small_count = small_size = 0

    try:
        for data in files:
            container = read_header(data)
            codec = container.codec
            if container.metadata.get("avro.schema") != _MANIFEST_SCHEMA_BYTES or codec not in _COPYABLE:
                return None
            for block in raw_blocks(data, container):
                if codec == b"zstandard" and block.count >= _COPIED_BLOCK_RECORDS:
                    flush_small()
                    parts.extend((zigzag(block.count), zigzag(len(block.data)), block.data, sync))
                    continue
                records = zstd.decompress(block.data) if codec == b"zstandard" else bytes(block.data)
                small.append(records)
                small_count += block.count
                small_size += len(records)
                if small_size >= _SYNC_INTERVAL:
                    flush_small()
    except (ValueError, zstd.ZstdError):
        return None  # not a file to copy blocks from: the merge decodes it, and says what is wrong
    flush_small()
    return b"".join(parts)


def encode_entry(entry: ManifestEntry) -> bytes:
    """One manifest entry as a bare Avro record of the manifest schema (no container, no schema)."""
    return EntryEncoder().encode(entry)


def encode_manifest_list(metas: Sequence[ManifestFileMeta]) -> bytes:
    """Serialise manifest file metas into the bytes of one Avro manifest-list file."""
    return _container("manifest-list", [_encoded_meta(meta) for meta in metas])


@functools.lru_cache(maxsize=16_384)
def _encoded_meta(meta: ManifestFileMeta) -> bytes:
    """One manifest-list record. Every commit's base manifest list names all the table's manifests again,
    so a coordinator committing around the clock encodes each one once and remembers it (a few hundred
    bytes each)."""
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, _PARSED_MANIFEST_LIST, _meta_record(meta))
    return buffer.getvalue()


# --------------------------------------------------------------------------------------------------
# Decoding (the only place that sees fastavro's untyped dicts)
# --------------------------------------------------------------------------------------------------

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MILLISECOND: Final = timedelta(milliseconds=1)


def _tuple_or_none(values: list[Any] | None) -> tuple[Any, ...] | None:
    return None if values is None else tuple(values)


def _millis(value: object) -> int | None:
    # fastavro turns timestamp-millis into an aware UTC datetime; a writer without the logical type
    # (or local-timestamp-millis, which gives a naive datetime) must round-trip to the same long.
    if value is None or isinstance(value, int):
        return value
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
        return (aware - _EPOCH) // _MILLISECOND
    raise ValueError(f"unexpected _CREATION_TIME value {value!r}")


def _stats_from(record: Mapping[str, Any]) -> SimpleStats:
    lo, hi, nulls = record["_MIN_VALUES"], record["_MAX_VALUES"], record.get("_NULL_COUNTS")
    if lo == EMPTY_ROW and hi == EMPTY_ROW and nulls == []:
        return SimpleStats.EMPTY  # share the common empty-stats object across big manifests
    return SimpleStats(lo, hi, _tuple_or_none(nulls))


def _check_version(record: Mapping[str, Any]) -> None:
    version = record["_VERSION"]
    if version != _VERSION:
        raise ValueError(f"unsupported manifest record _VERSION {version} (expected {_VERSION})")


def _entry_from(record: Mapping[str, Any]) -> ManifestEntry:
    _check_version(record)
    f = record["_FILE"]
    meta = DataFileMeta(
        file_name=f["_FILE_NAME"],
        file_size=f["_FILE_SIZE"],
        row_count=f["_ROW_COUNT"],
        min_key=f["_MIN_KEY"],
        max_key=f["_MAX_KEY"],
        key_stats=_stats_from(f["_KEY_STATS"]),
        value_stats=_stats_from(f["_VALUE_STATS"]),
        min_sequence_number=f["_MIN_SEQUENCE_NUMBER"],
        max_sequence_number=f["_MAX_SEQUENCE_NUMBER"],
        schema_id=f["_SCHEMA_ID"],
        level=f["_LEVEL"],
        extra_files=tuple(f.get("_EXTRA_FILES") or ()),
        creation_time=_millis(f.get("_CREATION_TIME")),
        delete_row_count=f.get("_DELETE_ROW_COUNT"),
        embedded_index=f.get("_EMBEDDED_FILE_INDEX"),
        file_source=f.get("_FILE_SOURCE"),
        # Absent (older writers) means stats over all columns, which is what null says.
        value_stats_cols=_tuple_or_none(f.get("_VALUE_STATS_COLS")),
        external_path=f.get("_EXTERNAL_PATH"),
        first_row_id=f.get("_FIRST_ROW_ID"),
        write_cols=_tuple_or_none(f.get("_WRITE_COLS")),
        write_cols_sequences=_tuple_or_none(f.get("_WRITE_COLS_SEQUENCES")),
    )
    return ManifestEntry(
        kind=FileKind(record["_KIND"]),
        partition=record["_PARTITION"],
        bucket=record["_BUCKET"],
        total_buckets=record["_TOTAL_BUCKETS"],
        file=meta,
    )


def _meta_from(record: Mapping[str, Any]) -> ManifestFileMeta:
    _check_version(record)
    return ManifestFileMeta(
        file_name=record["_FILE_NAME"],
        file_size=record["_FILE_SIZE"],
        num_added_files=record["_NUM_ADDED_FILES"],
        num_deleted_files=record["_NUM_DELETED_FILES"],
        partition_stats=_stats_from(record["_PARTITION_STATS"]),
        schema_id=record["_SCHEMA_ID"],
        min_bucket=record.get("_MIN_BUCKET"),
        max_bucket=record.get("_MAX_BUCKET"),
        min_level=record.get("_MIN_LEVEL"),
        max_level=record.get("_MAX_LEVEL"),
        min_row_id=record.get("_MIN_ROW_ID"),
        max_row_id=record.get("_MAX_ROW_ID"),
        total_buckets=record.get("_TOTAL_BUCKETS"),
        extra_files=_tuple_or_none(record.get("_EXTRA_FILES")),
    )


def _records(data: bytes, what: str) -> Iterator[Mapping[str, Any]]:
    try:
        for record in fastavro.reader(io.BytesIO(data)):
            yield cast(Mapping[str, Any], record)
    except Exception as exc:
        # Corrupt input surfaces as many types (EOFError, struct errors, the zstd backend's own error);
        # callers only need to know the bytes are unreadable.
        raise ValueError(f"corrupt {what}: {exc}") from exc


def _decoded(make: Callable[[Mapping[str, Any]], _T], data: bytes, what: str) -> Iterator[_T]:
    """`make` of each record; a record that lacks a field, or whose writer schema gives a field another
    type (a string where Paimon has a record), is not a Paimon record: a ValueError, as corrupt bytes are."""
    try:
        for record in _records(data, what):
            yield make(record)
    except KeyError as exc:
        raise ValueError(f"{what} record lacks required field {exc.args[0]}") from exc
    except (TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"malformed {what} record: {exc}") from exc


def decode_manifest(data: bytes) -> list[ManifestEntry]:
    """Parse the bytes of an Avro manifest file into its entries."""
    return list(_decoded(_entry_from, data, "manifest file"))


def decode_entry(data: bytes) -> ManifestEntry:
    """The inverse of `encode_entry`."""
    record = fastavro.schemaless_reader(io.BytesIO(data), _PARSED_MANIFEST, None)
    return _entry_from(cast(Mapping[str, Any], record))


def iter_manifest(data: bytes) -> Iterator[ManifestEntry]:
    """The entries of an Avro manifest file one by one, as `decode_manifest` but without the list."""
    return _decoded(_entry_from, data, "manifest file")


def decode_manifest_list(data: bytes) -> list[ManifestFileMeta]:
    """Parse the bytes of an Avro manifest-list file into its manifest file metas."""
    return list(_decoded(_meta_from, data, "manifest list"))
