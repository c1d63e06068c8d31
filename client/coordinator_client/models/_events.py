"""The commit event feed (GET /events): every change to a table, by cursor."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field

from coordinator_client.models._base import _Model

EventKind = Literal[
    "commit",
    "transaction",
    "rollback",
    "tag-create",
    "tag-delete",
    "expire",
    "schema-change",
    "table-create",
    "table-drop",
    "partition-mark",
]
"""What changed: a commit (or one table's part of a transaction), a maintenance action that changes
snapshots, tags or the schema, a table created or dropped, or partitions marked done."""

EVENT_KINDS: tuple[str, ...] = get_args(EventKind)


class PartitionChangeModel(_Model):
    """What a commit did to one partition."""

    partition: dict[str, Any] = Field(description="the partition's values by column, typed by the schema")
    added_files: int
    removed_files: int
    added_rows: int
    removed_rows: int


class EventModel(_Model):
    """One change to one table, written in the database transaction that made it."""

    cursor: int = Field(description="the event's place in the feed: resume with after=<cursor>")
    table_id: str
    database: str
    table: str
    table_uuid: str | None = Field(default=None, description="tells a table apart from one re-created")
    kind: EventKind
    snapshot_ids: list[int] = Field(
        description="commits: the snapshots made, in order; expire: those removed; rollback: the target; "
        "tags: the tagged snapshot"
    )
    commit_user: str | None = Field(
        default=None, description="a commit's commitUser; a maintenance action's actor"
    )
    commit_identifier: int | None = None
    partitions: list[PartitionChangeModel] = Field(default_factory=list)
    details: dict[str, Any] | None = Field(
        default=None,
        description="the kind's own record: commit kinds, a transaction's tables, what a "
        "maintenance action changed",
    )
    at: float = Field(description="when the change was recorded, epoch seconds")


class EventsResponse(_Model):
    """A page of the feed: the events after the cursor asked for, in cursor order."""

    events: list[EventModel]
    next_cursor: int = Field(description="the cursor to ask after next: the last event's, else the one asked")


class FeedConsumerModel(_Model):
    """A named consumer of the feed (GET /events?consumer=<name>) and how far behind it is."""

    name: str
    cursor: int = Field(description="the last cursor delivered to it")
    table: str | None = Field(default=None, description="the table filter it reads with")
    database: str | None = Field(default=None, description="the database filter it reads with")
    kind: EventKind | None = Field(default=None, description="the kind filter it reads with")
    lag_events: int = Field(description="events after its cursor that its filter matches")
    lag_seconds: float = Field(description="age of the oldest of those events; 0 when none waits")
    last_seen_at: float = Field(description="when it last read, epoch seconds")


class FeedConsumersResponse(_Model):
    """GET /ops/consumers: every named consumer of the feed, by name."""

    consumers: list[FeedConsumerModel]
    now: float = Field(description="the service's clock, epoch seconds")


class EventHeadResponse(_Model):
    """GET /events/head: where to start to be sent only the events still to come."""

    cursor: int = Field(description="the newest cursor the filter matches: ask after it")
