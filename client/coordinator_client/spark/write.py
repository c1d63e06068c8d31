"""Writing a DataFrame into a coordinator-managed Paimon table: batch writes and a streaming sink."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from coordinator_client.client import CoordinatorClient
from coordinator_client.models import BATCH_IDENTIFIER, CommitRequest, CommitResponse, OverwriteSpec
from coordinator_client.spark.committing import collect_written, commit_written, messages
from coordinator_client.spark.data_files import FILE_COLUMN, WrittenFile, file_prefix
from coordinator_client.spark.layout import DELETE, INSERT, SparkTable
from coordinator_client.spark.tasks import BUCKET_COLUMN, ORDER_COLUMN, WriteTask, bucket_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

Mode = Literal["append", "overwrite", "delete"]
_MODES = ("append", "overwrite", "delete")


def write(
    df: DataFrame,
    table: str,
    *,
    client: CoordinatorClient,
    mode: Mode = "append",
    partition: Mapping[str, Any] | None = None,
    dynamic: bool = False,
    commit_user: str | None = None,
    identifier: int = BATCH_IDENTIFIER,
    properties: Mapping[str, str] | None = None,
) -> CommitResponse:
    """Write `df` into `table` and commit it as one snapshot; returns the coordinator's answer.

    mode: "append" adds rows (upserts them on a primary-key table); "overwrite" replaces the whole
    table, the static `partition` given, or with `dynamic=True` the partitions `df` writes to; "delete"
    writes delete rows for the keys in `df` (primary-key tables).
    A commit user and identifier that the coordinator already committed are not written again: the
    answer is the earlier commit's, with `deduplicated` set.

    Raises:
        ValueError: the DataFrame or the arguments do not fit the table; nothing was written.
        WriteAborted: the job failed, or the coordinator rejected the commit; the data files it wrote
            were deleted.
        WriteOutcomeUnknown: the commit was sent and nobody could say whether it stands (the answer was
            lost and the coordinator could not be asked); the data files were kept, and the error names
            the commitUser and identifier to ask about.
    """
    layout = SparkTable.of(client.get_table(table))
    _check_arguments(layout, df.columns, mode, partition, dynamic)
    user = commit_user or f"spark-write-{uuid.uuid4()}"
    if identifier != BATCH_IDENTIFIER and commit_user is not None:
        earlier = client.commit_outcome(layout.table_id, user, identifier)
        if earlier.status == "committed":
            return CommitResponse(snapshots=earlier.snapshots, deduplicated=True)

    prefix = file_prefix(uuid.uuid4().hex)
    next_sequence = _next_sequence(client, layout)
    task = WriteTask(layout, prefix, DELETE if mode == "delete" else INSERT, next_sequence)
    what = f"{mode} into {table}"
    files = collect_written(_plan(df, layout, task), layout, prefix, what)
    if not layout.has_primary_key:
        files = _number_append_files(files, next_sequence)
    if not files and mode != "overwrite":
        return CommitResponse(snapshots=[])
    overwrite = _overwrite_spec(mode, partition, dynamic)
    request = CommitRequest.model_validate(
        {
            "commitUser": user,
            "identifier": identifier,
            "properties": dict(properties or {}),
            "overwrite": overwrite.model_dump(by_alias=True) if overwrite else None,
            "messages": messages(files, "newFiles"),
        }
    )
    return commit_written(client, layout, request, files, prefix, what)


def stream_sink(
    table: str, *, client: CoordinatorClient, commit_user: str
) -> Callable[[DataFrame, int], CommitResponse]:
    """A `foreachBatch` function: each micro-batch is one commit with identifier = batchId.

    Keep `commit_user` stable for the query (the checkpoint's identity): a batch replayed after a restart
    then carries a commit user and identifier the coordinator has seen, and is not committed again. A
    batch whose commit outcome stays unknown raises WriteOutcomeUnknown with its files kept, which stops
    the query; its restart replays the batch, and the coordinator answers it if the commit stood.
    """

    def sink(batch: DataFrame, batch_id: int) -> CommitResponse:
        return write(batch, table, client=client, mode="append", commit_user=commit_user, identifier=batch_id)

    return sink


def _plan(df: DataFrame, layout: SparkTable, task: WriteTask) -> DataFrame:
    """The Spark plan whose tasks write the files; its rows are the files' metadata."""
    if not layout.has_primary_key:
        # Append files need no order and no shuffle: every task writes its rows where they belong.
        return df.mapInArrow(task, f"{FILE_COLUMN} string")
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.functions import arrow_udf
    from pyspark.sql.types import IntegerType

    # Primary-key rows: one task per bucket, sorted by key and, within a key, by DataFrame order.
    # pyspark's stubs want functionType, which at run time warns in favour of the type hints we give.
    bucket = arrow_udf(bucket_of(layout), IntegerType())  # type: ignore[call-overload]
    routed = df.withColumn(ORDER_COLUMN, F.monotonically_increasing_id()).withColumn(
        BUCKET_COLUMN, bucket(F.struct(*layout.bucket_keys))
    )
    by_bucket = [*layout.partition_keys, BUCKET_COLUMN]
    shuffled = routed.repartition(*by_bucket).sortWithinPartitions(
        *by_bucket, *layout.key_names, ORDER_COLUMN
    )
    return shuffled.mapInArrow(task, f"{FILE_COLUMN} string")


def _check_arguments(
    layout: SparkTable, columns: list[str], mode: str, partition: Mapping[str, Any] | None, dynamic: bool
) -> None:
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {', '.join(_MODES)}, got {mode!r}")
    table_columns = set(layout.column_names)
    unknown = [c for c in columns if c not in table_columns]
    if unknown:
        raise ValueError(f"{layout.table_id} has no column(s) {unknown}")
    if mode == "delete":
        if not layout.has_primary_key:
            raise ValueError(f"mode='delete' needs a primary-key table; {layout.table_id} has no primary key")
        needed = [n for n, t in layout.columns if n in layout.primary_keys or not t.nullable]
    else:
        needed = list(layout.column_names)
    missing = [c for c in needed if c not in columns]
    if missing:
        raise ValueError(f"the DataFrame lacks column(s) {missing} of {layout.table_id}")
    if (partition is not None or dynamic) and mode != "overwrite":
        raise ValueError("partition and dynamic apply to mode='overwrite' only")
    if partition is not None and dynamic:
        raise ValueError("give a static partition or dynamic=True, not both")
    for name in partition or {}:
        if name not in layout.partition_keys:
            raise ValueError(f"partition: {name!r} is not a partition key of {layout.table_id}")
    if layout.has_primary_key and layout.num_buckets <= 0:
        raise ValueError(
            f"{layout.table_id}: the Spark writer needs a fixed 'bucket' count on primary-key tables"
        )
    layout.check_mergeable()


def _overwrite_spec(mode: str, partition: Mapping[str, Any] | None, dynamic: bool) -> OverwriteSpec | None:
    if mode != "overwrite":
        return None
    if dynamic:
        return OverwriteSpec(mode="dynamic")
    if partition is not None:
        return OverwriteSpec(mode="static", partition=dict(partition))
    return OverwriteSpec(mode="table")


def _next_sequence(client: CoordinatorClient, layout: SparkTable) -> dict[str, int]:
    """Per bucket directory, the sequence number after the highest one of its live files."""
    return {
        layout.bucket_path(layout.partition_values(b.partition), b.bucket): b.max_sequence_number + 1
        for b in client.sequence_numbers(layout.table_id).buckets
    }


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
