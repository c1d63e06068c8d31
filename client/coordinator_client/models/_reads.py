"""Reads: snapshots and the live files of a snapshot."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, JsonValue

from coordinator_client.models._base import _Model
from coordinator_client.models._commits import CommitKind, DataFileModel, KeyStatsModel
from coordinator_client.models._errors import ErrorResponse


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


class ScanPlanHeader(_Model):
    """The first line of a scan plan streamed as JSON lines (`Accept: application/x-ndjson`); a
    LiveFileModel per line follows, then one ScanPlanEnd."""

    snapshot_id: int | None = Field(description="the snapshot planned; null when the table has none yet")


class ScanPlanEnd(_Model):
    """The last line of a streamed scan plan: a stream without it was cut off.

    `error` (with its HTTP `status`) is set when the service failed after the stream had begun, e.g. a
    manifest became unreadable; the files sent before it are then not the whole plan.
    """

    model_config = ConfigDict(extra="forbid")

    file_count: int = Field(description="the files sent before this line")
    error: ErrorResponse | None = None
    status: int | None = None


class BucketSequenceModel(_Model):
    """The highest sequence number among a bucket's live files: a writer numbers its rows after it."""

    partition: dict[str, JsonValue]
    bucket: int
    max_sequence_number: int


class SequenceNumbersResponse(_Model):
    """Per (partition, bucket) with live files at the snapshot; a bucket not listed starts at 0."""

    snapshot_id: int | None = Field(description="the latest snapshot when asked; null before the first")
    buckets: list[BucketSequenceModel]
