"""One write of the data source, batch or micro-batch: planned on the driver, run by tasks, committed once.

`WriteJob.plan` checks the options and the DataFrame's columns against the table and fixes everything the
tasks need (the file prefix, the row kind, the sequence numbers to continue from) before any task runs,
so bad input fails with nothing written. Each task writes its rows as data files (`task_files`) and
reports them; the driver commits them as one ManifestCommittable (`commit`), or deletes them when the job
fails (`abort`).

Sequence numbers of primary-key rows. Spark hands the rows of one bucket to whichever tasks hold them, so
several tasks may write one bucket. A row's sequence number is the bucket's next number (one past its
live files' highest, read when the write is planned) + the task's partition index x 2^32 + the row's place
among that task's rows of the bucket. Numbers therefore follow the DataFrame's order: within a task its
row order, across tasks the partition order, so of two rows of a key the later one wins, as Paimon's
writers promise. The cost is headroom: a write of P partitions moves a bucket's numbers on by about
P x 2^32, so a bucket takes 2^31 / P writes (10 million writes of 200 partitions) before numbers run out.

Exactly-once rests on the commit user and identifier (a resent or replayed commit is deduplicated by the
coordinator, and the replay's own files deleted) and on the file prefix: every file of this write is
named with it, so whatever a failed or duplicate task attempt left is found and deleted (`committing`).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from coordinator_client.models import BATCH_IDENTIFIER, CommitRequest, OverwriteSpec
from coordinator_client.spark.bucket_writers import BucketWriters
from coordinator_client.spark.committing import commit_written, messages, sweep
from coordinator_client.spark.data_files import WrittenFile, file_prefix
from coordinator_client.spark.layout import DELETE, INSERT, SparkTable
from coordinator_client.spark.options import Connection, OptionError, partition_spec
from paimon_format.values import from_json_value

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

TASK_SEQUENCE_STRIDE = 1 << 32
"""Sequence numbers set aside for each Spark partition's rows of one bucket in one write."""
PROPERTY_PREFIX = "snapshot.property."
OPERATIONS = ("write", "delete")


@dataclass(frozen=True)
class FilesWritten(WriterCommitMessage):
    """What one task reports to the driver: the data files it wrote."""

    files: tuple[WrittenFile, ...]


@dataclass(frozen=True)
class WriteJob:
    """Everything a write fixes on the driver before its tasks run; picklable, holds no client."""

    connection: Connection
    layout: SparkTable
    prefix: str
    kind: int
    next_sequence: Mapping[str, int]
    commit_user: str
    overwrite: OverwriteSpec | None
    properties: Mapping[str, str]
    what: str
    stage: str | None = None
    """Option `transaction`: the file where the commit is staged for a multi-table transaction
    (spark.transaction) instead of being sent."""

    @classmethod
    def plan(
        cls,
        connection: Connection,
        layout: SparkTable,
        options: Mapping[str, str],
        schema: StructType,
        overwrite: bool,
        *,
        commit_user: str | None = None,
    ) -> WriteJob:
        """Check the options and the DataFrame's `schema` against the table; read the sequence numbers.

        Raises:
            OptionError, ValueError: the write does not fit the table; nothing was written.
        """
        operation = options.get("operation", "write")
        if operation not in OPERATIONS:
            raise OptionError("operation", f"expected one of {', '.join(OPERATIONS)}, got {operation!r}")
        delete = operation == "delete"
        _check_columns(layout, schema.fieldNames(), delete)
        if delete and overwrite:
            raise OptionError("operation", "delete writes delete rows; it cannot overwrite (use append mode)")
        spec = _overwrite_spec(layout, options, overwrite)
        layout.check_mergeable()
        if layout.has_primary_key and layout.num_buckets <= 0:
            raise ValueError(
                f"{layout.table_id}: the Spark writer needs a fixed 'bucket' count on primary-key tables"
            )
        with connection.client() as client:
            next_sequence = {
                layout.bucket_path(layout.partition_values(b.partition), b.bucket): b.max_sequence_number + 1
                for b in client.sequence_numbers(layout.table_id).buckets
            }
        mode = "delete" if delete else "overwrite" if overwrite else "append"
        return cls(
            connection=connection,
            layout=layout,
            prefix=file_prefix(uuid.uuid4().hex),
            kind=DELETE if delete else INSERT,
            next_sequence=next_sequence,
            commit_user=options.get("commit-user") or commit_user or f"spark-write-{uuid.uuid4()}",
            overwrite=spec,
            properties={
                k[len(PROPERTY_PREFIX) :]: v for k, v in options.items() if k.startswith(PROPERTY_PREFIX)
            },
            what=f"{mode} into {layout.table_id}",
            stage=options.get("transaction"),
        )

    # ------------------------------------------------------------------ in a task

    def task_files(self, batches: Iterator[pa.RecordBatch]) -> FilesWritten:
        """Write this task's rows as data files; on failure delete what this attempt wrote."""
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = context.partitionId() if context is not None else 0
        # Primary-key rows are numbered from each bucket's next number plus this task's share; append
        # files are numbered by the driver at the commit.
        numbering = (
            (self.next_sequence, partition * TASK_SEQUENCE_STRIDE) if self.layout.has_primary_key else None
        )
        writers = BucketWriters(self.layout, self.prefix, self.kind, numbering)
        try:
            for batch in batches:
                writers.add(batch)
            return FilesWritten(tuple(writers.close()))
        except BaseException:
            writers.abort()
            raise

    # ------------------------------------------------------------------ on the driver

    def commit(
        self, reports: Sequence[WriterCommitMessage | None], identifier: int = BATCH_IDENTIFIER
    ) -> None:
        """Commit the tasks' files as one snapshot under (commit user, identifier).

        Raises:
            WriteAborted: the coordinator rejected the commit; the files were deleted.
            WriteOutcomeUnknown: nobody could say whether the commit stands; the files were kept.
        """
        files = [f for r in reports if isinstance(r, FilesWritten) for f in r.files]
        if not self.layout.has_primary_key:
            files = _number_append_files(files, self.next_sequence)
        if not files and self.overwrite is None and self.stage is None:
            return  # nothing to commit (an empty micro-batch, say): no marker to leave behind
        request = CommitRequest.model_validate(
            {
                "commitUser": self.commit_user,
                "identifier": identifier,
                "properties": dict(self.properties),
                "overwrite": self.overwrite.model_dump(by_alias=True) if self.overwrite else None,
                "messages": messages(files, "newFiles"),
            }
        )
        if self.stage is not None:
            # The transaction commits it with the other tables' writes; until then its files are the
            # transaction's to keep or delete, so no commit marker: a failed staging is swept by abort.
            Path(self.stage).write_bytes(pickle.dumps(StagedWrite(self.layout, self.prefix, request, files)))
            return
        _CommitMarker(self.prefix).set()
        with self.connection.client() as client:
            commit_written(client, self.layout, request, files, self.prefix, self.what)
        _CommitMarker(self.prefix).clear()

    def abort(self) -> None:
        """The job failed. Before its commit was sent, delete every file any attempt wrote; once it was
        sent, `commit` has settled the files already (deleted on rejection, kept while unknown), and
        Spark's abort after a failed commit must not delete what a standing commit may name."""
        marker = _CommitMarker(self.prefix)
        if marker.is_set():
            marker.clear()
            return
        sweep(self.layout, self.prefix, keep=(), directories=None)


@dataclass(frozen=True)
class StagedWrite:
    """One table's write of a multi-table transaction, staged on the driver's machine (pickled, in the
    transaction's own temporary folder): its commit, not sent, the files it names and the table's layout,
    so that even with the coordinator unreachable they can be deleted."""

    layout: SparkTable
    prefix: str
    request: CommitRequest
    files: Sequence[WrittenFile]

    @classmethod
    def read(cls, path: Path) -> StagedWrite:
        staged = pickle.loads(path.read_bytes())
        assert isinstance(staged, cls)
        return staged


@dataclass(frozen=True)
class _CommitMarker:
    """A file on the driver's machine saying this write's commit was sent. Spark calls `commit` and, when
    it fails, `abort`, each in a fresh Python worker on the driver: the marker is what abort knows of it."""

    prefix: str

    @property
    def path(self) -> Path:
        digest = hashlib.sha256(self.prefix.encode()).hexdigest()[:32]
        return Path(tempfile.gettempdir()) / "paimon-coordinator-commits" / digest

    def set(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()

    def is_set(self) -> bool:
        return self.path.exists()

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def _check_columns(layout: SparkTable, columns: Sequence[str], delete: bool) -> None:
    table_columns = set(layout.column_names)
    unknown = [c for c in columns if c not in table_columns]
    if unknown:
        raise ValueError(f"{layout.table_id} has no column(s) {unknown}")
    if delete:
        if not layout.has_primary_key:
            raise OptionError(
                "operation", f"delete needs a primary-key table; {layout.table_id} has no primary key"
            )
        needed = [n for n, t in layout.columns if n in layout.primary_keys or not t.nullable]
    else:
        needed = list(layout.column_names)
    missing = [c for c in needed if c not in columns]
    if missing:
        raise ValueError(f"the DataFrame lacks column(s) {missing} of {layout.table_id}")


def _overwrite_spec(layout: SparkTable, options: Mapping[str, str], overwrite: bool) -> OverwriteSpec | None:
    """Mode overwrite replaces the whole table, the static `overwrite-partition`, or with
    `partitionOverwriteMode` dynamic (Spark's own option name) the partitions the write touches."""
    static = partition_spec(options, "overwrite-partition")
    mode = options.get("partitionOverwriteMode", "static").lower()
    if mode not in ("static", "dynamic"):
        raise OptionError("partitionOverwriteMode", f"expected static or dynamic, got {mode!r}")
    if not overwrite:
        if static is not None or "partitionOverwriteMode" in options:
            name = "overwrite-partition" if static is not None else "partitionOverwriteMode"
            raise OptionError(name, "applies to mode('overwrite') only")
        return None
    for name in static or {}:
        if name not in layout.partition_keys:
            raise OptionError("overwrite-partition", f"{name!r} is not a partition key of {layout.table_id}")
    if mode == "dynamic":
        if static is not None:
            raise OptionError("overwrite-partition", "give a static partition or dynamic mode, not both")
        return OverwriteSpec(mode="dynamic")
    if static is not None:
        values = {n: _partition_value(layout, n, v) for n, v in static.items()}
        return OverwriteSpec(mode="static", partition=values)
    return OverwriteSpec(mode="table")


def _partition_value(layout: SparkTable, name: str, text: str) -> object:
    """A partition value written as text, as the JSON value the coordinator takes for the key's type:
    strings, dates, timestamps and decimals as text, numbers and booleans as JSON."""
    t = layout.types[name]
    value: object = text
    if not (t.is_string or t.is_decimal or t.is_timestamp or t.root == "DATE"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise OptionError("overwrite-partition", f"{name}: {text!r} is not a {t}") from None
    try:
        from_json_value(value, t, field=name)
    except ValueError as error:
        raise OptionError("overwrite-partition", str(error)) from None
    return value


def _number_append_files(files: list[WrittenFile], next_sequence: Mapping[str, int]) -> list[WrittenFile]:
    """Give append files consecutive, non-overlapping sequence ranges per bucket, in a stable order."""
    counters = dict(next_sequence)
    out = []
    for f in sorted(files, key=lambda f: f.path):
        first = counters.get(f.directory, 0)
        last = first + max(f.meta["rowCount"], 1) - 1
        counters[f.directory] = last + 1
        meta = {**f.meta, "minSequenceNumber": first, "maxSequenceNumber": last}
        out.append(WrittenFile(f.partition, f.bucket, f.directory, meta))
    return out
