"""Wire models of the coordinator's API v1: the contract between the service and its clients.

JSON keys are camelCase like Paimon's own JSON. Requests forbid unknown keys so a typo is a 422 that names
the key, not a silently ignored option. Partition values and keys travel as JSON values typed by the table
schema; the service turns them into canonical BinaryRow bytes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
BATCH_IDENTIFIER = INT64_MAX
"""commitIdentifier of a batch commit (Paimon's Long.MAX_VALUE)."""

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_\-]{0,127}$"
FILE_NAME_PATTERN = r"^[A-Za-z0-9_\-][A-Za-z0-9_\-.]{0,254}$"


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class _Request(_Model):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid")


# ---------------------------------------------------------------- tables


class FieldSpec(_Request):
    name: str = Field(pattern=NAME_PATTERN)
    type: str = Field(min_length=1, max_length=200, description="Paimon type string, e.g. DECIMAL(10, 2)")
    description: str | None = None


class CreateTableRequest(_Request):
    """Create a table, or register an existing Paimon table when `location` is given instead of fields."""

    database: str = Field(pattern=NAME_PATTERN)
    name: str = Field(pattern=NAME_PATTERN)
    fields: list[FieldSpec] | None = None
    partition_keys: list[str] = Field(default_factory=list)
    primary_keys: list[str] = Field(default_factory=list)
    options: dict[str, str] = Field(default_factory=dict)
    comment: str | None = None
    location: str | None = None


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
    id: str
    database: str
    name: str
    uuid: str
    location: str
    schema_: SchemaModel = Field(alias="schema")
    latest_snapshot_id: int | None = None


class TableListResponse(_Model):
    tables: list[TableResponse]


# ---------------------------------------------------------------- commits


class KeyStatsModel(_Request):
    """Min/max/null counts over the trimmed primary key fields of one data file."""

    min_values: list[JsonValue]
    max_values: list[JsonValue]
    null_counts: list[int | None]


class DataFileModel(_Request):
    """One data file (Paimon's DataFileMeta) as the writer describes it."""

    file_name: str = Field(pattern=FILE_NAME_PATTERN)
    file_size: int = Field(ge=0)
    row_count: int = Field(ge=0)
    min_key: list[JsonValue] = Field(default_factory=list)
    max_key: list[JsonValue] = Field(default_factory=list)
    key_stats: KeyStatsModel | None = None
    min_sequence_number: int = Field(default=0, ge=0, le=INT64_MAX)
    max_sequence_number: int = Field(default=0, ge=0, le=INT64_MAX)
    level: int = Field(default=0, ge=0, le=1000)
    schema_id: int = Field(default=0, ge=0)
    delete_row_count: int = Field(default=0, ge=0)
    extra_files: list[str] = Field(default_factory=list)
    creation_time: int | None = Field(
        default=None, description="local wall-clock millis, as Paimon stores it"
    )
    file_source: Literal[0, 1] | None = None


class CommitMessageModel(_Request):
    """The changes of one (partition, bucket): Paimon's CommitMessage."""

    partition: dict[str, JsonValue] = Field(default_factory=dict)
    bucket: int = Field(ge=0, le=INT32_MAX)
    total_buckets: int | None = Field(default=None, ge=-1, le=INT32_MAX)
    new_files: list[DataFileModel] = Field(default_factory=list)
    deleted_files: list[DataFileModel] = Field(default_factory=list)
    changelog_files: list[DataFileModel] = Field(default_factory=list)
    compact_before: list[DataFileModel] = Field(default_factory=list)
    compact_after: list[DataFileModel] = Field(default_factory=list)
    compact_changelog_files: list[DataFileModel] = Field(default_factory=list)


class OverwriteSpec(_Request):
    """dynamic: the partitions of the new files; static: one partition; table: the whole table."""

    mode: Literal["dynamic", "static", "table"]
    partition: dict[str, JsonValue] | None = None


class CommitRequest(_Request):
    """A ManifestCommittable: the unit the coordinator commits atomically (at most two snapshots)."""

    commit_user: str = Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$")
    identifier: int = Field(default=BATCH_IDENTIFIER, ge=-(2**63), le=INT64_MAX)
    watermark: int | None = Field(default=None, ge=-(2**63), le=INT64_MAX)
    properties: dict[str, str] = Field(default_factory=dict)
    overwrite: OverwriteSpec | None = None
    base_snapshot_id: int | None = Field(
        default=None, ge=0, description="strict mode: reject if the table moved past this snapshot"
    )
    messages: list[CommitMessageModel] = Field(default_factory=list)


CommitKind = Literal["APPEND", "COMPACT", "OVERWRITE", "ANALYZE"]
"""What a snapshot's commit did: Paimon's Snapshot.CommitKind (format.snapshot.CommitKind, as a string)."""


class SnapshotRef(_Model):
    id: int
    commit_kind: CommitKind


class CommitResponse(_Model):
    snapshots: list[SnapshotRef]
    deduplicated: bool = False
    timings: dict[str, float] = Field(default_factory=dict, description="milliseconds per phase")
    group_size: int = Field(
        1,
        ge=1,
        description="commits decided in one lock hold and commit point with this one (group commit), "
        "itself included",
    )


class WinningSnapshot(_Model):
    id: int
    commit_user: str
    commit_kind: CommitKind


ConflictType = Literal[
    "BASE_SNAPSHOT_MOVED",
    "BUCKET_COUNT_CHANGED",
    "DELETED_FILE_MISSING",
    "DUPLICATE_FILE",
    "LATEST_SNAPSHOT_MOVED",
    "LOCK_LOST",
    "LSM_KEY_RANGE_OVERLAP",
    "TABLE_CHANGED",
]
"""Why a commit was rejected. The first five are Paimon's conflict checks (the matrix in the service's
domain/conflicts.py); the others happen at the commit point: another commit moved the table while this
one held the lock (LATEST_SNAPSHOT_MOVED), the lock's lease ran out (LOCK_LOST), or the table was dropped,
re-created or changed under the commit (TABLE_CHANGED)."""


class ConflictModel(_Model):
    type: ConflictType
    message: str
    partition: dict[str, JsonValue] | None = None
    bucket: int | None = None
    files: list[str] = Field(default_factory=list)
    winning_snapshot: WinningSnapshot | None = None
    retryable: bool = False


ErrorCode = Literal[
    "COMMIT_CONFLICT",
    "COMMIT_NOT_FOUND",
    "CONSUMER_NOT_FOUND",
    "FORBIDDEN",
    "INTERNAL",
    "INVALID_REQUEST",
    "LOCK_UNAVAILABLE",
    "METASTORE_UNAVAILABLE",
    "PAYLOAD_TOO_LARGE",
    "SNAPSHOT_NOT_FOUND",
    "TABLE_ALREADY_EXISTS",
    "TABLE_NOT_FOUND",
    "TAG_ALREADY_EXISTS",
    "TAG_NOT_FOUND",
    "UNAUTHENTICATED",
]
"""The `code` of an ErrorResponse: one per error class of the service (coordinator.errors)."""


class ErrorResponse(_Model):
    """Every 4xx/5xx body: a stable code, a message, the offending field and, on 409, the conflict."""

    code: ErrorCode
    message: str
    field: str | None = None
    conflict: ConflictModel | None = None


CommitStatus = Literal["committed", "rejected", "unknown"]


class CommitOutcomeResponse(_Model):
    """What became of one commitUser + identifier; `unknown` means the service never received it."""

    commit_user: str
    identifier: int
    status: CommitStatus
    snapshots: list[SnapshotRef] = Field(default_factory=list)
    conflict: ConflictModel | None = None


class CommitRecordModel(_Model):
    """A commit attempt, or a maintenance action (outcome "done"; commitUser is who asked for it)."""

    id: int
    commit_user: str
    identifier: int
    outcome: Literal["committed", "rejected", "done"]
    snapshots: list[SnapshotRef]
    timings: dict[str, float]
    conflict: ConflictModel | None = None
    created_at: float = Field(description="epoch seconds")
    action: str = Field(
        default="commit",
        description="commit, expire, rollback, create-tag, delete-tag, set-consumer, delete-consumer, "
        "clean-orphans or set-options",
    )
    details: dict[str, Any] | None = Field(default=None, description="what a maintenance action changed")
    table_id: str | None = None


class CommitHistoryResponse(_Model):
    commits: list[CommitRecordModel]


# ---------------------------------------------------------------- reads


class SnapshotModel(_Model):
    id: int
    schema_id: int
    commit_user: str
    commit_identifier: int
    commit_kind: CommitKind
    time_millis: int
    total_record_count: int
    delta_record_count: int
    base_manifest_list: str
    delta_manifest_list: str
    watermark: int | None = None


class SnapshotListResponse(_Model):
    snapshots: list[SnapshotModel]


class LiveFileModel(_Model):
    partition: dict[str, JsonValue]
    bucket: int
    total_buckets: int
    path: str
    file_name: str
    file_size: int
    row_count: int
    level: int
    min_key: list[JsonValue]
    max_key: list[JsonValue]
    min_sequence_number: int
    max_sequence_number: int
    delete_row_count: int | None = None
    key_stats: KeyStatsModel | None = None
    schema_id: int = 0
    extra_files: list[str] = Field(default_factory=list)
    creation_time: int | None = None
    file_source: Literal[0, 1] | None = None

    def to_data_file(self) -> DataFileModel:
        """This file as a commit names it, e.g. in ``compactBefore`` or ``deletedFiles``."""
        return DataFileModel(
            file_name=self.file_name,
            file_size=self.file_size,
            row_count=self.row_count,
            min_key=self.min_key,
            max_key=self.max_key,
            key_stats=self.key_stats,
            min_sequence_number=self.min_sequence_number,
            max_sequence_number=self.max_sequence_number,
            level=self.level,
            schema_id=self.schema_id,
            delete_row_count=self.delete_row_count or 0,
            extra_files=self.extra_files,
            creation_time=self.creation_time,
            file_source=self.file_source,
        )


class FileListResponse(_Model):
    snapshot_id: int | None
    files: list[LiveFileModel]


class LockWaiterModel(_Model):
    """A commit of this service instance waiting in line for a table's lock."""

    table_id: str
    commit_user: str
    identifier: int
    waiting_ms: float


class LockModel(_Model):
    lock_id: str
    table_id: str | None = Field(default=None, description="the table a `table:` lock guards")
    owner: str
    epoch: int
    acquired_at: float = Field(description="epoch seconds, lock backend clock")
    expires_at: float = Field(description="epoch seconds, lock backend clock")
    waiters: list[LockWaiterModel] = Field(
        default_factory=list, description="commits of this instance queued behind the holder"
    )


class LockListResponse(_Model):
    now: float = Field(description="epoch seconds on the lock backend's clock, for ages and time to expiry")
    locks: list[LockModel]


class ReleaseLockResponse(_Model):
    """What a forced release took away: the holder and its epoch; the next holder's epoch is larger."""

    lock_id: str
    released: bool
    owner: str | None = None
    epoch: int | None = None


class InFlightCommitModel(_Model):
    """A commit this service instance is working on, and the phase it is in."""

    table_id: str
    commit_user: str
    identifier: int
    phase: str = Field(
        description="lockWait, reconcile, conflictCheck, manifestWrite, commitPoint or publish"
    )
    started_at: float = Field(description="epoch seconds")
    elapsed_ms: float
    timings: dict[str, float] = Field(description="phases finished so far (ms)")


class CommitsOverviewResponse(_Model):
    in_flight: list[InFlightCommitModel]
    recent: list[CommitRecordModel] = Field(description="newest first, all tables")


class AuditEntryModel(_Model):
    """An administrative action outside any table's history: a forced lock release, a token change."""

    id: int
    at: float = Field(description="epoch seconds")
    actor: str
    action: str
    target: str
    details: dict[str, Any] | None = None


class AuditListResponse(_Model):
    entries: list[AuditEntryModel] = Field(description="newest first")


class TableStatsModel(_Model):
    """Per-table counters for dashboards: the latest snapshot's size and the commit outcomes so far."""

    table_id: str
    latest_snapshot_id: int
    total_record_count: int
    file_count: int = Field(description="live data files at the latest snapshot")
    file_bytes: int = Field(description="their total size")
    committed: int
    rejected: int
    conflicts: dict[str, int] = Field(description="rejections by conflict type")
    last_commit_at: float | None = Field(default=None, description="epoch seconds")


class MinuteCountModel(_Model):
    minute: float = Field(description="start of the minute, epoch seconds")
    committed: int
    rejected: int


class PhaseLatencyModel(_Model):
    count: int
    p50: float
    p95: float
    max: float


class ConflictEventModel(_Model):
    table_id: str
    commit_user: str
    identifier: int
    type: str
    message: str
    at: float = Field(description="epoch seconds")


class OverviewResponse(_Model):
    """What the dashboard shows, over the last `windowMinutes` of commits."""

    now: float = Field(description="epoch seconds")
    window_minutes: int
    tables: list[TableStatsModel]
    commits_per_minute: list[MinuteCountModel] = Field(description="oldest first, one entry per minute")
    phase_latency_ms: dict[str, PhaseLatencyModel] = Field(description="committed commits, by phase")
    conflicts: list[ConflictEventModel] = Field(description="the latest rejections, newest first")


class HealthResponse(_Model):
    status: Literal["ok"]
    database: str
    warehouse: str


# ---------------------------------------------------------------- maintenance

REF_NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}$"
"""Tag names and consumer ids: they become file names (tag-<name>, consumer-<id>)."""


class SetOptionsRequest(_Request):
    """PATCH /tables/{id}/options: options to set and option keys to remove (a new schema version)."""

    set: dict[str, str] = Field(default_factory=dict)
    remove: list[str] = Field(default_factory=list)


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
    snapshot_id: int | None = Field(default=None, ge=1, description="the latest snapshot when absent")


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

    snapshot_id: int | None = Field(default=None, ge=1)
    tag: str | None = Field(default=None, pattern=REF_NAME_PATTERN)


class RollbackResponse(_Model):
    latest_snapshot_id: int
    removed_snapshots: list[int]
    removed_tags: list[str]
    deleted: DeletedFiles


class SetConsumerRequest(_Request):
    next_snapshot_id: int = Field(ge=1)


class ConsumerModel(_Model):
    consumer_id: str
    next_snapshot_id: int
    modified_at: float = Field(description="epoch seconds of the last update; idle consumers expire")


class ConsumerListResponse(_Model):
    consumers: list[ConsumerModel]


class CleanOrphansRequest(_Request):
    older_than_seconds: float = Field(default=86_400.0, ge=0)
    dry_run: bool = False


class CleanOrphansResponse(_Model):
    dry_run: bool
    files: list[str] = Field(description="paths relative to the table folder, deleted (or, dry, to delete)")
