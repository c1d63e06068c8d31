"""resolve_committable (domain/committable.py): every rejection names its field, and every file list of
a commit message lands in the right part of the committable with the right FileKind.

Shapes: an append table `(dt STRING, id BIGINT, v STRING)` partitioned by dt (bucket-unaware), and a
primary-key table `(dt, id)` with the key `id` in 2 fixed buckets (max level 5).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pytest
from pydantic import JsonValue, ValidationError

from coordinator.domain.committable import OverwriteTarget, resolve_committable
from coordinator.domain.table_schema import TableShape
from coordinator.errors import InvalidRequest
from paimon_format.binary_row import encode_row
from paimon_format.manifest import FileKind, ManifestEntry, SimpleStats
from tests.support.builders import (
    ADD,
    DELETE,
    append_shape,
    commit_request,
    file_json,
    key,
    partition,
    pk_shape,
    shape,
)

NOW = 1_700_000_000_000
APPEND = append_shape()
PK = pk_shape()
# A key of two fields needs keyStats; an INT partition checks partition value types.
COMPOSITE = shape(
    {"day": "INT NOT NULL", "a": "BIGINT NOT NULL", "b": "STRING NOT NULL"},
    partition_keys=["day"],
    primary_keys=["a", "b"],
    options={"bucket": "4"},
)

PK_FILE = file_json(minKey=[1], maxKey=[9])


def message(**fields: object) -> dict[str, object]:
    """A commit message of partition dt=a, bucket 0, with these fields."""
    return {"partition": {"dt": "a"}, "bucket": 0, **fields}


REJECTED = [
    # partition
    pytest.param(APPEND, [{"partition": {"dt": "a", "hr": 1}, "bucket": 0}], {}, "messages[0].partition.hr",
                 id="a value for a field that is not a partition key"),
    pytest.param(APPEND, [{"partition": {}, "bucket": 0}], {}, "messages[0].partition.dt",
                 id="a missing partition value"),
    pytest.param(COMPOSITE, [{"partition": {"day": "monday"}, "bucket": 0}], {}, "messages[0].partition.day",
                 id="a partition value of the wrong type"),
    pytest.param(COMPOSITE, [{"partition": {"day": None}, "bucket": 0}], {}, "messages[0].partition.day",
                 id="null for a NOT NULL partition field"),
    pytest.param(APPEND, [message(), {"partition": {"dt": 3}, "bucket": 0}], {},
                 "messages[1].partition.dt", id="the path names the message's index"),
    # bucket and totalBuckets
    pytest.param(APPEND, [message(bucket=1)], {}, "messages[0].bucket",
                 id="a bucket-unaware table writes bucket 0 only"),
    pytest.param(APPEND, [message(totalBuckets=2)], {}, "messages[0].totalBuckets",
                 id="a bucket-unaware table takes no bucket count"),
    pytest.param(PK, [message(bucket=2)], {}, "messages[0].bucket",
                 id="bucket equal to the table's bucket count is out of range"),
    pytest.param(PK, [message(bucket=3, totalBuckets=3)], {}, "messages[0].bucket",
                 id="bucket equal to the message's totalBuckets is out of range"),
    pytest.param(PK, [message(totalBuckets=0)], {}, "messages[0].totalBuckets",
                 id="totalBuckets 0 on a fixed-bucket table"),
    pytest.param(PK, [message(totalBuckets=-1)], {}, "messages[0].totalBuckets",
                 id="totalBuckets -1 on a fixed-bucket table"),
    # data files
    pytest.param(APPEND, [message(newFiles=[file_json("data-1.csv")])], {},
                 "messages[0].newFiles[0].fileName", id="a file name without a data file suffix"),
    pytest.param(APPEND, [message(newFiles=[file_json(minSequenceNumber=2, maxSequenceNumber=1)])], {},
                 "messages[0].newFiles[0].minSequenceNumber", id="minSequenceNumber above maxSequenceNumber"),
    pytest.param(APPEND, [message(newFiles=[file_json(rowCount=1, deleteRowCount=2)])], {},
                 "messages[0].newFiles[0].deleteRowCount", id="deleteRowCount above rowCount"),
    pytest.param(PK, [message(newFiles=[{**PK_FILE, "level": 6}])], {},
                 "messages[0].newFiles[0].level", id="a level above the top level"),
    pytest.param(APPEND, [message(newFiles=[file_json(schemaId=1)])], {},
                 "messages[0].newFiles[0].schemaId", id="a schema id the table does not have"),
    # primary keys
    pytest.param(PK, [message(newFiles=[file_json(minKey=[1, 2], maxKey=[9])])], {},
                 "messages[0].newFiles[0].minKey", id="minKey of the wrong arity"),
    pytest.param(PK, [message(newFiles=[file_json(minKey=[1], maxKey=[])])], {},
                 "messages[0].newFiles[0].maxKey", id="an empty maxKey"),
    pytest.param(PK, [message(newFiles=[file_json(minKey=["one"], maxKey=[9])])], {},
                 "messages[0].newFiles[0].minKey[0]", id="a key value of the wrong type"),
    pytest.param(PK, [message(newFiles=[file_json(minKey=[9], maxKey=[1])])], {},
                 "messages[0].newFiles[0].minKey", id="minKey above maxKey"),
    pytest.param(APPEND, [message(newFiles=[file_json(minKey=[1], maxKey=[1])])], {},
                 "messages[0].newFiles[0].minKey", id="a key on an append table"),
    pytest.param(APPEND, [message(newFiles=[file_json(
                     keyStats={"minValues": [], "maxValues": [], "nullCounts": []})])], {},
                 "messages[0].newFiles[0].keyStats", id="key stats on an append table"),
    pytest.param(COMPOSITE, [{"partition": {"day": 1}, "bucket": 0,
                              "newFiles": [file_json(minKey=[1, "a"], maxKey=[2, "b"])]}], {},
                 "messages[0].newFiles[0].keyStats", id="no key stats for a key of two fields"),
    pytest.param(PK, [message(newFiles=[{**PK_FILE, "keyStats": {
                     "minValues": [1, 2], "maxValues": [9], "nullCounts": [0]}}])], {},
                 "messages[0].newFiles[0].keyStats", id="key stats of the wrong arity"),
    pytest.param(PK, [message(newFiles=[{**PK_FILE, "keyStats": {
                     "minValues": ["x"], "maxValues": [9], "nullCounts": [0]}}])], {},
                 "messages[0].newFiles[0].keyStats.minValues[0]", id="a key stats value of the wrong type"),
    # overwrite
    pytest.param(PK, [message(compactAfter=[PK_FILE])], {"overwrite": {"mode": "table"}}, "overwrite",
                 id="an overwrite carrying compaction"),
    pytest.param(APPEND, [], {"overwrite": {"mode": "dynamic", "partition": {"dt": "a"}}},
                 "overwrite.partition", id="a dynamic overwrite naming a partition"),
    pytest.param(APPEND, [], {"overwrite": {"mode": "static"}}, "overwrite.partition",
                 id="a static overwrite without a partition"),
    pytest.param(APPEND, [], {"overwrite": {"mode": "static", "partition": {}}}, "overwrite.partition",
                 id="a static overwrite with an empty partition"),
    pytest.param(APPEND, [], {"overwrite": {"mode": "static", "partition": {"id": 1}}},
                 "overwrite.partition.id", id="a static overwrite on a field that is not a partition key"),
    pytest.param(COMPOSITE, [], {"overwrite": {"mode": "static", "partition": {"day": "x"}}},
                 "overwrite.partition.day", id="a static overwrite value of the wrong type"),
    pytest.param(APPEND, [message(newFiles=[file_json()])],
                 {"overwrite": {"mode": "static", "partition": {"dt": "b"}}}, "overwrite.partition",
                 id="a static overwrite with a new file outside its partition"),
]  # fmt: skip


@pytest.mark.parametrize(("table", "messages", "fields", "path"), REJECTED)
def test_rejections_name_their_field(
    table: TableShape, messages: list[dict[str, object]], fields: dict[str, object], path: str
) -> None:
    request = commit_request(*messages, **fields)
    with pytest.raises(InvalidRequest) as raised:
        resolve_committable(request, table, now_millis=NOW)
    assert raised.value.field == path


@pytest.mark.parametrize("extra", ["../x", "dir/x.index", "", "a\x00b", "a\\b"])
def test_extra_file_names_are_bare_at_the_edge_and_in_the_domain(extra: str) -> None:
    with pytest.raises(ValidationError) as refused:  # the wire model: a 422 before any work
        commit_request(message(newFiles=[file_json(extraFiles=["ok.index", extra])]))
    assert refused.value.errors()[0]["loc"] == ("messages", 0, "newFiles", 0, "extraFiles", 1)
    # A request built without the model's checks meets the same rule in the domain.
    valid = commit_request(message(newFiles=[file_json(extraFiles=["ok.index", "fine.index"])]))
    file = valid.messages[0].new_files[0].model_copy(update={"extra_files": ["ok.index", extra]})
    request = valid.model_copy(
        update={"messages": [valid.messages[0].model_copy(update={"new_files": [file]})]}
    )
    with pytest.raises(InvalidRequest) as raised:
        resolve_committable(request, APPEND, now_millis=NOW)
    assert raised.value.field == "messages[0].newFiles[0].extraFiles[1]"


@pytest.mark.parametrize(
    "name",
    ["newFiles", "deletedFiles", "changelogFiles", "compactBefore", "compactAfter", "compactChangelogFiles"],
)
def test_every_file_list_is_validated_under_its_own_name(name: str) -> None:
    request = commit_request(message(**{name: [file_json(), file_json("data-2.txt")]}))
    with pytest.raises(InvalidRequest) as raised:
        resolve_committable(request, APPEND, now_millis=NOW)
    assert raised.value.field == f"messages[0].{name}[1].fileName"


@pytest.mark.parametrize(
    ("data_file", "loc"),
    [
        pytest.param(file_json("../escape.parquet"), ("fileName",), id="a file name starting with .."),
        pytest.param(file_json("dir/x.parquet"), ("fileName",), id="a file name with a slash"),
        pytest.param(file_json(".hidden.parquet"), ("fileName",), id="a hidden file name"),
        pytest.param(file_json(fileSize=-1), ("fileSize",), id="a negative file size"),
        pytest.param(file_json(rowCount=-1), ("rowCount",), id="a negative row count"),
        pytest.param(file_json(deleteRowCount=-1), ("deleteRowCount",), id="a negative delete row count"),
        pytest.param(file_json(level=-1), ("level",), id="a negative level"),
        pytest.param(
            file_json(minSequenceNumber=-1), ("minSequenceNumber",), id="a negative sequence number"
        ),
        pytest.param(file_json(schemaId=-1), ("schemaId",), id="a negative schema id"),
        pytest.param(file_json(fileSource=2), ("fileSource",), id="a file source other than 0 and 1"),
        pytest.param(file_json(path="/x"), ("path",), id="a field the wire model does not know"),
    ],
)
def test_the_wire_model_rejects_before_the_domain(data_file: dict[str, object], loc: tuple[str, ...]) -> None:
    """These never reach resolve_committable: the request model answers 422 with the same field path."""
    with pytest.raises(ValidationError) as raised:
        commit_request(message(newFiles=[data_file]))
    [error] = raised.value.errors()
    assert error["loc"] == ("messages", 0, "newFiles", 0, *loc)


@pytest.mark.parametrize(
    ("message", "loc"),
    [
        pytest.param({"bucket": -1}, ("bucket",), id="a negative bucket"),
        pytest.param({"bucket": 0, "totalBuckets": -2}, ("totalBuckets",), id="totalBuckets below -1"),
        pytest.param({}, ("bucket",), id="a message without a bucket"),
    ],
)
def test_the_wire_model_rejects_bad_buckets(message: Mapping[str, object], loc: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError) as raised:
        commit_request(message)
    [error] = raised.value.errors()
    assert error["loc"] == ("messages", 0, *loc)


def test_each_file_list_maps_to_its_part_and_kind() -> None:
    """Paimon's collectChanges: the append part, the compact part and their changelog files."""
    lists = [
        "newFiles",
        "deletedFiles",
        "changelogFiles",
        "compactBefore",
        "compactAfter",
        "compactChangelogFiles",
    ]
    every_list = message(**{name: [{**PK_FILE, "fileName": f"{name}.parquet"}] for name in lists})
    resolved = resolve_committable(commit_request(every_list), PK, now_millis=NOW)

    def parts(entries: list[ManifestEntry]) -> list[tuple[FileKind, str, int | None]]:
        return [(e.kind, e.file.file_name, e.file.file_source) for e in entries]

    assert parts(resolved.append) == [(ADD, "newFiles.parquet", 0), (DELETE, "deletedFiles.parquet", None)]
    assert parts(resolved.append_changelog) == [(ADD, "changelogFiles.parquet", 0)]
    assert parts(resolved.compact) == [
        (DELETE, "compactBefore.parquet", None),
        (ADD, "compactAfter.parquet", 1),
    ]
    assert parts(resolved.compact_changelog) == [(ADD, "compactChangelogFiles.parquet", 1)]
    assert resolved.overwrite is None
    assert (resolved.commit_user, resolved.identifier) == ("writer", 1)


def test_a_resolved_file_carries_the_table_layout_and_encoded_keys() -> None:
    data_file = {
        **PK_FILE,
        "level": 5,
        "minSequenceNumber": 3,
        "maxSequenceNumber": 7,
        "extraFiles": ["i.idx"],
    }
    resolved = resolve_committable(
        commit_request(message(bucket=1, newFiles=[data_file])), PK, now_millis=NOW
    )
    [added] = resolved.append
    assert (added.partition, added.bucket, added.total_buckets) == (partition("a"), 1, 2)
    f = added.file
    assert (f.min_key, f.max_key, f.level, f.extra_files) == (key(1), key(9), 5, ("i.idx",))
    # With one key field the key range is the key statistics.
    assert f.key_stats == SimpleStats(key(1), key(9), (0,))
    assert (f.min_sequence_number, f.max_sequence_number, f.creation_time) == (3, 7, NOW)


def test_a_writer_may_set_creation_time_file_source_and_total_buckets() -> None:
    data_file = {**PK_FILE, "creationTime": 5, "fileSource": 1}
    request = commit_request(message(bucket=3, totalBuckets=4, newFiles=[data_file]))
    [added] = resolve_committable(request, PK, now_millis=NOW).append
    assert (added.total_buckets, added.file.creation_time, added.file.file_source) == (4, 5, 1)


def test_an_append_table_file_has_empty_keys_and_the_table_bucket_count() -> None:
    request = commit_request(message(newFiles=[file_json()]))
    [added] = resolve_committable(request, APPEND, now_millis=NOW).append
    empty_row = encode_row([], [])
    assert (added.total_buckets, added.file.min_key, added.file.max_key) == (-1, empty_row, empty_row)
    assert added.file.key_stats == SimpleStats.EMPTY


@dataclass(frozen=True)
class _File:
    file_name: str
    file_size: int = 100
    row_count: int = 10
    min_key: list[JsonValue] = field(default_factory=list)
    max_key: list[JsonValue] = field(default_factory=list)
    key_stats: None = None
    min_sequence_number: int = 0
    max_sequence_number: int = 0
    level: int = 0
    schema_id: int | None = None
    delete_row_count: int = 0
    extra_files: tuple[str, ...] = ()
    creation_time: int | None = None
    file_source: int | None = None


@dataclass(frozen=True)
class _Message:
    partition: dict[str, JsonValue]
    bucket: int
    total_buckets: int | None = None
    new_files: tuple[_File, ...] = ()
    deleted_files: tuple[_File, ...] = ()
    changelog_files: tuple[_File, ...] = ()
    compact_before: tuple[_File, ...] = ()
    compact_after: tuple[_File, ...] = ()
    compact_changelog_files: tuple[_File, ...] = ()


@dataclass(frozen=True)
class _Overwrite:
    mode: Literal["dynamic", "static", "table"]
    partition: dict[str, JsonValue] | None = None


@dataclass(frozen=True)
class _Committable:
    commit_user: str
    identifier: int
    messages: tuple[_Message, ...]
    watermark: int | None = None
    properties: dict[str, str] = field(default_factory=dict)
    base_snapshot_id: int | None = None
    overwrite: _Overwrite | None = None


def test_the_domain_reads_any_committable_of_the_wire_s_shape() -> None:
    """resolve_committable takes the shapes of domain/manifest_committable, not the wire model: plain
    dataclasses resolve to the same committable as the CommitRequest with the same fields, and are
    refused with the same field named."""
    plain = _Committable(
        "writer",
        1,
        (_Message({"dt": "a"}, 0, new_files=(_File("data-1.parquet", min_key=[1], max_key=[9]),)),),
        watermark=5,
        properties={"k": "v"},
        overwrite=_Overwrite("static", {"dt": "a"}),
    )
    wire = commit_request(
        message(newFiles=[PK_FILE]),
        watermark=5,
        properties={"k": "v"},
        overwrite={"mode": "static", "partition": {"dt": "a"}},
    )
    assert resolve_committable(plain, PK, now_millis=NOW) == resolve_committable(wire, PK, now_millis=NOW)

    refused = _Committable("writer", 1, (_Message({"dt": "a"}, 7, new_files=(_File("data-1.parquet"),)),))
    with pytest.raises(InvalidRequest) as raised:
        resolve_committable(refused, PK, now_millis=NOW)
    assert raised.value.field == "messages[0].bucket"


UNPARTITIONED = shape({"id": "BIGINT", "v": "STRING"})


@pytest.mark.parametrize(
    ("table", "overwrite", "target"),
    [
        pytest.param(APPEND, {"mode": "table"}, OverwriteTarget(whole_table=True), id="table: everything"),
        pytest.param(
            APPEND, {"mode": "dynamic"},
            OverwriteTarget(partitions=frozenset({partition("a"), partition("b")})),
            id="dynamic: the partitions of the new files",
        ),
        pytest.param(
            UNPARTITIONED, {"mode": "dynamic"}, OverwriteTarget(whole_table=True),
            id="dynamic on an unpartitioned table: everything",
        ),
        pytest.param(
            APPEND, {"mode": "static", "partition": {"dt": "a"}}, OverwriteTarget(spec={0: "a"}),
            id="static: the given partition",
        ),
    ],
)  # fmt: skip
def test_overwrite_targets(table: TableShape, overwrite: dict[str, object], target: OverwriteTarget) -> None:
    if table is UNPARTITIONED:
        messages = [{"bucket": 0, "newFiles": [file_json()]}]
    elif overwrite["mode"] == "dynamic":
        # A message without new files adds no partition: dynamic means the partitions written to.
        messages = [
            message(newFiles=[file_json()]),
            {"partition": {"dt": "b"}, "bucket": 0, "newFiles": [file_json("data-2.parquet")]},
            {"partition": {"dt": "c"}, "bucket": 0},
        ]
    else:
        messages = [message(newFiles=[file_json()])]
    resolved = resolve_committable(commit_request(*messages, overwrite=overwrite), table, now_millis=NOW)
    assert resolved.overwrite == target
