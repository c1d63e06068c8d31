"""The driver's side of a Spark write or compaction: run the tasks, commit once, never leave files behind.

Exactly-once rests on three facts. Only the successful attempt of each task reports its files, so retried
and speculative attempts are never committed. The commit is one ManifestCommittable under a commitUser and
identifier, which the coordinator deduplicates. And every file name starts with the job's own prefix, so
whatever the job wrote and did not commit (a failed attempt, a rejected commit) can be found and deleted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from coordinator_client.client import CoordinatorClient
from coordinator_client.errors import CommitStateUnknown, Conflict, WriteAborted
from coordinator_client.models import CommitRequest, CommitResponse
from coordinator_client.spark.data_files import FILE_COLUMN, WrittenFile
from coordinator_client.spark.layout import SparkTable

_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Aborted|Conflict): ")

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def collect_written(out: DataFrame, layout: SparkTable, prefix: str, what: str) -> list[WrittenFile]:
    """Run the writing tasks; if the job fails, delete whatever any attempt of it wrote."""
    try:
        return [WrittenFile.from_json(row[FILE_COLUMN]) for row in out.collect()]
    except BaseException as error:
        deleted = sweep(layout, prefix, keep=(), directories=None)
        if not isinstance(error, Exception):
            raise
        raise WriteAborted(
            f"{what} failed before its commit: {_first_line(error)}; deleted {deleted} data file(s) it wrote",
            deleted_files=deleted,
        ) from error


def commit_written(
    client: CoordinatorClient,
    layout: SparkTable,
    request: CommitRequest,
    files: Sequence[WrittenFile],
    prefix: str,
    what: str,
) -> CommitResponse:
    """Commit the files; on rejection delete them, on an unknown outcome keep them and say so."""
    directories = {f.directory for f in files}
    try:
        response = client.commit(layout.table_id, request)
    except CommitStateUnknown as error:
        raise WriteAborted(
            f"{what}: the commit's outcome is unknown ({error}); its {len(files)} data file(s) are kept, "
            "since the commit may still name them",
            deleted_files=0,
            kept_files=[f.path for f in files],
        ) from error
    except BaseException as error:
        deleted = delete_files(layout, [f.path for f in files])
        deleted += sweep(layout, prefix, keep=(), directories=directories)
        if not isinstance(error, Exception):
            raise
        raise WriteAborted(
            f"{what} was not committed: {_reason(error)}; deleted its {deleted} data file(s)",
            deleted_files=deleted,
        ) from error
    if response.deduplicated:
        # An earlier run of this very commit (a replayed streaming batch) holds these rows already.
        delete_files(layout, [f.path for f in files])
    else:
        sweep(layout, prefix, keep={f.path for f in files}, directories=directories)
    return response


def messages(
    files: Iterable[WrittenFile], list_name: str, extra: Callable[[WrittenFile], dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Commit messages, one per (partition, bucket), with each file's metadata in `list_name`."""
    by_bucket: dict[str, dict[str, Any]] = {}
    for f in files:
        message = by_bucket.get(f.directory)
        if message is None:
            message = {
                "partition": f.partition,
                "bucket": f.bucket,
                list_name: [],
                **(extra(f) if extra else {}),
            }
            by_bucket[f.directory] = message
        message[list_name].append(f.meta)
    return list(by_bucket.values())


def delete_files(layout: SparkTable, paths: Iterable[str]) -> int:
    """Delete data files given relative to the table; returns how many existed."""
    fs, root = layout.filesystem()
    deleted = 0
    for path in paths:
        try:
            fs.delete_file(f"{root}/{path}")
            deleted += 1
        except FileNotFoundError:
            pass
    return deleted


def sweep(layout: SparkTable, prefix: str, *, keep: Iterable[str], directories: Iterable[str] | None) -> int:
    """Delete files named with `prefix` that are not in `keep`: in `directories`, or anywhere in the table."""
    fs, root = layout.filesystem()
    kept = set(keep)
    if directories is None:
        selectors = [pafs.FileSelector(root, recursive=True, allow_not_found=True)]
    else:
        selectors = [pafs.FileSelector(f"{root}/{d}", allow_not_found=True) for d in sorted(set(directories))]
    deleted = 0
    for selector in selectors:
        for info in fs.get_file_info(selector):
            relative = info.path[len(root) :].lstrip("/")
            if info.type == pafs.FileType.File and info.base_name.startswith(prefix) and relative not in kept:
                fs.delete_file(info.path)
                deleted += 1
    return deleted


def _reason(error: BaseException) -> str:
    if isinstance(error, Conflict) and error.conflict is not None:
        return f"{error.conflict.type}: {error.conflict.message}"
    return _first_line(error)


def _first_line(error: BaseException) -> str:
    """The line that says what went wrong: for a failed Spark task, the Python error inside its trace."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    raised = [line for line in lines if _RAISED.match(line)]
    if raised:
        return raised[-1]
    return f"{type(error).__name__}: {lines[0] if lines else ''}"
