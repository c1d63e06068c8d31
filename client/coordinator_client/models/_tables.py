"""Tables: create (or register), list, get."""

from __future__ import annotations

from pydantic import Field

from coordinator_client.models._base import NAME_PATTERN, Text, _Model, _Request


class FieldSpec(_Request):
    name: str = Field(pattern=NAME_PATTERN)
    type: str = Field(min_length=1, max_length=200, description="Paimon type string, e.g. DECIMAL(10, 2)")
    description: Text | None = None


class CreateTableRequest(_Request):
    """Create a table, or register an existing Paimon table when `location` is given instead of fields."""

    database: str = Field(pattern=NAME_PATTERN)
    name: str = Field(pattern=NAME_PATTERN)
    fields: list[FieldSpec] | None = None
    partition_keys: list[Text] = Field(default_factory=list)
    primary_keys: list[Text] = Field(default_factory=list)
    options: dict[Text, Text] = Field(default_factory=dict)
    comment: Text | None = None
    location: Text | None = None


class SchemaFieldModel(_Model):
    id: int
    name: str
    type: str
    description: str | None = None


class SchemaModel(_Model):
    id: int
    fields: list[SchemaFieldModel]
    partition_keys: list[str]
    primary_keys: list[str]
    options: dict[str, str]
    comment: str | None = None


class TableResponse(_Model):
    """A table and its size at the latest snapshot, as the coordinator recorded it at that commit."""

    id: str
    database: str
    name: str
    uuid: str
    location: str
    schema_: SchemaModel = Field(alias="schema")
    latest_snapshot_id: int | None = None
    total_record_count: int | None = Field(
        default=None, description="the latest snapshot's totalRecordCount; null while not known"
    )
    file_count: int | None = Field(
        default=None, description="live data files at the latest snapshot; null while not known"
    )
    file_bytes: int | None = Field(default=None, description="their total size; null while not known")
    last_commit_at: float | None = Field(
        default=None, description="epoch seconds of the latest commit that moved the table's head"
    )


class TableListResponse(_Model):
    """One page of tables in (database, name) order."""

    tables: list[TableResponse]
    next_page_token: str | None = Field(
        default=None, description="pass as page_token for the next page; null on the last page"
    )
