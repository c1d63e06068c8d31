"""Manifest / manifest-list Avro: round trips, and compatibility with pypaimon's writers and readers."""

from __future__ import annotations

import dataclasses
import io
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_format.manifest import (
    DataFileMeta,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    concatenate_manifests,
    decode_manifest,
    decode_manifest_list,
    encode_manifest,
    encode_manifest_list,
)
from paimon_format.manifest_meta import combined_meta, manifest_file_meta, partition_stats
from paimon_format.snapshot import (
    CommitKind,
    Snapshot,
    format_hint,
    snapshot_file_name,
)
from tests.support.builders import ADD, append_shape, entry

from ._pypaimon_table import EXPECTED_ROWS, PypaimonTable, read_rows

EMPTY_ROW = bytes(12)
INT = st.integers(-(2**31), 2**31 - 1)
LONG = st.integers(-(2**63), 2**63 - 1)
NAME = st.text(max_size=20)
ROW = st.binary(max_size=40)
# fastavro reads timestamp-millis back through datetime, so keep to datetime's range (years 1..9999).
MILLIS = st.integers(-62135596800000, 253402300799999)


def _optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


STATS = st.builds(
    SimpleStats,
    min_values=ROW,
    max_values=ROW,
    null_counts=_optional(st.lists(_optional(LONG), max_size=4).map(tuple)),
)
NAMES = st.lists(NAME, max_size=3).map(tuple)
FILES = st.builds(
    DataFileMeta,
    file_name=NAME,
    file_size=LONG,
    row_count=LONG,
    min_key=ROW,
    max_key=ROW,
    key_stats=STATS,
    value_stats=STATS,
    min_sequence_number=LONG,
    max_sequence_number=LONG,
    schema_id=LONG,
    level=INT,
    extra_files=NAMES,
    creation_time=_optional(MILLIS),
    delete_row_count=_optional(LONG),
    embedded_index=_optional(st.binary(max_size=10)),
    file_source=_optional(INT),
    value_stats_cols=_optional(NAMES),
    external_path=_optional(NAME),
    first_row_id=_optional(LONG),
    write_cols=_optional(NAMES),
    write_cols_sequences=_optional(st.lists(LONG, max_size=3).map(tuple)),
)
ENTRIES = st.builds(
    ManifestEntry,
    kind=st.sampled_from(FileKind),
    partition=ROW,
    bucket=INT,
    total_buckets=INT,
    file=FILES,
)
METAS = st.builds(
    ManifestFileMeta,
    file_name=NAME,
    file_size=LONG,
    num_added_files=LONG,
    num_deleted_files=LONG,
    partition_stats=STATS,
    schema_id=LONG,
    min_bucket=_optional(INT),
    max_bucket=_optional(INT),
    min_level=_optional(INT),
    max_level=_optional(INT),
    min_row_id=_optional(LONG),
    max_row_id=_optional(LONG),
    total_buckets=_optional(INT),
    extra_files=_optional(NAMES),
)


def _avro(data: bytes) -> tuple[str, list[dict[str, Any]]]:
    reader = fastavro.reader(io.BytesIO(data))
    records = []
    for record in reader:
        assert isinstance(record, dict)
        records.append(record)
    return reader.codec, records


def _entry(
    name: str,
    *,
    kind: FileKind = FileKind.ADD,
    partition: bytes = EMPTY_ROW,
    bucket: int = 0,
    total_buckets: int = 2,
    level: int = 0,
    rows: int = 10,
    first_row_id: int | None = None,
) -> ManifestEntry:
    meta = DataFileMeta(
        name,
        100,
        rows,
        EMPTY_ROW,
        EMPTY_ROW,
        SimpleStats.EMPTY,
        SimpleStats.EMPTY,
        0,
        0,
        0,
        level,
        first_row_id=first_row_id,
    )
    return ManifestEntry(kind, partition, bucket, total_buckets, meta)


# ------------------------------------------------------------------------------------------------
# Round trips and container format
# ------------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(ENTRIES, max_size=5))
def test_manifest_round_trip(entries: list[ManifestEntry]) -> None:
    assert decode_manifest(encode_manifest(entries)) == entries


@settings(max_examples=60, deadline=None)
@given(st.lists(METAS, max_size=5))
def test_manifest_list_round_trip(metas: list[ManifestFileMeta]) -> None:
    assert decode_manifest_list(encode_manifest_list(metas)) == metas


def test_records_carry_version_2_and_zstandard_codec() -> None:
    entries = [_entry("a.parquet"), _entry("b.parquet", kind=FileKind.DELETE)]
    codec, records = _avro(encode_manifest(entries))
    assert codec == "zstandard"
    assert [r["_VERSION"] for r in records] == [2, 2]
    assert [r["_KIND"] for r in records] == [0, 1]
    meta = manifest_file_meta("m-0", 10, entries, 0, SimpleStats.EMPTY)
    codec, records = _avro(encode_manifest_list([meta, meta]))
    assert codec == "zstandard"
    assert [r["_VERSION"] for r in records] == [2, 2]


def test_field_names_match_pypaimon_writer_schemas() -> None:
    from pypaimon.manifest.schema.manifest_entry import MANIFEST_ENTRY_SCHEMA
    from pypaimon.manifest.schema.manifest_file_meta import MANIFEST_FILE_META_SCHEMA

    def names(schema: dict[str, Any]) -> list[str]:
        return [f["name"] for f in schema["fields"]]

    def nested(schema: dict[str, Any], name: str) -> dict[str, Any]:
        return next(f["type"] for f in schema["fields"] if f["name"] == name)

    reader = fastavro.reader(io.BytesIO(encode_manifest([_entry("a")])))
    ours = reader.writer_schema
    assert isinstance(ours, dict)
    assert names(ours) == names(MANIFEST_ENTRY_SCHEMA)
    assert names(nested(ours, "_FILE")) == names(nested(MANIFEST_ENTRY_SCHEMA, "_FILE"))
    ours_list = fastavro.reader(io.BytesIO(encode_manifest_list([]))).writer_schema
    assert isinstance(ours_list, dict)
    assert names(ours_list) == names(MANIFEST_FILE_META_SCHEMA)
    assert names(ours_list)[-2:] == ["_TOTAL_BUCKETS", "_EXTRA_FILES"]


def test_large_manifests_are_split_into_blocks() -> None:
    entries = [_entry(f"data-{i:05d}.parquet", bucket=i % 7, level=i % 3) for i in range(3000)]
    data = encode_manifest(entries)
    blocks = list(fastavro.block_reader(io.BytesIO(data)))
    assert len(blocks) > 1
    assert sum(b.num_records for b in blocks) == 3000
    assert decode_manifest(data) == entries
    assert encode_manifest(entries[:-1]) != data


def test_creation_time_is_stored_as_raw_millis() -> None:
    entry = dataclasses.replace(
        _entry("a"), file=dataclasses.replace(_entry("a").file, creation_time=1795283568688)
    )
    data = encode_manifest([entry])
    _, records = _avro(data)
    created = records[0]["_FILE"]["_CREATION_TIME"]
    assert int(created.timestamp() * 1000) == 1795283568688
    assert decode_manifest(data)[0].file.creation_time == 1795283568688


def test_empty_stats_decode_to_the_shared_empty_object() -> None:
    decoded = decode_manifest(encode_manifest([_entry("a")]))[0]
    assert decoded.file.key_stats is SimpleStats.EMPTY


# ------------------------------------------------------------------------------------------------
# Tolerance of foreign (Java-shaped / older) files and rejection of broken ones
# ------------------------------------------------------------------------------------------------

_STATS_SCHEMA = {
    "type": "record",
    "name": "S",
    "fields": [
        {"name": "_MIN_VALUES", "type": "bytes"},
        {"name": "_MAX_VALUES", "type": "bytes"},
        {
            "name": "_NULL_COUNTS",
            "type": ["null", {"type": "array", "items": ["null", "long"]}],
            "default": None,
        },
    ],
}


def _java_like_manifest(version: int = 2, drop: str | None = None) -> bytes:
    # A reduced schema without the optional tail fields, in a different field order, like old Java.
    file_fields: list[dict[str, Any]] = [
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_MIN_KEY", "type": "bytes"},
        {"name": "_MAX_KEY", "type": "bytes"},
        {"name": "_KEY_STATS", "type": _STATS_SCHEMA},
        {"name": "_VALUE_STATS", "type": "S"},
        {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_LEVEL", "type": "int"},
        {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
        {"name": "_UNKNOWN_FUTURE", "type": "string"},
    ]
    top_fields: list[dict[str, Any]] = [
        {"name": "_KIND", "type": "int"},
        {"name": "_VERSION", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": {"type": "record", "name": "F", "fields": file_fields}},
    ]
    stats = {"_MIN_VALUES": b"lo", "_MAX_VALUES": b"hi", "_NULL_COUNTS": [1, None]}
    file = {
        "_FILE_NAME": "data-1.orc",
        "_FILE_SIZE": 7,
        "_ROW_COUNT": 3,
        "_MIN_KEY": b"k1",
        "_MAX_KEY": b"k2",
        "_KEY_STATS": stats,
        "_VALUE_STATS": stats,
        "_MIN_SEQUENCE_NUMBER": 4,
        "_MAX_SEQUENCE_NUMBER": 6,
        "_SCHEMA_ID": 1,
        "_LEVEL": 3,
        "_EXTRA_FILES": ["x.index"],
        "_UNKNOWN_FUTURE": "ignored",
    }
    record = {
        "_KIND": 1,
        "_VERSION": version,
        "_PARTITION": b"p",
        "_BUCKET": 5,
        "_TOTAL_BUCKETS": 8,
        "_FILE": file,
    }
    if drop is not None:
        top_fields = [f for f in top_fields if f["name"] != drop]
        del record[drop]
    buf = io.BytesIO()
    schema = {"type": "record", "name": "org.apache.paimon.avro.generated.record", "fields": top_fields}
    fastavro.writer(buf, fastavro.parse_schema(schema), [record], codec="deflate")
    return buf.getvalue()


def test_decode_tolerates_java_shaped_manifest() -> None:
    [entry] = decode_manifest(_java_like_manifest())
    stats = SimpleStats(b"lo", b"hi", (1, None))
    assert entry == ManifestEntry(
        FileKind.DELETE,
        b"p",
        5,
        8,
        DataFileMeta(
            "data-1.orc", 7, 3, b"k1", b"k2", stats, stats, 4, 6, 1, 3, ("x.index",), value_stats_cols=None
        ),
    )


def test_decode_tolerates_minimal_manifest_list() -> None:
    schema = {
        "type": "record",
        "name": "L",
        "fields": [
            {"name": "_VERSION", "type": "int"},
            {"name": "_FILE_NAME", "type": "string"},
            {"name": "_FILE_SIZE", "type": "long"},
            {"name": "_NUM_ADDED_FILES", "type": "long"},
            {"name": "_NUM_DELETED_FILES", "type": "long"},
            {"name": "_PARTITION_STATS", "type": _STATS_SCHEMA},
            {"name": "_SCHEMA_ID", "type": "long"},
        ],
    }
    record = {
        "_VERSION": 2,
        "_FILE_NAME": "manifest-x-0",
        "_FILE_SIZE": 9,
        "_NUM_ADDED_FILES": 2,
        "_NUM_DELETED_FILES": 1,
        "_SCHEMA_ID": 3,
        "_PARTITION_STATS": {"_MIN_VALUES": b"a", "_MAX_VALUES": b"b", "_NULL_COUNTS": None},
    }
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [record])
    assert decode_manifest_list(buf.getvalue()) == [
        ManifestFileMeta("manifest-x-0", 9, 2, 1, SimpleStats(b"a", b"b", None), 3)
    ]


def test_decode_rejects_other_record_versions() -> None:
    with pytest.raises(ValueError, match="_VERSION 1"):
        decode_manifest(_java_like_manifest(version=1))


def test_decode_names_missing_required_field() -> None:
    with pytest.raises(ValueError, match="_TOTAL_BUCKETS"):
        decode_manifest(_java_like_manifest(drop="_TOTAL_BUCKETS"))


def test_decode_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="corrupt"):
        decode_manifest(b"not avro at all")
    data = encode_manifest([_entry(f"f{i}") for i in range(50)])
    with pytest.raises(ValueError, match="corrupt"):
        decode_manifest(data[:-40])  # truncated inside the last block


# ------------------------------------------------------------------------------------------------
# Manifest-list metadata
# ------------------------------------------------------------------------------------------------


def test_identifier_matches_paimon_file_identity() -> None:
    entry = _entry("a.parquet", partition=b"p", bucket=3, level=2)
    entry = dataclasses.replace(
        entry,
        file=dataclasses.replace(
            entry.file, extra_files=("a.idx",), embedded_index=b"i", external_path="s3://x/a.parquet"
        ),
    )
    assert entry.identifier == (b"p", 3, 2, "a.parquet", ("a.idx",), b"i", "s3://x/a.parquet")
    # Row count, sizes and kind are not part of the identity: a DELETE must match its ADD.
    other = dataclasses.replace(
        entry, kind=FileKind.DELETE, file=dataclasses.replace(entry.file, row_count=99, file_size=1)
    )
    assert other.identifier == entry.identifier
    assert dataclasses.replace(entry, bucket=4).identifier != entry.identifier


def test_manifest_file_meta_counts_and_ranges() -> None:
    entries = [
        _entry("a", bucket=3, level=0, first_row_id=100, rows=10),
        _entry("b", kind=FileKind.DELETE, bucket=1, level=5, first_row_id=0, rows=5),
        _entry("c", bucket=2, level=1, first_row_id=200, rows=1),
    ]
    stats = SimpleStats(b"lo", b"hi", (0,))
    meta = manifest_file_meta("manifest-1-0", 1234, entries, 7, stats)
    assert meta == ManifestFileMeta(
        "manifest-1-0",
        1234,
        2,
        1,
        stats,
        7,
        min_bucket=1,
        max_bucket=3,
        min_level=0,
        max_level=5,
        min_row_id=0,
        max_row_id=200,
        total_buckets=2,
    )


@pytest.mark.parametrize(
    ("total_buckets", "expected"),
    [((4, 4), 4), ((4, 2), None), ((-1, -1), None), ((-2,), None)],
)
def test_manifest_file_meta_total_buckets(total_buckets: Sequence[int], expected: int | None) -> None:
    entries = [_entry(f"f{i}", total_buckets=n) for i, n in enumerate(total_buckets)]
    assert manifest_file_meta("m", 1, entries, 0, SimpleStats.EMPTY).total_buckets == expected


def test_manifest_file_meta_row_ids_unknown_unless_all_files_have_them() -> None:
    entries = [_entry("a", first_row_id=5), _entry("b")]
    meta = manifest_file_meta("m", 1, entries, 0, SimpleStats.EMPTY)
    assert (meta.min_row_id, meta.max_row_id) == (None, None)
    empty = manifest_file_meta("m", 1, [], 0, SimpleStats.EMPTY)
    assert (empty.num_added_files, empty.min_bucket, empty.max_level) == (0, None, None)


def _toy_decode(raw: bytes) -> list[object]:
    # "a|b|" style rows; "~" stands for null. Enough to test the min/max/null logic in isolation.
    return [None if v == "~" else v for v in raw.decode().split("|")]


def _toy_encode(values: Sequence[object]) -> bytes:
    return "|".join("~" if v is None else str(v) for v in values).encode()


def test_partition_stats_min_max_ignore_nulls_and_count_nulls_per_entry() -> None:
    parts = [b"2024-01-02|x", b"2024-01-01|~", b"2024-01-03|~", b"2024-01-01|~", b"~|b"]
    stats = partition_stats(parts, _toy_decode, _toy_encode, 2)
    assert stats == SimpleStats(b"2024-01-01|b", b"2024-01-03|x", (1, 3))


def test_partition_stats_all_null_and_arity_checks() -> None:
    assert partition_stats([b"~", b"~"], _toy_decode, _toy_encode, 1) == SimpleStats(b"~", b"~", (2,))
    with pytest.raises(ValueError, match="expected 1"):
        partition_stats([b"a|b"], _toy_decode, _toy_encode, 1)


# ------------------------------------------------------------------------------------------------
# Compatibility with pypaimon 2.1.0
# ------------------------------------------------------------------------------------------------


def _pypaimon_row_codec(table: Any) -> tuple[Any, Any]:
    from pypaimon.table.row.generic_row import GenericRow, GenericRowDeserializer, GenericRowSerializer

    fields = table.partition_keys_fields

    def decode(raw: bytes) -> list[object]:
        return list(GenericRowDeserializer.from_bytes(raw, fields).values)

    def encode(values: Sequence[object]) -> bytes:
        return bytes(GenericRowSerializer.to_bytes(GenericRow(list(values), fields)))

    return decode, encode


def _latest(pk: PypaimonTable) -> Any:
    return pk.table.snapshot_manager().get_latest_snapshot()


def test_decode_pypaimon_manifest_lists(pk_table: PypaimonTable) -> None:
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    theirs_reader = ManifestListManager(pk_table.table)
    snapshot = _latest(pk_table)
    lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
    seen = 0
    for name in lists:
        ours = decode_manifest_list((pk_table.manifest_dir / name).read_bytes())
        theirs = theirs_reader.read(name)
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            seen += 1
            assert (a.file_name, a.file_size, a.num_added_files, a.num_deleted_files, a.schema_id) == (
                b.file_name,
                b.file_size,
                b.num_added_files,
                b.num_deleted_files,
                b.schema_id,
            )
            assert (a.min_bucket, a.max_bucket, a.min_level, a.max_level, a.total_buckets) == (
                b.min_bucket,
                b.max_bucket,
                b.min_level,
                b.max_level,
                b.total_buckets,
            )
            assert a.partition_stats.min_values == bytes(b.partition_stats.min_values.data)
            assert a.partition_stats.max_values == bytes(b.partition_stats.max_values.data)
            assert list(a.partition_stats.null_counts or ()) == b.partition_stats.null_counts
    assert seen == 2  # base holds commit 1's manifest, delta holds commit 2's


def test_decode_pypaimon_manifests_and_recompute_their_list_metadata(pk_table: PypaimonTable) -> None:
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    from pypaimon.table.row.generic_row import GenericRowSerializer

    metas = ManifestListManager(pk_table.table).read_all(_latest(pk_table))
    reader = ManifestFileManager(pk_table.table)
    decode, encode = _pypaimon_row_codec(pk_table.table)
    total_rows = 0
    for meta in metas:
        ours = decode_manifest((pk_table.manifest_dir / meta.file_name).read_bytes())
        theirs = reader.read(meta.file_name, drop_stats=False)
        assert len(ours) == len(theirs) == meta.num_added_files
        for a, b in zip(ours, theirs, strict=True):
            assert a.kind == b.kind
            assert a.partition == GenericRowSerializer.to_bytes(b.partition)
            assert (a.bucket, a.total_buckets) == (b.bucket, b.total_buckets)
            assert a.total_buckets == 2
            f, g = a.file, b.file
            assert (f.file_name, f.file_size, f.row_count, f.level, f.schema_id) == (
                g.file_name,
                g.file_size,
                g.row_count,
                g.level,
                g.schema_id,
            )
            assert (f.min_sequence_number, f.max_sequence_number) == (
                g.min_sequence_number,
                g.max_sequence_number,
            )
            assert f.min_key == GenericRowSerializer.to_bytes(g.min_key)
            assert f.max_key == GenericRowSerializer.to_bytes(g.max_key)
            assert f.key_stats.null_counts == (0,)
            assert f.value_stats == SimpleStats.EMPTY
            assert f.value_stats_cols == ()
            assert (f.delete_row_count, f.file_source, f.extra_files) == (0, 0, ())
            assert f.creation_time == g.creation_time.get_millisecond()
            total_rows += f.row_count
        # Our list metadata for their manifest equals what pypaimon wrote into its list.
        stats = partition_stats((e.partition for e in ours), decode, encode, 1)
        recomputed = manifest_file_meta(meta.file_name, meta.file_size, ours, 0, stats)
        assert recomputed.partition_stats.min_values == bytes(meta.partition_stats.min_values.data)
        assert recomputed.partition_stats.max_values == bytes(meta.partition_stats.max_values.data)
        assert list(recomputed.partition_stats.null_counts or ()) == meta.partition_stats.null_counts
        assert (recomputed.num_added_files, recomputed.num_deleted_files) == (
            meta.num_added_files,
            meta.num_deleted_files,
        )
        assert (recomputed.min_bucket, recomputed.max_bucket, recomputed.total_buckets) == (
            meta.min_bucket,
            meta.max_bucket,
            meta.total_buckets,
        )
    assert total_rows == _latest(pk_table).total_record_count == 7


def test_pypaimon_reads_manifests_we_encode(pk_table: PypaimonTable) -> None:
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    metas = ManifestListManager(pk_table.table).read_all(_latest(pk_table))
    originals = [
        e for m in metas for e in decode_manifest((pk_table.manifest_dir / m.file_name).read_bytes())
    ]
    # Exercise the optional fields too; these values are never used by the table's readers.
    first = originals[0]
    tweaked = dataclasses.replace(
        first,
        kind=FileKind.DELETE,
        file=dataclasses.replace(
            first.file,
            file_name="other.parquet",
            extra_files=("x.index",),
            embedded_index=b"\x01\x02",
            external_path="file:/elsewhere/other.parquet",
            first_row_id=40,
            write_cols_sequences=(3,),
        ),
    )
    entries = [*originals, tweaked]
    (pk_table.manifest_dir / "manifest-ours-0").write_bytes(encode_manifest(entries))

    theirs = ManifestFileManager(pk_table.table).read("manifest-ours-0", drop_stats=False)
    assert [e.file.file_name for e in theirs] == [e.file.file_name for e in entries]
    assert [e.kind for e in theirs] == [int(e.kind) for e in entries]
    for ours, back in zip(entries, theirs, strict=True):
        assert (back.bucket, back.total_buckets, back.file.level) == (ours.bucket, ours.total_buckets, 0)
        assert (back.file.row_count, back.file.file_size) == (ours.file.row_count, ours.file.file_size)
        assert back.file.creation_time.get_millisecond() == ours.file.creation_time
        assert bytes(back.file.key_stats.min_values.data) == ours.file.key_stats.min_values
    assert (theirs[-1].file.extra_files, theirs[-1].file.embedded_index) == (["x.index"], b"\x01\x02")
    assert (theirs[-1].file.external_path, theirs[-1].file.first_row_id) == (
        "file:/elsewhere/other.parquet",
        40,
    )
    assert theirs[-1].file.write_cols_sequences == [3]


def test_pypaimon_reads_manifest_lists_we_encode(pk_table: PypaimonTable) -> None:
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    _, encode = _pypaimon_row_codec(pk_table.table)
    lo, hi = encode(["2023-12-31"]), encode(["2024-02-29"])
    meta = ManifestFileMeta(
        "manifest-abc-0",
        2434,
        3,
        1,
        SimpleStats(lo, hi, (0, None)),
        4,
        min_bucket=0,
        max_bucket=1,
        min_level=0,
        max_level=2,
        min_row_id=None,
        max_row_id=None,
        total_buckets=2,
        extra_files=("e",),
    )
    (pk_table.manifest_dir / "manifest-list-ours-0").write_bytes(encode_manifest_list([meta, meta]))
    theirs = ManifestListManager(pk_table.table).read("manifest-list-ours-0")
    assert len(theirs) == 2
    back = theirs[0]
    assert (back.file_name, back.file_size, back.num_added_files, back.num_deleted_files, back.schema_id) == (
        "manifest-abc-0",
        2434,
        3,
        1,
        4,
    )
    assert (back.min_bucket, back.max_bucket, back.min_level, back.max_level) == (0, 1, 0, 2)
    assert (back.total_buckets, back.extra_files) == (2, ["e"])
    assert bytes(back.partition_stats.min_values.data) == lo
    assert bytes(back.partition_stats.max_values.data) == hi
    assert back.partition_stats.null_counts == [0, None]


def test_pypaimon_reads_a_table_whose_metadata_we_rewrote(pk_table: PypaimonTable, tmp_path: Path) -> None:
    """End to end: re-encode every manifest and list with our code, publish snapshot 3, read rows."""
    warehouse = tmp_path / "copy"
    shutil.copytree(pk_table.path.parent.parent, warehouse)
    table_dir = warehouse / "db.db" / "t"
    manifest_dir = table_dir / "manifest"
    previous = Snapshot.from_json((table_dir / "snapshot" / snapshot_file_name(2)).read_text())
    decode, encode = _pypaimon_row_codec(pk_table.table)

    metas: list[ManifestFileMeta] = []
    for list_name in (previous.base_manifest_list, previous.delta_manifest_list):
        for old in decode_manifest_list((manifest_dir / list_name).read_bytes()):
            entries = decode_manifest((manifest_dir / old.file_name).read_bytes())
            data = encode_manifest(entries)
            name = f"manifest-ours-{len(metas)}"
            (manifest_dir / name).write_bytes(data)
            stats = partition_stats((e.partition for e in entries), decode, encode, 1)
            metas.append(manifest_file_meta(name, len(data), entries, 0, stats))
    base, delta = encode_manifest_list(metas), encode_manifest_list([])
    (manifest_dir / "manifest-list-ours-0").write_bytes(base)
    (manifest_dir / "manifest-list-ours-1").write_bytes(delta)
    snapshot = dataclasses.replace(
        previous,
        id=3,
        base_manifest_list="manifest-list-ours-0",
        delta_manifest_list="manifest-list-ours-1",
        base_manifest_list_size=len(base),
        delta_manifest_list_size=len(delta),
        delta_record_count=0,
        commit_kind=CommitKind.COMPACT,
        uuid=None,
        writer_version="coordinator-test",
    )
    (table_dir / "snapshot" / snapshot_file_name(3)).write_text(snapshot.to_json())
    (table_dir / "snapshot" / "LATEST").write_bytes(format_hint(3))

    # Hide pypaimon's own manifests so a successful read can only have used ours.
    for written in manifest_dir.iterdir():
        if "ours" not in written.name:
            written.unlink()
    assert read_rows(warehouse) == EXPECTED_ROWS

    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": str(warehouse)}).get_table("db.t")
    latest = table.snapshot_manager().get_latest_snapshot()
    assert (latest.id, latest.commit_kind) == (3, "COMPACT")
    assert latest.base_manifest_list == "manifest-list-ours-0"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"bucket": 2**31}, "Avro int"),
        ({"total_buckets": -(2**31) - 1}, "Avro int"),
        ({"file_size": 2**63}, "Avro long"),
        ({"min_sequence_number": -(2**63) - 1}, "Avro long"),
    ],
)
def test_encode_rejects_out_of_range_numbers(change: dict[str, int], message: str) -> None:
    entry = _entry("a")
    entry_fields: dict[str, Any] = {k: v for k, v in change.items() if k in ("bucket", "total_buckets")}
    file_fields: dict[str, Any] = {k: v for k, v in change.items() if k not in entry_fields}
    bad = dataclasses.replace(entry, **entry_fields, file=dataclasses.replace(entry.file, **file_fields))
    with pytest.raises(ValueError, match=message):
        encode_manifest([bad])


def test_concatenated_manifests_hold_every_entry_and_describe_them_as_one_write() -> None:
    shape = append_shape()

    def described(name: str, data: bytes, entries: list[ManifestEntry]) -> ManifestFileMeta:
        stats = partition_stats(
            (e.partition for e in entries), shape.decode_partition, shape.encode_partition, 1
        )
        return manifest_file_meta(name, len(data), entries, 0, stats)

    first = [entry(ADD, f"a{i}.parquet", dt="b", bucket=i % 2) for i in range(700)]
    second = [entry(ADD, f"c{i}.parquet", dt=dt, bucket=3) for i, dt in enumerate(["a", "c", "d"])]
    files = [encode_manifest(first), encode_manifest(second)]
    metas = [described("m1", files[0], first), described("m2", files[1], second)]
    joined = concatenate_manifests(files)
    assert joined is not None
    assert decode_manifest(joined) == first + second
    combined = combined_meta("m", len(joined), metas, shape.decode_partition, shape.encode_partition, 1)
    assert combined == described("m", joined, first + second)


def test_manifests_written_with_another_schema_are_not_concatenated() -> None:
    ours = encode_manifest([entry(ADD, "a.parquet")])
    assert concatenate_manifests([ours, _java_like_manifest()]) is None
