"""Commits: the ManifestCommittable a writer sends, the answer, conflicts, outcomes and history."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue

from coordinator_client.models._base import (
    COMMIT_USER_PATTERN,
    FILE_NAME_PATTERN,
    INT32_MAX,
    INT64_MAX,
    INT64_MIN,
    Count,
    Int64,
    Text,
    _Model,
    _Request,
)
from paimon_format.snapshot import BATCH_IDENTIFIER


class KeyStatsModel(_Request):
    """Min/max/null counts over the trimmed primary key fields of one data file."""

    min_values: list[JsonValue]
    max_values: list[JsonValue]
    null_counts: list[Count | None]


class DataFileModel(_Request):
    """One data file (Paimon's DataFileMeta) as the writer describes it."""

    file_name: str = Field(pattern=FILE_NAME_PATTERN)
    file_size: int = Field(ge=0, le=INT64_MAX)
    row_count: int = Field(ge=0, le=INT64_MAX)
    min_key: list[JsonValue] = Field(default_factory=list)
    max_key: list[JsonValue] = Field(default_factory=list)
    key_stats: KeyStatsModel | None = None
    min_sequence_number: int = Field(default=0, ge=0, le=INT64_MAX)
    max_sequence_number: int = Field(default=0, ge=0, le=INT64_MAX)
    level: int = Field(default=0, ge=0, le=1000)
    schema_id: int | None = Field(
        default=None,
        ge=0,
        le=INT64_MAX,
        description="the schema the file was written with; absent: the table's current schema",
    )
    delete_row_count: int = Field(default=0, ge=0, le=INT64_MAX)
    extra_files: list[Annotated[str, Field(pattern=FILE_NAME_PATTERN)]] = Field(
        default_factory=list, description="bare names of files beside this one (its index files)"
    )
    creation_time: int | None = Field(
        default=None, ge=INT64_MIN, le=INT64_MAX, description="local wall-clock millis, as Paimon stores it"
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


class _TableChanges(_Request):
    """What a commit changes in one table: the fields a single commit and each table of a multi-table
    transaction share, with the same meaning."""

    watermark: Int64 | None = None
    properties: dict[Text, Text] = Field(default_factory=dict)
    overwrite: OverwriteSpec | None = None
    base_snapshot_id: int | None = Field(
        default=None,
        ge=0,
        le=INT64_MAX,
        description="strict mode: reject if the table moved past this snapshot",
    )
    messages: list[CommitMessageModel] = Field(default_factory=list)


class CommitRequest(_TableChanges):
    """A ManifestCommittable: the unit the coordinator commits atomically (at most two snapshots)."""

    commit_user: str = Field(min_length=1, max_length=200, pattern=COMMIT_USER_PATTERN)
    identifier: int = Field(default=BATCH_IDENTIFIER, ge=INT64_MIN, le=INT64_MAX)


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


class TableSnapshots(_Model):
    table: str
    snapshots: list[SnapshotRef]


class WinningSnapshot(_Model):
    id: int
    commit_user: str
    commit_kind: CommitKind


ConflictType = Literal[
    "BASE_SNAPSHOT_MOVED",
    "BUCKET_COUNT_CHANGED",
    "DELETED_FILE_MISSING",
    "DUPLICATE_FILE",
    "IDENTIFIER_REUSED",
    "LATEST_SNAPSHOT_MOVED",
    "LOCK_LOST",
    "LSM_KEY_RANGE_OVERLAP",
]
"""Why a commit was rejected. BASE_SNAPSHOT_MOVED, BUCKET_COUNT_CHANGED, DELETED_FILE_MISSING,
DUPLICATE_FILE and LSM_KEY_RANGE_OVERLAP are Paimon's conflict checks (the matrix in the service's
domain/conflicts.py). Two happen at the commit point: another commit moved the table while this one held
the lock (LATEST_SNAPSHOT_MOVED), or the lock's lease ran out before the change was written (LOCK_LOST,
for commits and maintenance alike). IDENTIFIER_REUSED: the commitUser and identifier name a recorded
commit whose changes differ from this one's (`recorded` says which); nothing was written."""


class RecordedCommitModel(_Model):
    """The commit an identifier already names (IDENTIFIER_REUSED): its outcome and snapshots."""

    commit_user: str
    identifier: int
    outcome: Literal["committed", "rejected"]
    snapshots: list[SnapshotRef] = Field(default_factory=list)


class ConflictModel(_Model):
    type: ConflictType
    message: str
    partition: dict[str, JsonValue] | None = None
    bucket: int | None = None
    files: list[str] = Field(default_factory=list)
    winning_snapshot: WinningSnapshot | None = None
    retryable: bool = False
    table: str | None = Field(default=None, description="the table it is on, in a multi-table transaction")
    recorded: RecordedCommitModel | None = Field(
        default=None, description="IDENTIFIER_REUSED: the commit the identifier already names"
    )


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
    outcome: Literal["committed", "rejected", "done", "overwritten"]
    snapshots: list[SnapshotRef]
    timings: dict[str, float]
    conflict: ConflictModel | None = None
    created_at: float = Field(description="epoch seconds")
    action: str = Field(
        default="commit",
        description="commit, expire, rollback, create-tag, delete-tag, set-consumer, delete-consumer, "
        "clean-orphans, set-options or alter-table",
    )
    details: dict[str, Any] | None = Field(default=None, description="what a maintenance action changed")
    table_id: str | None = None
    transaction: list[TableSnapshots] | None = Field(
        default=None,
        description="in GET /commits: a multi-table transaction's tables and their snapshots, this one "
        "entry standing for all of them",
    )


class CommitHistoryResponse(_Model):
    commits: list[CommitRecordModel]
