"""Paimon's SchemaChange as an alterTable sends it: the shapes `evolve_schema` (schema_changes.py) reads.

One Protocol per change, told apart by its `action` as in Paimon's JSON; they say which fields the rules
read and their types, nothing else. The wire's changes (coordinator_client.models, parsed from the native
API's and the REST catalog's alterTable) have these shapes, so the domain never imports the wire models.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from paimon_format.schema import TypeJson


class Move(Protocol):
    """Where a column goes: FIRST, LAST, or AFTER / BEFORE `reference_field_name`."""

    @property
    def field_name(self) -> str: ...
    @property
    def reference_field_name(self) -> str | None: ...
    @property
    def type(self) -> Literal["FIRST", "AFTER", "BEFORE", "LAST"]: ...


class SetOption(Protocol):
    @property
    def action(self) -> Literal["setOption"]: ...
    @property
    def key(self) -> str: ...
    @property
    def value(self) -> str: ...


class RemoveOption(Protocol):
    @property
    def action(self) -> Literal["removeOption"]: ...
    @property
    def key(self) -> str: ...


class UpdateComment(Protocol):
    @property
    def action(self) -> Literal["updateComment"]: ...
    @property
    def comment(self) -> str | None: ...


class AddColumn(Protocol):
    @property
    def action(self) -> Literal["addColumn"]: ...
    @property
    def field_names(self) -> Sequence[str]: ...
    @property
    def data_type(self) -> TypeJson: ...
    @property
    def comment(self) -> str | None: ...
    @property
    def move(self) -> Move | None: ...


class RenameColumn(Protocol):
    @property
    def action(self) -> Literal["renameColumn"]: ...
    @property
    def field_names(self) -> Sequence[str]: ...
    @property
    def new_name(self) -> str: ...


class DropColumn(Protocol):
    @property
    def action(self) -> Literal["dropColumn"]: ...
    @property
    def field_names(self) -> Sequence[str]: ...


class UpdateColumnComment(Protocol):
    @property
    def action(self) -> Literal["updateColumnComment"]: ...
    @property
    def field_names(self) -> Sequence[str]: ...
    @property
    def new_comment(self) -> str | None: ...


class UpdateColumnType(Protocol):
    @property
    def action(self) -> Literal["updateColumnType"]: ...
    @property
    def field_names(self) -> Sequence[str]: ...
    @property
    def new_data_type(self) -> TypeJson: ...
    @property
    def keep_nullability(self) -> bool: ...


class UpdateColumnNullability(Protocol):
    @property
    def action(self) -> Literal["updateColumnNullability"]: ...
    @property
    def field_names(self) -> Sequence[str]: ...
    @property
    def new_nullability(self) -> bool: ...


class UpdateColumnPosition(Protocol):
    @property
    def action(self) -> Literal["updateColumnPosition"]: ...
    @property
    def move(self) -> Move: ...


SchemaChange = (
    SetOption
    | RemoveOption
    | UpdateComment
    | AddColumn
    | RenameColumn
    | DropColumn
    | UpdateColumnComment
    | UpdateColumnType
    | UpdateColumnNullability
    | UpdateColumnPosition
)
"""One of Paimon's schema changes, told apart by its `action`."""
