"""Paimon's ALTER TABLE: a list of schema changes applied to a TableSchema, giving the next schema.

The rules are Paimon's (SchemaManager.generateTableSchema), narrowed where the coordinator's readers and
writers, and every other reader of the table's files, could not follow:

- a new column gets the next field id above highestFieldId, must be nullable (files written before it
  have no value for it), goes last (or before the partition columns with `add-column-before-partition`)
  unless its move says FIRST, LAST, AFTER or BEFORE a column; only atomic types (as at create);
- a name exists once; nested columns (a fieldNames path of more than one name) are not supported;
- partition columns cannot be renamed, dropped or retyped; primary-key columns cannot be dropped,
  retyped or made nullable, but may be renamed (as in Paimon: the key follows the column by field id,
  and `bucket-key`, `sequence.field` and `fields.<name>.*` options follow the name);
- a column named by `bucket-key` or `sequence.field` cannot be dropped; at least one column remains;
- a type changes only to a wider one that every reader casts old files to without loss (see
  `type_widening`); nullability only from NOT NULL to NULL: old files may hold nulls otherwise;
- options that decide where rows and files are (FIXED_OPTIONS) cannot change, and the retention options
  must parse (Retention.of).

Changes apply in order to a working copy, so one may name a column an earlier one added or renamed; the
first refusal aborts all of them. Every refusal is an InvalidRequest whose field names the change
(`changes[2].newDataType`). Moves that leave a column where it is are no-ops (Paimon refuses a FIRST of the
first column as moving "itself").

The changes are read through schema_change's Protocols, told apart by their `action`, as Paimon's JSON
tells them apart; the wire's changes have those shapes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from coordinator.domain.retention import Retention
from coordinator.domain.schema_change import (
    AddColumn,
    DropColumn,
    Move,
    RenameColumn,
    SchemaChange,
    UpdateColumnNullability,
    UpdateColumnType,
)
from coordinator.domain.type_widening import widens
from coordinator.errors import InvalidRequest
from paimon_format.schema import SchemaField, TableSchema, TypeJson
from paimon_format.types import DataType, parse_type

FIXED_OPTIONS = frozenset(
    {"bucket", "bucket-key", "primary-key", "partition", "merge-engine", "sequence.field", "path"}
)
"""Options that decide where rows and files are: changing them would orphan what is written."""

_NAME_LISTS = ("bucket-key", "sequence.field")
"""Options whose value lists column names: a rename follows into them, a drop is refused."""
_FIELD_OPTION_PREFIX = "fields."
_ADD_BEFORE_PARTITION = "add-column-before-partition"


def evolve_schema(schema: TableSchema, changes: Sequence[SchemaChange], *, now_millis: int) -> TableSchema:
    """The next schema: `changes` applied in order to `schema` (id + 1, new highestFieldId and time).

    Raises:
        InvalidRequest: the first change Paimon's rules (as narrowed above) refuse, named by its field.
    """
    draft = _Draft.of(schema)
    touched: dict[str, str] = {}  # option key -> field of the last change that set or removed it
    for i, change in enumerate(changes):
        at = f"changes[{i}]"
        if change.action == "setOption" or change.action == "removeOption":
            if change.key in FIXED_OPTIONS:
                raise _refused(at, "key", f"option {change.key!r} cannot be changed on an existing table")
            if change.action == "setOption":
                draft.options[change.key] = change.value
                touched[change.key] = f"{at}.value"
            else:
                draft.options.pop(change.key, None)
                touched[change.key] = f"{at}.key"
        elif change.action == "updateComment":
            draft.comment = change.comment
        else:
            _apply(draft, change, at)
    try:
        Retention.of(draft.options)
    except ValueError as error:
        named = next((key for key in touched if key in str(error)), None)
        raise InvalidRequest(str(error), field=touched[named] if named else "changes") from None
    return dataclasses.replace(
        schema,
        id=schema.id + 1,
        fields=tuple(draft.fields),
        highest_field_id=draft.highest_field_id,
        primary_keys=tuple(draft.primary_keys),
        options=draft.options,
        comment=draft.comment,
        time_millis=now_millis,
    )


@dataclass
class _Draft:
    """The schema being changed: what the changes so far made of it."""

    fields: list[SchemaField]
    highest_field_id: int
    partition_keys: tuple[str, ...]
    primary_keys: list[str]
    options: dict[str, str]
    comment: str | None

    @classmethod
    def of(cls, schema: TableSchema) -> _Draft:
        return cls(
            list(schema.fields),
            schema.highest_field_id,
            schema.partition_keys,
            list(schema.primary_keys),
            dict(schema.options),
            schema.comment,
        )

    def index(self, name: str) -> int | None:
        return next((i for i, f in enumerate(self.fields) if f.name == name), None)

    def column(self, path: Sequence[str], at: str) -> int:
        """Where the column `path` names is; refuses nested paths and columns the table has not."""
        name = _top_level(path, at)
        index = self.index(name)
        if index is None:
            raise _refused(at, "fieldNames", f"the table has no column {name!r}")
        return index

    def names_in(self, key: str) -> list[str]:
        return [n.strip() for n in self.options.get(key, "").split(",") if n.strip()]


def _add_column(draft: _Draft, change: AddColumn, at: str) -> None:
    name = _top_level(change.field_names, at)
    if draft.index(name) is not None:
        raise _refused(at, "fieldNames", f"the table already has a column {name!r}")
    data_type = _atomic(change.data_type, at, "dataType")
    if not data_type.nullable:
        raise _refused(
            at,
            "dataType",
            f"a new column must be nullable: files written before it have no value for {name!r}",
        )
    draft.highest_field_id += 1
    field = SchemaField(draft.highest_field_id, name, str(data_type), change.comment)
    if change.move is not None:
        if change.move.field_name != name:
            raise _refused(at, "move.fieldName", f"the move of a new column names it ({name!r})")
        draft.fields.append(field)
        _move(draft, change.move, at)
        return
    first_partition = next((i for i, f in enumerate(draft.fields) if f.name in draft.partition_keys), None)
    before_partition = draft.options.get(_ADD_BEFORE_PARTITION, "false").lower() == "true"
    if before_partition and first_partition is not None:
        draft.fields.insert(first_partition, field)
    else:
        draft.fields.append(field)


def _rename_column(draft: _Draft, change: RenameColumn, at: str) -> None:
    index = draft.column(change.field_names, at)
    old, new = draft.fields[index].name, change.new_name
    if old in draft.partition_keys:
        raise _refused(at, "fieldNames", f"{old!r} is a partition column: it cannot be renamed")
    if old == new:
        return
    if draft.index(new) is not None:
        raise _refused(at, "newName", f"the table already has a column {new!r}")
    draft.fields[index] = dataclasses.replace(draft.fields[index], name=new)
    draft.primary_keys = [new if k == old else k for k in draft.primary_keys]
    draft.options = _options_renamed(draft.options, old, new)


def _drop_column(draft: _Draft, change: DropColumn, at: str) -> None:
    index = draft.column(change.field_names, at)
    name = draft.fields[index].name
    if name in draft.partition_keys or name in draft.primary_keys:
        raise _refused(
            at, "fieldNames", f"{name!r} is a partition or primary-key column: it cannot be dropped"
        )
    for key in _NAME_LISTS:
        if name in draft.names_in(key):
            raise _refused(at, "fieldNames", f"{name!r} is named by the option {key!r}: it cannot be dropped")
    if len(draft.fields) == 1:
        raise _refused(at, "fieldNames", f"{name!r} is the only column: a table keeps at least one")
    del draft.fields[index]


def _update_column_type(draft: _Draft, change: UpdateColumnType, at: str) -> None:
    index = draft.column(change.field_names, at)
    field = draft.fields[index]
    if field.name in draft.partition_keys or field.name in draft.primary_keys:
        raise _refused(
            at, "fieldNames", f"{field.name!r} is a partition or primary-key column: its type cannot change"
        )
    old = _atomic(field.type, at, "fieldNames")
    new = _atomic(change.new_data_type, at, "newDataType")
    if change.keep_nullability:
        new = new.with_nullable(old.nullable)
    elif old.nullable and not new.nullable:
        raise _refused(at, "newDataType", f"{field.name!r} cannot become NOT NULL: files may hold nulls")
    if not widens(old.with_nullable(True), new.with_nullable(True)):
        raise _refused(
            at,
            "newDataType",
            f"{field.name!r} cannot change from {old} to {new}: only widening every reader applies to old "
            "files without loss is allowed (TINYINT < SMALLINT < INT < BIGINT, FLOAT to DOUBLE, DECIMAL to "
            "a larger precision with the same scale, CHAR/VARCHAR to a longer VARCHAR or STRING)",
        )
    draft.fields[index] = dataclasses.replace(field, type=str(new))


def _update_column_nullability(draft: _Draft, change: UpdateColumnNullability, at: str) -> None:
    index = draft.column(change.field_names, at)
    field = draft.fields[index]
    old = _atomic(field.type, at, "fieldNames")
    if change.new_nullability and field.name in draft.primary_keys:
        raise _refused(at, "newNullability", f"{field.name!r} is a primary-key column: it stays NOT NULL")
    if not change.new_nullability and old.nullable:
        raise _refused(at, "newNullability", f"{field.name!r} cannot become NOT NULL: files may hold nulls")
    draft.fields[index] = dataclasses.replace(field, type=str(old.with_nullable(change.new_nullability)))


def _move(draft: _Draft, move: Move, at: str) -> None:
    index = draft.index(move.field_name)
    if index is None:
        raise _refused(at, "move.fieldName", f"the table has no column {move.field_name!r}")
    field = draft.fields.pop(index)
    if move.type == "FIRST":
        draft.fields.insert(0, field)
    elif move.type == "LAST":
        draft.fields.append(field)
    else:
        reference = move.reference_field_name
        if reference == move.field_name:
            raise _refused(at, "move.referenceFieldName", f"{reference!r} cannot move relative to itself")
        target = draft.index(reference or "")
        if target is None:
            raise _refused(at, "move.referenceFieldName", f"the table has no column {reference!r}")
        draft.fields.insert(target + 1 if move.type == "AFTER" else target, field)


def _apply(draft: _Draft, change: SchemaChange, at: str) -> None:
    """One column change to the draft (option and comment changes are applied by the caller)."""
    if change.action == "addColumn":
        _add_column(draft, change, at)
    elif change.action == "renameColumn":
        _rename_column(draft, change, at)
    elif change.action == "dropColumn":
        _drop_column(draft, change, at)
    elif change.action == "updateColumnComment":
        index = draft.column(change.field_names, at)
        draft.fields[index] = dataclasses.replace(draft.fields[index], description=change.new_comment)
    elif change.action == "updateColumnType":
        _update_column_type(draft, change, at)
    elif change.action == "updateColumnNullability":
        _update_column_nullability(draft, change, at)
    elif change.action == "updateColumnPosition":
        _move(draft, change.move, at)


def _options_renamed(options: dict[str, str], old: str, new: str) -> dict[str, str]:
    """The options with column `old` called `new` where they name it (as Paimon rewrites them)."""

    def renamed(names: str) -> str:
        return ",".join(new if n.strip() == old else n for n in names.split(","))

    out: dict[str, str] = {}
    for key, value in options.items():
        if key in _NAME_LISTS:
            value = renamed(value)
        elif key.startswith(_FIELD_OPTION_PREFIX):
            # fields.<name>.<suffix>, fields.<a,b>.sequence-group = <c,d>: names in the key and the value
            names, dot, suffix = key[len(_FIELD_OPTION_PREFIX) :].rpartition(".")
            if dot:
                key = f"{_FIELD_OPTION_PREFIX}{renamed(names)}.{suffix}"
                if suffix in ("sequence-group", "nested-key"):
                    value = renamed(value)
        out[key] = value
    return out


def _top_level(path: Sequence[str], at: str) -> str:
    if len(path) > 1:
        raise _refused(
            at, "fieldNames", f"nested column {'.'.join(path)!r}: only top-level columns can change"
        )
    return path[0]


def _atomic(type_json: TypeJson, at: str, where: str) -> DataType:
    if not isinstance(type_json, str):
        raise _refused(at, where, "nested types (ROW, ARRAY, MAP, MULTISET) are not supported")
    try:
        return parse_type(type_json)
    except ValueError as error:
        raise _refused(at, where, str(error)) from None


def _refused(at: str, where: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"{at}: {message}", field=f"{at}.{where}")
