"""The bodies of Paimon's REST catalog protocol, as pypaimon 2.1.0, pypaimon-rust 0.4.0 and Paimon's Java
client send and read them (`docs/static/rest-catalog-open-api.yaml` in apache/paimon, corrected where the
clients disagree with it: `expiresAtMillis`, int64 `commitIdentifier`).

Requests ignore keys they do not know, unlike the native API's: the clients, not this service, define
the protocol, and a newer client adding a key must not be refused. Snapshots travel as JSON objects and
are kept as sent (unknown keys, int64 identifiers), never re-rendered.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from coordinator_client.models import INT64_MAX

ResourceType = Literal[
    "DATABASE", "TABLE", "PARTITION", "COLUMN", "SNAPSHOT", "BRANCH", "TAG", "VIEW", "DIALECT", "FUNCTION",
    "DEFINITION", "UNKNOWN",
]  # fmt: skip


Text = Annotated[str, Field(pattern=r"^[^\x00]*$")]
"""A string of a request: PostgreSQL stores no NUL in text or JSONB (a NUL reaching it was a 500)."""


class _Body(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class RestErrorResponse(_Body):
    """Paimon's ErrorResponse; `code` is the HTTP status, which the clients read from the body."""

    message: str
    resource_type: ResourceType | None = None
    resource_name: str | None = None
    code: int


class ConfigResponse(_Body):
    defaults: dict[str, str]
    overrides: dict[str, str]


class CreateDatabaseRequest(_Body):
    name: Text
    options: dict[Text, Text] | None = None


class AlterDatabaseRequest(_Body):
    removals: list[Text] = Field(default_factory=list)
    updates: dict[Text, Text] = Field(default_factory=dict)


class AlterDatabaseResponse(_Body):
    removed: list[str]
    updated: list[str]
    missing: list[str]


class ListDatabasesResponse(_Body):
    databases: list[str]
    next_page_token: str | None = None


class ListViewsResponse(_Body):
    views: list[str]
    next_page_token: str | None = None


OWNER = "paimon-coordinator"
"""`owner` of every database and table: the coordinator keeps none of its own, and Paimon's Java catalog
copies `owner` into the table's options as it is (`putAuditOptionsTo`); Flink refuses a table whose
options hold a null (DataCatalogTable: "properties cannot have null keys or values"), so it is never
null."""


class _Audited(_Body):
    owner: str = OWNER
    created_at: int | None = Field(default=None, description="epoch milliseconds")
    created_by: str | None = None
    updated_at: int | None = Field(default=None, description="epoch milliseconds")
    updated_by: str | None = None


class GetDatabaseResponse(_Audited):
    id: str
    name: str
    location: str
    options: dict[str, str]


class Identifier(_Body):
    database: Text
    object: Text


class DataField(_Body):
    id: int | None = None
    name: Text
    type: Text | dict[str, object] = Field(description="a Paimon type string; nested types are objects")
    description: Text | None = None


class RestSchema(_Body):
    fields: list[DataField]
    partition_keys: list[Text] = Field(default_factory=list)
    primary_keys: list[Text] = Field(default_factory=list)
    options: dict[Text, Text] = Field(default_factory=dict)
    comment: Text | None = None


class CreateTableRequest(_Body):
    identifier: Identifier
    schema_: RestSchema = Field(alias="schema")


class ListTablesResponse(_Body):
    tables: list[str]
    next_page_token: str | None = None


class GetTableResponse(_Audited):
    id: str = Field(description="the table's uuid, new for a table dropped and created again")
    name: str
    path: str = Field(description="the table's location with its scheme")
    is_external: bool = Field(description="always false: every commit goes through the coordinator")
    schema_id: int
    schema_: RestSchema = Field(alias="schema")


SnapshotJson = dict[str, object]
"""A Paimon snapshot as its JSON object, exactly as recorded."""


class TableSnapshot(_Body):
    snapshot: SnapshotJson
    record_count: int
    file_size_in_bytes: int
    file_count: int
    last_file_creation_time: int


class GetTableSnapshotResponse(_Body):
    snapshot: TableSnapshot


class GetVersionSnapshotResponse(_Body):
    snapshot: SnapshotJson


class ListSnapshotsResponse(_Body):
    snapshots: list[SnapshotJson]
    next_page_token: str | None = None


class CommitTableRequest(_Body):
    table_id: Text = Field(min_length=1, max_length=64, description="the table's uuid (GetTableResponse.id)")
    base_snapshot_uuid: Text | None = Field(default=None, max_length=64)
    snapshot: SnapshotJson
    statistics: list[dict[str, object]] = Field(default_factory=list)


class CommitTableResponse(_Body):
    success: bool


class SnapshotInstant(_Body):
    type: Literal["snapshot"]
    snapshot_id: int = Field(ge=1, le=INT64_MAX)


class TagInstant(_Body):
    type: Literal["tag"]
    tag_name: Text = Field(min_length=1)


class RollbackTableRequest(_Body):
    instant: Annotated[SnapshotInstant | TagInstant, Field(discriminator="type")]
    from_snapshot: int | None = Field(default=None, ge=1, le=INT64_MAX)


class GetTableTokenResponse(_Body):
    token: dict[str, str]
    expires_at_millis: int


class CreateTagRequest(_Body):
    tag_name: Text = Field(min_length=1)
    snapshot_id: int | None = Field(default=None, ge=1, le=INT64_MAX)
    time_retained: Text | None = None
    ignore_if_exists: bool = False


class GetTagResponse(_Body):
    tag_name: str
    snapshot: SnapshotJson
    tag_create_time: int | None = None
    tag_time_retained: str | None = None


class ListTagsResponse(_Body):
    tags: list[str]
    next_page_token: str | None = None


class MarkDonePartitionsRequest(_Body):
    """markDonePartitions: the partition specs (column name to partition value text) a writer finished."""

    specs: list[dict[str, str]] = Field(min_length=1, max_length=1000)
