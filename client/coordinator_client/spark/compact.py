"""Full compaction of a coordinator-managed Paimon table from Spark: one task per bucket, one COMPACT commit.

The coordinator arbitrates races: a compaction names the files it replaces (`compactBefore`), and if
another commit removed one of them first, this one is rejected with the conflict and its new files are
deleted. Writes that land meanwhile are unaffected: their level-0 files are newer and stay.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from coordinator_client.client import CoordinatorClient
from coordinator_client.models import CommitRequest, CommitResponse, LiveFileModel
from coordinator_client.spark.committing import collect_written, commit_written, messages
from coordinator_client.spark.data_files import FILE_COLUMN, WrittenFile, file_prefix
from coordinator_client.spark.evolution import FileSchemas
from coordinator_client.spark.layout import SparkTable
from coordinator_client.spark.read import live_files
from coordinator_client.spark.tasks import TASK_COLUMN, CompactTask

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def compact(
    spark: SparkSession,
    table: str,
    *,
    client: CoordinatorClient,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    commit_user: str | None = None,
) -> CommitResponse | None:
    """Rewrite every bucket that has more than one file (or level-0 files) as sorted files.

    Returns the commit's answer, or None when every bucket is already compact.

    Raises:
        WriteAborted: the job failed or the commit was rejected (e.g. a racing compaction won, the
            cause is the Conflict); the files this compaction wrote were deleted.
        WriteOutcomeUnknown: nobody could say whether the commit stands; the files were kept.
    """
    layout = SparkTable.of(client.get_table(table))
    layout.check_mergeable()
    buckets: dict[str, list[LiveFileModel]] = {}
    for f in live_files(client, layout, None, partitions):
        buckets.setdefault(layout.directory_of(f), []).append(f)
    todo = {d: files for d, files in buckets.items() if _needs_compaction(layout, files)}
    if not todo:
        return None
    specs = []
    for d, files in todo.items():
        ordered = sorted(files, key=lambda f: f.min_sequence_number)
        spec = {
            "partition": files[0].partition,
            "bucket": files[0].bucket,
            "paths": [f"{d}/{f.file_name}" for f in ordered],
            "schemaIds": [f.schema_id for f in ordered],
        }
        specs.append(json.dumps(spec))
    schemas = FileSchemas.load(layout, {f.schema_id for files in todo.values() for f in files})
    prefix = file_prefix(uuid.uuid4().hex)
    tasks = spark.createDataFrame([(s,) for s in specs], f"{TASK_COLUMN} string").repartition(len(specs))
    what = f"compaction of {table}"
    out = tasks.mapInArrow(CompactTask(layout, prefix, schemas), f"{FILE_COLUMN} string")
    written = collect_written(out, layout, prefix, what)
    if not layout.has_primary_key:
        written = [_with_sequence_range(f, todo[f.directory]) for f in written]

    def replaced(directory: str) -> dict[str, Any]:
        files = todo[directory]
        return {
            "totalBuckets": files[0].total_buckets,
            "compactBefore": [f.to_data_file().model_dump(by_alias=True) for f in files],
        }

    body = messages(written, "compactAfter", lambda f: replaced(f.directory))
    # A bucket whose rows all merged away (every key deleted) has no new file, only files to drop.
    emptied = set(todo) - {f.directory for f in written}
    for directory in sorted(emptied):
        first = todo[directory][0]
        body.append({"partition": first.partition, "bucket": first.bucket, **replaced(directory)})
    request = CommitRequest.model_validate(
        {"commitUser": commit_user or f"spark-compact-{uuid.uuid4()}", "messages": body}
    )
    return commit_written(client, layout, request, written, prefix, what)


def _needs_compaction(layout: SparkTable, files: Sequence[LiveFileModel]) -> bool:
    if len(files) > 1:
        return True
    if not layout.has_primary_key:
        return False
    only = files[0]
    return only.level != layout.max_level or bool(only.delete_row_count)


def _with_sequence_range(f: WrittenFile, replaced: Sequence[LiveFileModel]) -> WrittenFile:
    """Append files carry no sequence column: the compacted file spans the range of those it replaces."""
    low = min(r.min_sequence_number for r in replaced)
    high = max(r.max_sequence_number for r in replaced)
    return WrittenFile(
        f.partition, f.bucket, f.directory, {**f.meta, "minSequenceNumber": low, "maxSequenceNumber": high}
    )
