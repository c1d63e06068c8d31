"""Schema changes (Paimon's SchemaChange JSON) and the AlterTableRequest that carries them.

The JSON is Paimon's own, as pypaimon 2.1.0 and Java Paimon send it in the REST catalog's alterTable
(`{"changes": [...]}`, each change tagged by `action`), so the native API and the REST catalog parse one
model. Types travel as Paimon's type JSON: a string for atomic types ("BIGINT", "INT NOT NULL"), an
object for nested ones (accepted here, refused by the rules with the change named).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue, model_validator

from coordinator_client.models._base import NAME_PATTERN, NO_NUL_PATTERN, _Request

MAX_CHANGES = 1000
MAX_COLUMN_NAME = 255
MAX_TEXT = 65_536

ColumnName = Annotated[str, Field(min_length=1, max_length=MAX_COLUMN_NAME, pattern=NO_NUL_PATTERN)]
"""A column the table has: any name Paimon allows (a registered table may have any)."""
NewColumnName = Annotated[str, Field(pattern=NAME_PATTERN)]
"""A column this change names anew: the names a table created here may have."""
FieldPath = Annotated[list[ColumnName], Field(min_length=1, max_length=16)]
"""Paimon's fieldNames: the column, then the nested fields down to the one changed."""
NewFieldPath = Annotated[list[NewColumnName], Field(min_length=1, max_length=16)]
TypeJson = Annotated[str, Field(min_length=1, max_length=200)] | dict[str, JsonValue]
Comment = Annotated[str, Field(max_length=MAX_TEXT, pattern=NO_NUL_PATTERN)]
OptionKey = Annotated[str, Field(min_length=1, max_length=256, pattern=NO_NUL_PATTERN)]
OptionValue = Annotated[str, Field(max_length=MAX_TEXT, pattern=NO_NUL_PATTERN)]


class Move(_Request):
    """Where a column goes: FIRST, LAST, or AFTER / BEFORE `referenceFieldName`."""

    field_name: ColumnName
    reference_field_name: ColumnName | None = None
    type: Literal["FIRST", "AFTER", "BEFORE", "LAST"]

    @model_validator(mode="after")
    def _reference_when_relative(self) -> Move:
        if self.type in ("AFTER", "BEFORE") and self.reference_field_name is None:
            raise ValueError(f"a move {self.type} needs referenceFieldName")
        return self


class SetOption(_Request):
    action: Literal["setOption"] = "setOption"
    key: OptionKey
    value: OptionValue


class RemoveOption(_Request):
    action: Literal["removeOption"] = "removeOption"
    key: OptionKey


class UpdateComment(_Request):
    """The table's comment; null removes it."""

    action: Literal["updateComment"] = "updateComment"
    comment: Comment | None = None


class AddColumn(_Request):
    """A new column (nullable: files written before it have no value for it), last unless `move` says."""

    action: Literal["addColumn"] = "addColumn"
    field_names: NewFieldPath
    data_type: TypeJson
    comment: Comment | None = None
    move: Move | None = None


class RenameColumn(_Request):
    action: Literal["renameColumn"] = "renameColumn"
    field_names: FieldPath
    new_name: NewColumnName


class DropColumn(_Request):
    action: Literal["dropColumn"] = "dropColumn"
    field_names: FieldPath


class UpdateColumnComment(_Request):
    action: Literal["updateColumnComment"] = "updateColumnComment"
    field_names: FieldPath
    new_comment: Comment | None = None


class UpdateColumnType(_Request):
    """A wider type; with `keepNullability` the column keeps its nullability whatever newDataType says."""

    action: Literal["updateColumnType"] = "updateColumnType"
    field_names: FieldPath
    new_data_type: TypeJson
    keep_nullability: bool = False


class UpdateColumnNullability(_Request):
    action: Literal["updateColumnNullability"] = "updateColumnNullability"
    field_names: FieldPath
    new_nullability: bool


class UpdateColumnPosition(_Request):
    action: Literal["updateColumnPosition"] = "updateColumnPosition"
    move: Move


SchemaChange = Annotated[
    SetOption
    | RemoveOption
    | UpdateComment
    | AddColumn
    | RenameColumn
    | DropColumn
    | UpdateColumnComment
    | UpdateColumnType
    | UpdateColumnNullability
    | UpdateColumnPosition,
    Field(discriminator="action"),
]
"""One of Paimon's schema changes, by its `action`."""


class AlterTableRequest(_Request):
    """Paimon's alterTable body: changes applied in order, all of them or none (one next schema)."""

    changes: list[SchemaChange] = Field(min_length=1, max_length=MAX_CHANGES)
