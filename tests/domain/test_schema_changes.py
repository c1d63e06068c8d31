"""ALTER TABLE's rules, pure: every kind of change applied, and every refusal naming its change."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pytest
from pydantic import TypeAdapter, ValidationError

from coordinator.domain.schema_changes import evolve_schema
from coordinator.domain.type_widening import widens
from coordinator.errors import InvalidRequest
from coordinator_client.models import AlterTableRequest, SchemaChange
from paimon_format.schema import SchemaField, TableSchema
from paimon_format.types import parse_type

NOW = 1_700_000_000_000


def schema(**options: str) -> TableSchema:
    """A partitioned primary-key table: dt (partition), id (key), v, n, c, highestFieldId 7 (ids 5-7
    belonged to dropped columns)."""
    return TableSchema(
        id=3,
        fields=(
            SchemaField(0, "dt", "STRING NOT NULL"),
            SchemaField(1, "id", "BIGINT NOT NULL"),
            SchemaField(2, "v", "INT"),
            SchemaField(3, "n", "DECIMAL(10, 2) NOT NULL", "amount"),
            SchemaField(4, "c", "CHAR(4)"),
        ),
        highest_field_id=7,
        partition_keys=("dt",),
        primary_keys=("dt", "id"),
        options={"bucket": "2", **options},
        comment="orders",
        time_millis=1,
    )


def evolve(*changes: dict[str, Any], base: TableSchema | None = None) -> TableSchema:
    request = AlterTableRequest.model_validate({"changes": list(changes)})
    return evolve_schema(base or schema(), request.changes, now_millis=NOW)


def refused(*changes: dict[str, Any], base: TableSchema | None = None) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        evolve(*changes, base=base)
    return caught.value


def columns(s: TableSchema) -> list[tuple[int, str, object]]:
    return [(f.id, f.name, f.type) for f in s.fields]


def add(name: str, type_: str | dict[str, Any] = "STRING", **more: Any) -> dict[str, Any]:
    return {"action": "addColumn", "fieldNames": [name], "dataType": type_, **more}


def move(kind: str, name: str, reference: str | None = None) -> dict[str, Any]:
    return {"fieldName": name, "referenceFieldName": reference, "type": kind}


def rename(name: str, new: str) -> dict[str, Any]:
    return {"action": "renameColumn", "fieldNames": [name], "newName": new}


def drop(name: str) -> dict[str, Any]:
    return {"action": "dropColumn", "fieldNames": [name]}


def retype(name: str, type_: object) -> dict[str, Any]:
    return {"action": "updateColumnType", "fieldNames": [name], "newDataType": type_}


def nullability(name: str, nullable: bool) -> dict[str, Any]:
    return {"action": "updateColumnNullability", "fieldNames": [name], "newNullability": nullable}


def position(where: dict[str, Any]) -> dict[str, Any]:
    return {"action": "updateColumnPosition", "move": where}


def option(key: str, value: str | None = None) -> dict[str, Any]:
    """setOption, or removeOption without a value."""
    if value is None:
        return {"action": "removeOption", "key": key}
    return {"action": "setOption", "key": key, "value": value}


def test_the_next_schema_has_the_next_id_time_and_keeps_what_no_change_touched() -> None:
    new = evolve({"action": "updateComment", "comment": None})
    assert (new.id, new.time_millis, new.comment) == (4, NOW, None)
    assert new.fields == schema().fields
    assert (new.partition_keys, new.primary_keys, new.highest_field_id) == (("dt",), ("dt", "id"), 7)
    assert evolve({"action": "updateComment", "comment": "all orders"}).comment == "all orders"


def test_a_new_column_takes_the_next_field_id_above_the_highest_ever_and_goes_last() -> None:
    new = evolve(add("note", comment="free text"), add("qty", "INT"))
    assert columns(new)[-2:] == [(8, "note", "STRING"), (9, "qty", "INT")]
    assert new.fields[-2].description == "free text"
    assert new.highest_field_id == 9


def test_a_new_column_goes_before_the_partition_columns_when_the_table_says_so() -> None:
    base = schema(**{"add-column-before-partition": "true"})
    assert [f.name for f in evolve(add("note"), base=base).fields] == ["note", "dt", "id", "v", "n", "c"]


@pytest.mark.parametrize(
    ("where", "order"),
    [
        (move("FIRST", "note"), ["note", "dt", "id", "v", "n", "c"]),
        (move("LAST", "note"), ["dt", "id", "v", "n", "c", "note"]),
        (move("AFTER", "note", "id"), ["dt", "id", "note", "v", "n", "c"]),
        (move("BEFORE", "note", "id"), ["dt", "note", "id", "v", "n", "c"]),
    ],
)
def test_a_new_column_goes_where_its_move_says(where: dict[str, Any], order: list[str]) -> None:
    assert [f.name for f in evolve(add("note", move=where)).fields] == order


@pytest.mark.parametrize(
    ("where", "order"),
    [
        (move("FIRST", "c"), ["c", "dt", "id", "v", "n"]),
        (move("FIRST", "dt"), ["dt", "id", "v", "n", "c"]),
        (move("LAST", "dt"), ["id", "v", "n", "c", "dt"]),
        (move("AFTER", "dt", "v"), ["id", "v", "dt", "n", "c"]),
        (move("AFTER", "c", "dt"), ["dt", "c", "id", "v", "n"]),
        (move("BEFORE", "c", "id"), ["dt", "c", "id", "v", "n"]),
        (move("BEFORE", "dt", "c"), ["id", "v", "n", "dt", "c"]),
    ],
)
def test_a_column_moves_first_last_after_or_before_another(where: dict[str, Any], order: list[str]) -> None:
    new = evolve({"action": "updateColumnPosition", "move": where})
    assert [f.name for f in new.fields] == order
    assert sorted(columns(new)) == sorted(columns(schema()))  # ids and types travel with the names


def test_a_rename_keeps_the_field_id_and_follows_into_keys_and_options() -> None:
    base = schema(
        **{
            "sequence.field": "v",
            "fields.v.aggregate-function": "sum",
            "fields.v,n.sequence-group": "v,c",
            "fields.other.ignore-retract": "true",
        }
    )
    new = evolve(
        {"action": "renameColumn", "fieldNames": ["id"], "newName": "order_id"},
        {"action": "renameColumn", "fieldNames": ["v"], "newName": "value"},
        base=base,
    )
    assert columns(new)[1:3] == [(1, "order_id", "BIGINT NOT NULL"), (2, "value", "INT")]
    assert new.primary_keys == ("dt", "order_id")
    assert dict(new.options) == {
        "bucket": "2",
        "sequence.field": "value",
        "fields.value.aggregate-function": "sum",
        "fields.value,n.sequence-group": "value,c",
        "fields.other.ignore-retract": "true",
    }


def test_a_rename_renames_the_bucket_key_of_an_append_table() -> None:
    base = TableSchema(
        id=0,
        fields=(SchemaField(0, "k", "INT"), SchemaField(1, "v", "INT")),
        highest_field_id=1,
        options={"bucket": "4", "bucket-key": "k"},
    )
    new = evolve({"action": "renameColumn", "fieldNames": ["k"], "newName": "key"}, base=base)
    assert new.options["bucket-key"] == "key"
    assert new.bucket_keys == ("key",)


def test_drop_then_add_under_the_same_name_is_a_new_column() -> None:
    new = evolve({"action": "dropColumn", "fieldNames": ["v"]}, add("v", "BIGINT"))
    assert columns(new)[-1] == (8, "v", "BIGINT")
    assert 2 not in [f.id for f in new.fields]


def test_later_changes_see_what_earlier_ones_did() -> None:
    new = evolve(
        add("note"),
        {"action": "renameColumn", "fieldNames": ["note"], "newName": "remark"},
        {"action": "updateColumnComment", "fieldNames": ["remark"], "newComment": "why"},
        {"action": "updateColumnPosition", "move": move("AFTER", "remark", "id")},
    )
    assert [f.name for f in new.fields] == ["dt", "id", "remark", "v", "n", "c"]
    assert new.fields[2].description == "why"


@pytest.mark.parametrize(
    ("column", "old", "new"),
    [
        ("v", "INT", "BIGINT"),
        ("v", "INT", "INT"),
        ("n", "DECIMAL(10, 2) NOT NULL", "DECIMAL(20, 2) NOT NULL"),
        ("n", "DECIMAL(10, 2) NOT NULL", "DECIMAL(10, 2)"),
        ("c", "CHAR(4)", "VARCHAR(4)"),
        ("c", "CHAR(4)", "STRING"),
    ],
)
def test_a_column_type_widens(column: str, old: str, new: str) -> None:
    changed = evolve({"action": "updateColumnType", "fieldNames": [column], "newDataType": new})
    assert changed.field(column).type == new
    assert changed.field(column).id == schema().field(column).id


def test_keep_nullability_keeps_the_columns_nullability() -> None:
    change = {"action": "updateColumnType", "fieldNames": ["n"], "newDataType": "DECIMAL(12, 2)"}
    assert evolve({**change, "keepNullability": True}).field("n").type == "DECIMAL(12, 2) NOT NULL"
    assert evolve(change).field("n").type == "DECIMAL(12, 2)"


def test_nullability_and_comments_of_a_column_change() -> None:
    new = evolve(
        {"action": "updateColumnNullability", "fieldNames": ["n"], "newNullability": True},
        {"action": "updateColumnComment", "fieldNames": ["n"], "newComment": None},
        {"action": "updateColumnComment", "fieldNames": ["v"], "newComment": "value"},
    )
    assert (new.field("n").type, new.field("n").description) == ("DECIMAL(10, 2)", None)
    assert new.field("v").description == "value"


def test_options_are_set_and_removed() -> None:
    new = evolve(
        {"action": "setOption", "key": "snapshot.num-retained.max", "value": "20"},
        {"action": "setOption", "key": "write-only", "value": "true"},
        {"action": "removeOption", "key": "write-only"},
        {"action": "removeOption", "key": "never-set"},
    )
    assert dict(new.options) == {"bucket": "2", "snapshot.num-retained.max": "20"}


@pytest.mark.parametrize(
    ("old", "new", "wider"),
    [
        ("TINYINT", "SMALLINT", True),
        ("TINYINT", "BIGINT", True),
        ("SMALLINT", "INT", True),
        ("BIGINT", "INT", False),
        ("INT", "FLOAT", False),
        ("INT", "DOUBLE", False),
        ("FLOAT", "DOUBLE", True),
        ("DOUBLE", "FLOAT", False),
        ("DECIMAL(10, 2)", "DECIMAL(38, 2)", True),
        ("DECIMAL(10, 2)", "DECIMAL(9, 2)", False),
        ("DECIMAL(10, 2)", "DECIMAL(12, 4)", False),
        ("INT", "DECIMAL(20, 0)", False),
        ("VARCHAR(5)", "VARCHAR(10)", True),
        ("VARCHAR(10)", "VARCHAR(5)", False),
        ("VARCHAR(10)", "STRING", True),
        ("STRING", "VARCHAR(10)", False),
        ("CHAR(5)", "VARCHAR(5)", True),
        ("CHAR(5)", "VARCHAR(4)", False),
        ("CHAR(5)", "CHAR(6)", False),
        ("VARCHAR(5)", "CHAR(5)", False),
        ("INT", "STRING", False),
        ("STRING", "INT", False),
        ("BINARY(4)", "BYTES", False),
        ("DATE", "TIMESTAMP(3)", False),
        ("TIMESTAMP(3)", "TIMESTAMP(6)", False),
        ("BOOLEAN", "BOOLEAN", True),
    ],
)
def test_only_lossless_widening_that_every_reader_applies_is_allowed(old: str, new: str, wider: bool) -> None:
    assert widens(parse_type(old), parse_type(new)) is wider


REFUSALS: list[tuple[str, list[dict[str, Any]], str, str]] = [
    ("fixed option set", [add("x"), option("bucket", "4")], "changes[1].key", "bucket"),
    ("fixed option removed", [option("merge-engine")], "changes[0].key", "merge-engine"),
    ("retention invalid", [option("snapshot.time-retained", "soon")], "changes[0].value", "soon"),
    ("duplicate new column", [add("x"), add("x")], "changes[1].fieldNames", "already has a column 'x'"),
    ("new column exists", [add("v")], "changes[0].fieldNames", "already has a column 'v'"),
    ("new column NOT NULL", [add("x", "INT NOT NULL")], "changes[0].dataType", "must be nullable"),
    (
        "new column nested type",
        [add("x", {"type": "ARRAY", "element": "INT"})],
        "changes[0].dataType",
        "nested",
    ),
    ("new column unknown type", [add("x", "NUMBERISH")], "changes[0].dataType", "unknown Paimon type"),
    (
        "new column nested path",
        [{"action": "addColumn", "fieldNames": ["v", "x"], "dataType": "INT"}],
        "changes[0].fieldNames",
        "nested column 'v.x'",
    ),
    (
        "new column moved after nothing",
        [add("x", move=move("AFTER", "x", "nope"))],
        "changes[0].move.referenceFieldName",
        "no column 'nope'",
    ),
    (
        "new column's move names another",
        [add("x", move=move("FIRST", "v"))],
        "changes[0].move.fieldName",
        "('x')",
    ),
    ("rename unknown", [rename("nope", "x")], "changes[0].fieldNames", "no column 'nope'"),
    ("rename partition", [rename("dt", "day")], "changes[0].fieldNames", "partition column"),
    ("rename onto existing", [rename("v", "c")], "changes[0].newName", "already has a column 'c'"),
    ("rename after drop", [drop("v"), rename("v", "w")], "changes[1].fieldNames", "no column 'v'"),
    ("drop partition", [drop("dt")], "changes[0].fieldNames", "partition or primary-key"),
    ("drop primary key", [drop("id")], "changes[0].fieldNames", "partition or primary-key"),
    ("drop unknown", [drop("nope")], "changes[0].fieldNames", "no column 'nope'"),
    ("retype partition", [retype("dt", "STRING")], "changes[0].fieldNames", "its type cannot change"),
    ("retype primary key", [retype("id", "BIGINT")], "changes[0].fieldNames", "its type cannot change"),
    ("narrowing", [add("x"), retype("v", "SMALLINT")], "changes[1].newDataType", "from INT to SMALLINT"),
    ("lossy cast", [retype("v", "STRING")], "changes[0].newDataType", "from INT to STRING"),
    (
        "retype to nested",
        [retype("v", {"type": "ROW", "fields": []})],
        "changes[0].newDataType",
        "nested types",
    ),
    (
        "retype to NOT NULL",
        [retype("v", "BIGINT NOT NULL")],
        "changes[0].newDataType",
        "cannot become NOT NULL",
    ),
    (
        "nullability to NOT NULL",
        [nullability("v", False)],
        "changes[0].newNullability",
        "cannot become NOT NULL",
    ),
    ("nullable primary key", [nullability("id", True)], "changes[0].newNullability", "primary-key column"),
    (
        "comment of unknown",
        [{"action": "updateColumnComment", "fieldNames": ["nope"], "newComment": "x"}],
        "changes[0].fieldNames",
        "no column 'nope'",
    ),
    ("move unknown", [position(move("FIRST", "nope"))], "changes[0].move.fieldName", "no column 'nope'"),
    (
        "move after unknown",
        [position(move("AFTER", "v", "nope"))],
        "changes[0].move.referenceFieldName",
        "no column 'nope'",
    ),
    (
        "move next to itself",
        [position(move("BEFORE", "v", "v"))],
        "changes[0].move.referenceFieldName",
        "itself",
    ),
]


@pytest.mark.parametrize(
    ("changes", "field", "says"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_a_refusal_names_the_change_and_its_field(
    changes: list[dict[str, Any]], field: str, says: str
) -> None:
    error = refused(*changes)
    assert error.field == field
    assert says in error.message


def test_a_column_named_by_bucket_key_or_sequence_field_cannot_be_dropped() -> None:
    base = TableSchema(
        id=0,
        fields=(SchemaField(0, "k", "INT"), SchemaField(1, "v", "INT"), SchemaField(2, "w", "INT")),
        highest_field_id=2,
        options={"bucket": "4", "bucket-key": "k", "sequence.field": "w"},
    )
    for i, name in enumerate(["k", "w"]):
        error = refused(add("x"), {"action": "dropColumn", "fieldNames": [name]}, base=base)
        assert (error.field, i) == ("changes[1].fieldNames", i)
        assert "named by the option" in error.message


def test_the_last_column_cannot_be_dropped() -> None:
    base = TableSchema(
        id=0, fields=(SchemaField(0, "a", "INT"), SchemaField(1, "b", "INT")), highest_field_id=1
    )
    error = refused(
        {"action": "dropColumn", "fieldNames": ["a"]},
        {"action": "dropColumn", "fieldNames": ["b"]},
        base=base,
    )
    assert error.field == "changes[1].fieldNames"
    assert "at least one" in error.message


def test_a_nested_column_of_a_registered_table_cannot_be_retyped() -> None:
    base = TableSchema(
        id=0,
        fields=(SchemaField(0, "a", "INT"), SchemaField(1, "r", {"type": "ROW", "fields": []})),
        highest_field_id=1,
    )
    error = refused({"action": "updateColumnType", "fieldNames": ["r"], "newDataType": "INT"}, base=base)
    assert (error.field, "nested types" in error.message) == ("changes[0].fieldNames", True)
    # Its other changes are fine: a nested column can be renamed, moved and commented.
    new = evolve({"action": "renameColumn", "fieldNames": ["r"], "newName": "s"}, base=base)
    assert new.fields[1] == SchemaField(1, "s", {"type": "ROW", "fields": []})


def test_a_refusal_leaves_the_schema_it_was_given_as_it_was() -> None:
    base = schema()
    before = base.to_json()
    refused(add("x"), {"action": "dropColumn", "fieldNames": ["dt"]}, base=base)
    assert base.to_json() == before


CHANGE = TypeAdapter(SchemaChange)


@pytest.mark.parametrize(
    "wire",
    [
        # As pypaimon 2.1.0 serialises them (its JSON.to_json of AlterTableRequest), nulls included.
        {"key": "a", "value": "b", "action": "setOption"},
        {"key": "a", "action": "removeOption"},
        {"comment": None, "action": "updateComment"},
        {"fieldNames": ["c"], "dataType": "BIGINT", "comment": "cmt", "move": None, "action": "addColumn"},
        {"fieldNames": ["c"], "newName": "d", "action": "renameColumn"},
        {"fieldNames": ["d"], "action": "dropColumn"},
        {"fieldNames": ["x"], "newDataType": "BIGINT", "keepNullability": True, "action": "updateColumnType"},
        {"fieldNames": ["x"], "newNullability": True, "action": "updateColumnNullability"},
        {"fieldNames": ["x"], "newComment": "hello", "action": "updateColumnComment"},
        # Java Paimon's Move.
        {
            "move": {"fieldName": "x", "referenceFieldName": "y", "type": "AFTER"},
            "action": "updateColumnPosition",
        },
        {
            "move": {"fieldName": "x", "referenceFieldName": None, "type": "FIRST"},
            "action": "updateColumnPosition",
        },
    ],
)
def test_the_wire_model_reads_paimons_json_and_writes_it_back(wire: dict[str, Any]) -> None:
    change = CHANGE.validate_python(wire)
    assert change.model_dump(mode="json", by_alias=True) == wire


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ([], ()),
        ([{"action": "updateColumnDefaultValue", "fieldNames": ["x"], "newDefaultValue": "1"}], (0,)),
        ([rename("x", "has space")], (0, "renameColumn", "newName")),
        ([position({"fieldName": "x", "type": "AFTER"})], (0, "updateColumnPosition", "move")),
        ([{"action": "dropColumn", "fieldNames": []}], (0, "dropColumn", "fieldNames")),
        ([{**option("a", "b"), "extra": 1}], (0, "setOption", "extra")),
        ([option("a", "b")] * 1001, ()),
    ],
)
def test_the_wire_model_refuses_what_paimon_would_not_send(
    changes: list[dict[str, Any]], where: tuple[object, ...]
) -> None:
    with pytest.raises(ValidationError) as caught:
        AlterTableRequest.model_validate({"changes": changes})
    assert caught.value.errors()[0]["loc"][: len(where) + 1] == ("changes", *where)


@dataclass(frozen=True)
class _Rename:
    field_names: tuple[str, ...]
    new_name: str
    action: Literal["renameColumn"] = "renameColumn"


@dataclass(frozen=True)
class _SetOption:
    key: str
    value: str
    action: Literal["setOption"] = "setOption"


def test_the_rules_read_any_change_of_the_wire_s_shape() -> None:
    """evolve_schema takes the shapes of domain/schema_change, told apart by `action`, not the wire
    models: plain dataclasses evolve the schema as the parsed JSON does, and are refused naming the same
    field."""
    plain: list[_Rename | _SetOption] = [_Rename(("v",), "w"), _SetOption("a", "b")]
    assert evolve_schema(schema(), plain, now_millis=NOW) == evolve(rename("v", "w"), option("a", "b"))
    with pytest.raises(InvalidRequest) as caught:
        evolve_schema(schema(), [_SetOption("bucket", "4")], now_millis=NOW)
    assert caught.value.field == refused(option("bucket", "4")).field == "changes[0].key"
