"""Table schema JSON, checked against pypaimon 2.1.0's writer and parser."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_format.schema import (
    SchemaField,
    TableSchema,
    parse_schema_file_name,
    schema_file_name,
)

from ._pypaimon_table import PypaimonTable

# Verbatim from paimon-format.md §2 (written by pypaimon).
PYPAIMON_SCHEMA = """{"version": 3, "id": 0,
 "fields": [{"id": 0, "name": "dt", "type": "STRING NOT NULL"},
            {"id": 1, "name": "id", "type": "BIGINT NOT NULL"},
            {"id": 2, "name": "name", "type": "STRING"}, {"id": 3, "name": "v", "type": "DOUBLE"}],
 "highestFieldId": 3, "partitionKeys": ["dt"], "primaryKeys": ["dt", "id"],
 "options": {"bucket": "2"}, "comment": null, "timeMillis": 1795283568688}"""
KEY_ORDER = [
    "version",
    "id",
    "fields",
    "highestFieldId",
    "partitionKeys",
    "primaryKeys",
    "options",
    "comment",
    "timeMillis",
]
REQUIRED = ["fields", "options", "id", "highestFieldId", "partitionKeys", "primaryKeys"]

TEXT = st.text(max_size=10)
INT = st.integers(-(2**63), 2**63 - 1)
TYPE_JSON = st.sampled_from(["INT", "BIGINT NOT NULL", "DECIMAL(10, 2)", "TIMESTAMP(6)"]) | st.builds(
    lambda element, nullable: {"type": "ARRAY", "element": element, "nullable": nullable},
    st.sampled_from(["INT", "STRING"]),
    st.booleans(),
)
FIELDS = st.builds(
    SchemaField,
    id=INT,
    name=TEXT,
    type=TYPE_JSON,
    description=st.none() | TEXT,
    default_value=st.none() | TEXT,
)
SCHEMAS = st.builds(
    TableSchema,
    version=st.integers(1, 3),
    id=INT,
    fields=st.lists(FIELDS, max_size=4).map(tuple),
    highest_field_id=INT,
    partition_keys=st.lists(TEXT, max_size=2).map(tuple),
    primary_keys=st.lists(TEXT, max_size=2).map(tuple),
    options=st.dictionaries(TEXT, TEXT, max_size=3),
    comment=st.none() | TEXT,
    time_millis=INT,
    extra=st.dictionaries(TEXT.filter(lambda k: k not in KEY_ORDER), st.none() | INT | TEXT, max_size=2),
)


def _schema(**changes: Any) -> TableSchema:
    data = json.loads(PYPAIMON_SCHEMA)
    data.update(changes)
    return TableSchema.from_json(json.dumps(data))


@settings(max_examples=100, deadline=None)
@given(SCHEMAS)
def test_json_round_trip(schema: TableSchema) -> None:
    assert TableSchema.from_json(schema.to_json()) == schema


def test_parses_pypaimon_example_and_writes_it_back() -> None:
    s = TableSchema.from_json(PYPAIMON_SCHEMA)
    assert (s.version, s.id, s.highest_field_id, s.time_millis, s.comment) == (3, 0, 3, 1795283568688, None)
    assert s.fields[1] == SchemaField(1, "id", "BIGINT NOT NULL")
    assert (s.partition_keys, s.primary_keys, dict(s.options)) == (("dt",), ("dt", "id"), {"bucket": "2"})
    out = s.to_json()
    assert json.loads(out) == json.loads(PYPAIMON_SCHEMA)
    assert list(json.loads(out)) == KEY_ORDER
    assert list(json.loads(out)["fields"][0]) == ["id", "name", "type"]


def test_field_description_and_default_only_when_set() -> None:
    data = json.loads(PYPAIMON_SCHEMA)
    data["fields"][2]["description"] = "the name"
    data["fields"][3]["defaultValue"] = "0.0"
    s = TableSchema.from_json(json.dumps(data))
    assert s.field("name").description == "the name"
    assert s.field("v").default_value == "0.0"
    fields = json.loads(s.to_json())["fields"]
    assert [list(f) for f in fields] == [
        ["id", "name", "type"],
        ["id", "name", "type"],
        ["id", "name", "type", "description"],
        ["id", "name", "type", "defaultValue"],
    ]


def test_nested_types_are_kept_verbatim() -> None:
    array = {"type": "ARRAY", "element": "STRING", "nullable": True}
    row = {"type": "ROW", "fields": [{"id": 5, "name": "a", "type": "INT"}], "nullable": False}
    data = json.loads(PYPAIMON_SCHEMA)
    data["fields"] += [{"id": 4, "name": "tags", "type": array}, {"id": 6, "name": "r", "type": row}]
    s = TableSchema.from_json(json.dumps(data))
    assert (s.field("tags").type, s.field("r").type) == (array, row)
    assert json.loads(s.to_json()) == data


def test_unknown_keys_are_preserved() -> None:
    s = _schema(futureKey={"x": [1]})
    assert s.extra == {"futureKey": {"x": [1]}}
    assert json.loads(s.to_json())["futureKey"] == {"x": [1]}
    with pytest.raises(ValueError, match="options"):
        TableSchema(id=0, fields=(), highest_field_id=0, extra={"options": {}})


@pytest.mark.parametrize("key", REQUIRED)
def test_missing_required_key_is_named(key: str) -> None:
    data = json.loads(PYPAIMON_SCHEMA)
    del data[key]
    with pytest.raises(ValueError, match=rf"\b{key}\b"):
        TableSchema.from_json(json.dumps(data))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"id": "0"}, "'id'"),
        ({"options": {"bucket": 2}}, "options"),
        ({"primaryKeys": "id"}, "primaryKeys"),
        ({"fields": [{"id": 0, "name": "a"}]}, "'type'"),
        ({"fields": [{"id": 0, "name": 1, "type": "INT"}]}, "name"),
        ({"comment": 5}, "comment"),
    ],
)
def test_malformed_values_are_rejected(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _schema(**changes)


def test_missing_version_means_paimon_07_defaults_without_rewriting_options() -> None:
    data = json.loads(PYPAIMON_SCHEMA)
    del data["version"]
    del data["timeMillis"]
    data["options"] = {}
    s = TableSchema.from_json(json.dumps(data))
    assert (s.version, s.bucket, s.file_format, s.time_millis) == (1, 1, "orc", 0)
    assert dict(s.options) == {}  # defaults are derived, not injected into the options
    assert (_schema(version=2, options={}).bucket, _schema(version=2, options={}).file_format) == (-1, "orc")
    current = _schema(options={})
    assert (current.bucket, current.file_format) == (-1, "parquet")
    assert _schema(options={"bucket": "4", "file.format": "ORC"}).file_format == "orc"
    assert _schema(options={"bucket": "4"}).bucket == 4


def test_keys_and_field_lookup() -> None:
    s = TableSchema.from_json(PYPAIMON_SCHEMA)
    assert s.field("v") == SchemaField(3, "v", "DOUBLE")
    with pytest.raises(KeyError, match="nope"):
        s.field("nope")
    assert s.trimmed_primary_keys == ("id",)
    assert s.bucket_keys == ("id",)
    assert _schema(options={"bucket": "2", "bucket-key": " name, v ,"}).bucket_keys == ("name", "v")
    assert _schema(primaryKeys=[], partitionKeys=[]).bucket_keys == ()


def test_schema_file_names() -> None:
    assert schema_file_name(4) == "schema-4"
    assert parse_schema_file_name("schema-12") == 12
    for other in ("schema-", "schema-1.tmp", ".schema-1.x.tmp", "snapshot-1", "schema-x"):
        assert parse_schema_file_name(other) is None


# ------------------------------------------------------------------------------------------------
# Against pypaimon
# ------------------------------------------------------------------------------------------------


def test_parses_pypaimon_written_schema_file(pk_table: PypaimonTable) -> None:
    assert sorted(p.name for p in pk_table.schema_dir.iterdir()) == [schema_file_name(0)]
    text = (pk_table.schema_dir / schema_file_name(0)).read_text()
    s = TableSchema.from_json(text)
    assert [(f.id, f.name, f.type) for f in s.fields] == [
        (0, "dt", "STRING NOT NULL"),
        (1, "id", "BIGINT NOT NULL"),
        (2, "name", "STRING"),
        (3, "v", "DOUBLE"),
    ]
    assert (s.partition_keys, s.primary_keys, s.bucket, s.bucket_keys) == (("dt",), ("dt", "id"), 2, ("id",))
    assert s.time_millis == pk_table.table.table_schema.time_millis
    # Byte-for-byte what pypaimon wrote.
    assert s.to_json() == text


def test_pypaimon_parses_our_json() -> None:
    from pypaimon.schema.table_schema import TableSchema as PyTableSchema

    data = json.loads(PYPAIMON_SCHEMA)
    data["fields"].append(
        {
            "id": 4,
            "name": "tags",
            "type": {"type": "ARRAY", "element": "INT", "nullable": True},
            "description": "labels",
        }
    )
    data["highestFieldId"] = 4
    data["comment"] = "c"
    ours = TableSchema.from_json(json.dumps(data))
    theirs = PyTableSchema.from_json(ours.to_json())
    assert (theirs.version, theirs.id, theirs.highest_field_id, theirs.time_millis, theirs.comment) == (
        3,
        0,
        4,
        1795283568688,
        "c",
    )
    assert [(f.id, f.name, f.type.to_dict(), f.description) for f in theirs.fields] == [
        (f.id, f.name, f.type, f.description) for f in ours.fields
    ]
    assert (theirs.partition_keys, theirs.primary_keys) == (["dt"], ["dt", "id"])
    assert theirs.options == {"bucket": "2"}
    assert theirs.bucket_keys == list(ours.bucket_keys)


def test_pypaimon_schema_with_nested_types_round_trips() -> None:
    import pyarrow as pa
    from pypaimon import Schema
    from pypaimon.common.json_util import JSON
    from pypaimon.schema.table_schema import TableSchema as PyTableSchema

    arrow = pa.schema(
        [
            ("id", pa.int64()),
            ("tags", pa.list_(pa.string())),
            ("m", pa.map_(pa.string(), pa.int32())),
            ("r", pa.struct([("a", pa.int32()), ("b", pa.string())])),
            ("d", pa.decimal128(10, 2)),
        ]
    )
    py_schema = PyTableSchema.from_schema(
        5, Schema.from_pyarrow_schema(arrow, primary_keys=["id"], options={"bucket": "1"}, comment="nested")
    )
    text = JSON.to_json(py_schema, indent=2)
    ours = TableSchema.from_json(text)
    assert ours.to_json() == text
    assert (ours.id, ours.highest_field_id, ours.bucket, ours.comment) == (5, 6, 1, "nested")
    assert ours.field("r").type == {
        "type": "ROW",
        "nullable": True,
        "fields": [{"id": 4, "name": "a", "type": "INT"}, {"id": 5, "name": "b", "type": "STRING"}],
    }
    back = PyTableSchema.from_json(ours.to_json())
    assert [f.to_dict() for f in back.fields] == [f.to_dict() for f in py_schema.fields]
