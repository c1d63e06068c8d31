"""The driver's side of a Spark write or compaction: run the tasks, commit once, never leave files behind.

Exactly-once rests on three facts. Only the successful attempt of each task reports its files, so retried
and speculative attempts are never committed. The commit is one ManifestCommittable under a commitUser and
identifier, which the coordinator deduplicates. And every file name starts with the job's own prefix, so
whatever the job wrote and did not commit (a failed attempt, a rejected commit) can be found and deleted.

A committed snapshot must never point at a deleted file, so the commit's files are deleted only when the
coordinator has decided against the commit. A lost answer (timeout, 5xx, dropped connection, Ctrl-C while
the commit is out) is not a rejection: the commit may stand. The client's retry policy (`_flows`) asks
the coordinator after a timeout or a 5xx, and raises CommitStateUnknown when it could not learn the
outcome; for any other failure (a 503 past its retries, Ctrl-C, an unexpected error) the writer asks
once itself. While nobody can say, the files are kept (WriteOutcomeUnknown).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from coordinator_client.client import CoordinatorClient
from coordinator_client.errors import (
    BadRequest,
    CommitStateUnknown,
    Conflict,
    IdentifierReused,
    WriteAborted,
    WriteOutcomeUnknown,
)
from coordinator_client.models import CommitOutcomeResponse, CommitRequest, CommitResponse, ErrorResponse
from coordinator_client.spark.data_files import FILE_COLUMN, WrittenFile
from coordinator_client.spark.layout import SparkTable

_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Aborted|Conflict|Unknown): ")

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
            f"{what} failed before its commit: {first_line(error)}; deleted {deleted} data file(s) it wrote",
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
    """Commit the files. They are deleted only once the coordinator has decided against the commit (its
    409 or 4xx validation answer, or the outcome `rejected`). On any other failure while the commit is
    out (a timeout, a 5xx, a dropped connection, Ctrl-C) the coordinator is asked what became of it, and
    the files stay until it says: a commit that stands may name them.

    Raises:
        WriteAborted: the coordinator rejected the commit; the files were deleted.
        WriteOutcomeUnknown: nobody could say whether the commit stands; the files were kept.
        BaseException: a KeyboardInterrupt (or the like) during the commit, re-raised once the files are
            settled as above, with a note saying what became of the commit.
    """
    # Our own key: a resend after a lost answer is deduplicated by it, and the outcome asks about it.
    key = str(uuid.uuid4())
    try:
        response = client.commit(layout.table_id, request, idempotency_key=key)
    except BaseException as error:
        return _settle(client, layout, request, files, prefix, what, key, error)
    keep_committed(client, layout, response, files, prefix)
    return response


def _settle(
    client: CoordinatorClient,
    layout: SparkTable,
    request: CommitRequest,
    files: Sequence[WrittenFile],
    prefix: str,
    what: str,
    key: str,
    error: BaseException,
) -> CommitResponse:
    """After the commit call failed: delete on a decided rejection, else ask, and keep while unknown."""
    if isinstance(error, IdentifierReused) and (earlier := replayed(error)) is not None:
        # A replayed streaming batch: the batch was committed by an earlier run, under new file names.
        delete_files(layout, [f.path for f in files])
        return earlier
    rejection: BaseException | None = error if decided_rejection(error) else None
    if rejection is None and not isinstance(error, CommitStateUnknown):
        # CommitStateUnknown means the client asked already (with retries) and could not learn it.
        outcome = _ask_outcome(client, layout.table_id, request, key)
        if outcome is not None and outcome.status == "committed":
            response = CommitResponse(snapshots=outcome.snapshots, deduplicated=True)
            keep_committed(client, layout, response, files, prefix)
            _note(error, f"{what}: commit {_who(request)} stands (snapshots {_ids(response)}); rows are in")
            if not isinstance(error, Exception):
                raise error  # Ctrl-C stops the job all the same, now that what it did is known
            return response
        if outcome is not None and outcome.status == "rejected":
            rejection = _rejected(outcome, error)
    if rejection is None:
        _note(error, f"{what}: outcome of commit {_who(request)} unknown; its {len(files)} data file(s) kept")
        if not isinstance(error, Exception):
            raise error
        raise WriteOutcomeUnknown(
            f"{what}: the outcome of commit {_who(request)} on {layout.table_id} is unknown "
            f"({first_line(error)}); its {len(files)} data file(s) were kept, since the commit may still "
            f"stand and name them. Ask client.commit_outcome({layout.table_id!r}, {request.commit_user!r}, "
            f"{request.identifier}): committed means the rows are in; rejected means the files can go",
            table_id=layout.table_id,
            commit_user=request.commit_user,
            identifier=request.identifier,
            kept_files=[f.path for f in files],
        ) from error
    deleted = delete_files(layout, [f.path for f in files])
    deleted += sweep(layout, prefix, keep=(), directories={f.directory for f in files})
    _note(error, f"{what}: commit {_who(request)} was rejected; deleted its {deleted} data file(s)")
    if not isinstance(error, Exception):
        raise error
    raise WriteAborted(
        f"{what} was not committed: {_reason(rejection)}; deleted its {deleted} data file(s)",
        deleted_files=deleted,
    ) from rejection


def keep_committed(
    client: CoordinatorClient,
    layout: SparkTable,
    response: CommitResponse,
    files: Sequence[WrittenFile],
    prefix: str,
) -> None:
    """The commit stands: keep its files (a deduplicated answer is this very commit: the coordinator
    answers from its record only the same changes), and sweep what dead attempts left."""
    sweep(layout, prefix, keep={f.path for f in files}, directories={f.directory for f in files})


def replayed(error: IdentifierReused) -> CommitResponse | None:
    """The earlier run's commit of a replayed batch (the identifier names a commit that stands), as the
    answer of this one; None when the identifier names a rejected commit."""
    recorded = error.recorded
    if recorded is None or recorded.outcome != "committed":
        return None
    return CommitResponse(snapshots=recorded.snapshots, deduplicated=True)


def decided_rejection(error: BaseException) -> bool:
    """The coordinator's own answer that nothing of the commit was or will be written: a conflict (409)
    or invalid input (400, 413, 422), with its error body (a proxy's error page has none)."""
    return isinstance(error, (Conflict, BadRequest)) and error.body is not None


def _ask_outcome(
    client: CoordinatorClient, table_id: str, request: CommitRequest, key: str
) -> CommitOutcomeResponse | None:
    """What the coordinator recorded of the commit; None when it cannot be asked."""
    try:
        return client.commit_outcome(table_id, request.commit_user, request.identifier, key)
    except Exception:
        return None


def _rejected(outcome: CommitOutcomeResponse, cause: BaseException) -> Conflict:
    conflict = outcome.conflict
    message = conflict.message if conflict is not None else "the commit was rejected"
    rejected = Conflict(409, ErrorResponse(code="COMMIT_CONFLICT", message=message, conflict=conflict))
    rejected.__cause__ = cause
    return rejected


def _who(request: CommitRequest) -> str:
    return f"{request.commit_user!r}/{request.identifier}"


def _ids(response: CommitResponse) -> list[int]:
    return [s.id for s in response.snapshots]


def _note(error: BaseException, note: str) -> None:
    """Say on a re-raised KeyboardInterrupt (or the like) what became of the commit (Python >= 3.11)."""
    if not isinstance(error, Exception) and hasattr(error, "add_note"):
        error.add_note(note)


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
    return first_line(error)


def first_line(error: BaseException) -> str:
    """The line that says what went wrong: for a failed Spark task, the Python error inside its trace."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    raised = [line for line in lines if _RAISED.match(line)]
    if raised:
        return raised[-1]
    return f"{type(error).__name__}: {lines[0] if lines else ''}"
