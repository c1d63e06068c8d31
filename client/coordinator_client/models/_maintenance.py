"""Maintenance: table options, expiration, tags, rollback, consumers, orphan files."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from coordinator_client.models._base import REF_NAME_PATTERN, SnapshotId, Text, _Model, _Request


class SetOptionsRequest(_Request):
    """PATCH /tables/{id}/options: options to set and option keys to remove (a new schema version)."""

    set: dict[Text, Text] = Field(default_factory=dict)
    remove: list[Text] = Field(default_factory=list)


class DeletedFiles(_Model):
    """What a maintenance action removed from storage."""

    snapshots: int = 0
    data_files: int = 0
    changelog_files: int = 0
    manifests: int = 0


class ExpireResponse(_Model):
    expired_snapshots: int
    batches: int = Field(description="lock holds it took; each expires at most snapshot.expire.limit")
    earliest_snapshot_id: int | None
    latest_snapshot_id: int | None
    expired_consumers: list[str] = Field(default_factory=list)
    deleted: DeletedFiles


class CreateTagRequest(_Request):
    name: str = Field(pattern=REF_NAME_PATTERN)
    snapshot_id: SnapshotId | None = Field(default=None, description="the latest snapshot when absent")


class TagModel(_Model):
    name: str
    snapshot_id: int
    schema_id: int
    commit_time: int = Field(description="the tagged snapshot's timeMillis")
    record_count: int | None


class TagListResponse(_Model):
    tags: list[TagModel]


class DeleteTagResponse(_Model):
    name: str
    deleted: DeletedFiles


class RollbackRequest(_Request):
    """Exactly one of snapshotId and tag."""

    snapshot_id: SnapshotId | None = None
    tag: str | None = Field(default=None, pattern=REF_NAME_PATTERN)


class RollbackResponse(_Model):
    latest_snapshot_id: int
    removed_snapshots: list[int]
    removed_tags: list[str]
    deleted: DeletedFiles


class SetConsumerRequest(_Request):
    next_snapshot_id: SnapshotId


class ConsumerModel(_Model):
    consumer_id: str
    next_snapshot_id: int
    modified_at: float = Field(description="epoch seconds of the last update; idle consumers expire")


class ConsumerListResponse(_Model):
    consumers: list[ConsumerModel]


class CleanOrphansRequest(_Request):
    older_than_seconds: float = Field(default=86_400.0, ge=0, allow_inf_nan=False)
    dry_run: bool = False


class CleanOrphansResponse(_Model):
    dry_run: bool
    files: list[str] = Field(description="paths relative to the table folder, deleted (or, dry, to delete)")


class MarkPartitionsRequest(_Request):
    """Paimon's partition mark-done: whole partitions (every partition key) a writer finished."""

    partitions: list[dict[str, Any]] = Field(
        min_length=1, max_length=1000, description='e.g. [{"dt": "2024-01-01"}], values typed by the schema'
    )


class MarkPartitionsResponse(_Model):
    partitions: list[dict[str, Any]] = Field(description="the partitions marked done, as recorded")
