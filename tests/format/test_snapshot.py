"""Snapshot JSON, hint files and snapshot file names, checked against pypaimon 2.1.0."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_format.snapshot import (
    BATCH_IDENTIFIER,
    EARLIEST,
    LATEST,
    CommitKind,
    Snapshot,
    carry_forward,
    format_hint,
    parse_hint,
    parse_snapshot_file_name,
    snapshot_file_name,
)

from ._pypaimon_table import PypaimonTable

# Verbatim from paimon-format.md §3 (pypaimon, PK table, 3rd commit).
PYPAIMON_SNAPSHOT = """{
  "version": 3, "id": 3, "schemaId": 0,
  "baseManifestList": "manifest-list-f2aee602-95cb-4cb1-a8fc-fbbd4b50a99e-0",
  "deltaManifestList": "manifest-list-f2aee602-95cb-4cb1-a8fc-fbbd4b50a99e-1",
  "totalRecordCount": 10, "deltaRecordCount": 1,
  "commitUser": "231fa054-8b6f-4e79-a9eb-ce742223b545",
  "commitIdentifier": 9223372036854775807,
  "commitKind": "APPEND", "timeMillis": 1795283568745,
  "baseManifestListSize": 1395, "deltaManifestListSize": 1355,
  "uuid": "0036701d-6864-4363-a768-9767d405a4aa",
  "writerVersion": "python-2.1.0-3a5ffe7870697e2c2605e63413fb5ac5800aae7e"
}"""

REQUIRED = [
    "version",
    "id",
    "schemaId",
    "baseManifestList",
    "deltaManifestList",
    "totalRecordCount",
    "deltaRecordCount",
    "commitUser",
    "commitIdentifier",
    "commitKind",
    "timeMillis",
]
ALL_KEYS = [
    *REQUIRED,
    "baseManifestListSize",
    "deltaManifestListSize",
    "changelogManifestList",
    "changelogManifestListSize",
    "indexManifest",
    "changelogRecordCount",
    "watermark",
    "statistics",
    "nextRowId",
    "properties",
    "uuid",
    "writerVersion",
]

LONG = st.integers(-(2**63), 2**63 - 1)
TEXT = st.text(max_size=12)


def _opt(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | LONG | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
SNAPSHOTS = st.builds(
    Snapshot,
    version=st.integers(1, 3),
    id=LONG,
    schema_id=LONG,
    base_manifest_list=TEXT,
    delta_manifest_list=TEXT,
    total_record_count=LONG,
    delta_record_count=LONG,
    commit_user=TEXT,
    commit_identifier=LONG,
    commit_kind=st.sampled_from(CommitKind),
    time_millis=LONG,
    base_manifest_list_size=_opt(LONG),
    delta_manifest_list_size=_opt(LONG),
    changelog_manifest_list=_opt(TEXT),
    changelog_manifest_list_size=_opt(LONG),
    index_manifest=_opt(TEXT),
    changelog_record_count=_opt(LONG),
    watermark=_opt(LONG),
    statistics=_opt(TEXT),
    next_row_id=_opt(LONG),
    properties=_opt(st.dictionaries(TEXT, TEXT, max_size=3)),
    uuid=_opt(TEXT),
    writer_version=_opt(TEXT),
    extra=st.dictionaries(TEXT.filter(lambda k: k not in ALL_KEYS), JSON_VALUES, max_size=3),
)


def _snapshot(**changes: Any) -> Snapshot:
    return dataclasses.replace(Snapshot.from_json(PYPAIMON_SNAPSHOT), **changes)


@settings(max_examples=100, deadline=None)
@given(SNAPSHOTS)
def test_json_round_trip(snapshot: Snapshot) -> None:
    assert Snapshot.from_json(snapshot.to_json()) == snapshot


@settings(max_examples=100, deadline=None)
@given(SNAPSHOTS)
def test_json_text_is_what_json_dumps_pretty_prints(snapshot: Snapshot) -> None:
    """The fast renderer of a flat snapshot writes exactly the bytes json.dumps(indent=2) would, so a
    snapshot file is the same whichever path rendered it."""
    document = json.loads(snapshot.to_json())
    assert snapshot.to_json() == json.dumps(document, indent=2, ensure_ascii=False)


def test_parses_pypaimon_example() -> None:
    s = Snapshot.from_json(PYPAIMON_SNAPSHOT)
    assert (s.version, s.id, s.schema_id, s.commit_kind) == (3, 3, 0, CommitKind.APPEND)
    assert s.commit_identifier == BATCH_IDENTIFIER
    assert (s.total_record_count, s.delta_record_count) == (10, 1)
    assert (s.base_manifest_list_size, s.delta_manifest_list_size) == (1395, 1355)
    assert s.uuid == "0036701d-6864-4363-a768-9767d405a4aa"
    assert s.index_manifest is None
    assert s.extra == {}
    assert json.loads(s.to_json()) == json.loads(PYPAIMON_SNAPSHOT)


def test_to_json_key_order_and_omitted_nulls() -> None:
    full = _snapshot(
        changelog_manifest_list="cl",
        changelog_manifest_list_size=5,
        index_manifest="im",
        changelog_record_count=4,
        watermark=9,
        statistics="st",
        next_row_id=11,
        properties={"k": "v"},
        extra={"operation": "WRITE"},
    )
    assert list(json.loads(full.to_json())) == [*ALL_KEYS, "operation"]
    minimal = _snapshot(
        base_manifest_list_size=None, delta_manifest_list_size=None, uuid=None, writer_version=None
    )
    text = minimal.to_json()
    assert list(json.loads(text)) == REQUIRED
    assert "null" not in text


def test_unknown_keys_are_preserved() -> None:
    data = json.loads(PYPAIMON_SNAPSHOT)
    data["operation"] = "MERGE"
    data["logOffsets"] = {"0": 12}
    s = Snapshot.from_json(json.dumps(data))
    assert s.extra == {"operation": "MERGE", "logOffsets": {"0": 12}}
    assert json.loads(s.to_json()) == data


def test_extra_may_not_shadow_known_keys() -> None:
    with pytest.raises(ValueError, match="schemaId"):
        _snapshot(extra={"schemaId": 5})


@pytest.mark.parametrize("key", REQUIRED)
def test_missing_required_key_is_named(key: str) -> None:
    data = json.loads(PYPAIMON_SNAPSHOT)
    del data[key]
    with pytest.raises(ValueError, match=rf"\b{key}\b"):
        Snapshot.from_json(json.dumps(data))


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("id", "3"),
        ("commitUser", 7),
        ("totalRecordCount", 1.5),
        ("watermark", True),
        ("properties", {"a": 1}),
        ("commitKind", "MERGE"),
    ],
)
def test_wrongly_typed_values_are_rejected(key: str, value: object) -> None:
    data = json.loads(PYPAIMON_SNAPSHOT)
    data[key] = value
    with pytest.raises(ValueError, match=key if key != "commitKind" else "MERGE"):
        Snapshot.from_json(json.dumps(data))


def test_rejects_non_objects() -> None:
    with pytest.raises(ValueError, match="JSON"):
        Snapshot.from_json("[1, 2]")
    with pytest.raises(ValueError, match="JSON"):
        Snapshot.from_json("{not json")


# ------------------------------------------------------------------------------------------------
# carry_forward
# ------------------------------------------------------------------------------------------------


def test_carry_forward_without_previous_snapshot() -> None:
    assert carry_forward(None, schema_id=0) == {
        "index_manifest": None,
        "statistics": None,
        "next_row_id": None,
        "watermark": None,
    }
    assert carry_forward(None, schema_id=0, watermark=5)["watermark"] == 5


def test_carry_forward_inherits_index_row_id_and_max_watermark() -> None:
    prev = _snapshot(index_manifest="index-manifest-1", statistics="stat-1", next_row_id=42, watermark=100)
    carried = carry_forward(prev, schema_id=prev.schema_id, watermark=50)
    assert carried == {
        "index_manifest": "index-manifest-1",
        "statistics": "stat-1",
        "next_row_id": 42,
        "watermark": 100,
    }
    assert carry_forward(prev, schema_id=prev.schema_id, watermark=150)["watermark"] == 150
    assert carry_forward(_snapshot(), schema_id=0, watermark=None)["watermark"] is None
    # Statistics describe one schema; a new schema id drops them (Java logs "stats will not be inherited").
    assert carry_forward(prev, schema_id=prev.schema_id + 1)["statistics"] is None
    # Usable directly as Snapshot keyword arguments.
    nxt = dataclasses.replace(prev, **carry_forward(prev, schema_id=0, watermark=7))
    assert (nxt.index_manifest, nxt.next_row_id, nxt.watermark) == ("index-manifest-1", 42, 100)


# ------------------------------------------------------------------------------------------------
# Hints and file names
# ------------------------------------------------------------------------------------------------


def test_hints() -> None:
    assert (LATEST, EARLIEST) == ("LATEST", "EARLIEST")
    assert format_hint(17) == b"17"
    assert parse_hint(format_hint(9_000_000_000)) == 9_000_000_000
    assert parse_hint(b" 12\n") == 12
    for garbage in (b"", b"\n", b"abc", b"-1", b"1.5", b"\xff\xfe", b"\xd9\xa3"):
        assert parse_hint(garbage) is None
    with pytest.raises(ValueError, match="negative"):
        format_hint(-1)


def test_snapshot_file_names() -> None:
    assert snapshot_file_name(12) == "snapshot-12"
    assert parse_snapshot_file_name("snapshot-12") == 12
    for other in (
        "LATEST",
        "EARLIEST",
        "snapshot-",
        "snapshot-1.tmp",
        ".snapshot-3.abc.tmp",
        "snapshot--1",
        "schema-1",
        "snapshot-\u0663",
    ):
        assert parse_snapshot_file_name(other) is None


# ------------------------------------------------------------------------------------------------
# Against a real pypaimon table
# ------------------------------------------------------------------------------------------------


def test_parses_pypaimon_written_snapshots_and_hint(pk_table: PypaimonTable) -> None:
    from pypaimon.common.json_util import JSON
    from pypaimon.snapshot.snapshot import Snapshot as PySnapshot

    names = sorted(p.name for p in pk_table.snapshot_dir.iterdir())
    assert names == ["LATEST", "snapshot-1", "snapshot-2"]
    assert parse_hint((pk_table.snapshot_dir / LATEST).read_bytes()) == 2
    for snapshot_id in (1, 2):
        text = (pk_table.snapshot_dir / snapshot_file_name(snapshot_id)).read_text()
        ours, theirs = Snapshot.from_json(text), JSON.from_json(text, PySnapshot)
        assert ours.id == theirs.id == snapshot_id
        assert ours.commit_kind.value == theirs.commit_kind == "APPEND"
        assert (ours.base_manifest_list, ours.delta_manifest_list, ours.total_record_count) == (
            theirs.base_manifest_list,
            theirs.delta_manifest_list,
            theirs.total_record_count,
        )
        assert (ours.commit_user, ours.commit_identifier, ours.uuid, ours.writer_version) == (
            theirs.commit_user,
            theirs.commit_identifier,
            theirs.uuid,
            theirs.writer_version,
        )
        assert ours.extra == {}
        # Same keys, values and order as pypaimon's own file.
        assert ours.to_json() == text


def test_pypaimon_parses_our_json(pk_table: PypaimonTable) -> None:
    from pypaimon.common.json_util import JSON
    from pypaimon.snapshot.snapshot import Snapshot as PySnapshot

    ours = _snapshot(
        changelog_manifest_list="manifest-list-x-2",
        changelog_manifest_list_size=77,
        index_manifest="index-manifest-y-0",
        changelog_record_count=3,
        watermark=-5,
        statistics="stat-z-0",
        next_row_id=1000,
        properties={"a": "b"},
        extra={"operation": "WRITE"},
        commit_kind=CommitKind.OVERWRITE,
    )
    theirs = JSON.from_json(ours.to_json(), PySnapshot)
    for attr in (
        "version",
        "id",
        "schema_id",
        "base_manifest_list",
        "delta_manifest_list",
        "total_record_count",
        "delta_record_count",
        "commit_user",
        "commit_identifier",
        "time_millis",
        "base_manifest_list_size",
        "delta_manifest_list_size",
        "changelog_manifest_list",
        "changelog_manifest_list_size",
        "index_manifest",
        "changelog_record_count",
        "watermark",
        "statistics",
        "next_row_id",
        "uuid",
        "writer_version",
    ):
        assert getattr(theirs, attr) == getattr(ours, attr), attr
    assert (theirs.commit_kind, theirs.properties) == ("OVERWRITE", {"a": "b"})
    # And pypaimon's serialisation of that object is what we produce, minus the Java-only key.
    assert json.loads(JSON.to_json(theirs)) == {
        k: v for k, v in json.loads(ours.to_json()).items() if k != "operation"
    }


def test_pypaimon_reads_our_hint_and_snapshot(pk_table: PypaimonTable, tmp_path: Path) -> None:
    from pypaimon.snapshot.snapshot_manager import SnapshotManager

    table_dir = tmp_path / "t"
    shutil.copytree(pk_table.path, table_dir)
    snapshot_dir = table_dir / "snapshot"
    previous = Snapshot.from_json((snapshot_dir / snapshot_file_name(2)).read_text())
    nxt = dataclasses.replace(
        previous,
        id=3,
        delta_record_count=0,
        commit_kind=CommitKind.ANALYZE,
        uuid=None,
        **carry_forward(previous, schema_id=0, watermark=12),
    )
    (snapshot_dir / snapshot_file_name(3)).write_text(nxt.to_json())
    (snapshot_dir / LATEST).write_bytes(format_hint(3))
    manager = SnapshotManager(pk_table.table.file_io, str(table_dir))
    latest = manager.get_latest_snapshot()
    assert (latest.id, latest.commit_kind, latest.watermark, latest.uuid) == (3, "ANALYZE", 12, None)
    assert manager.get_snapshot_by_id(3).base_manifest_list == previous.base_manifest_list
