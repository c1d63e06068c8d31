"""The functional write API, a thin layer over the data source: `write(df, table, client=...)` is
`df.write.format("paimon-coordinator")` with the client's URL and token, returning the commit's snapshots.

New jobs can use the data source directly (see `source`); these functions stay for callers that want the
commit's answer back and errors as the client's exception types, and for `foreachBatch` sinks.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from coordinator_client.client import CoordinatorClient
from coordinator_client.errors import WriteAborted, WriteOutcomeUnknown
from coordinator_client.models import BATCH_IDENTIFIER, CommitResponse
from coordinator_client.spark.committing import first_line
from coordinator_client.spark.source import NAME, client_options, register

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
    """Write `df` into `table` and commit it as one snapshot; returns the commit's snapshots.

    mode: "append" adds rows (upserts them on a primary-key table); "overwrite" replaces the whole
    table, the static `partition` given, or with `dynamic=True` the partitions `df` writes to; "delete"
    writes delete rows for the keys in `df` (primary-key tables).
    A commit user and identifier that the coordinator already committed are not written again: the
    answer is the earlier commit's, with `deduplicated` set.

    Raises:
        ValueError: the arguments do not fit; nothing was written.
        WriteAborted: the job failed, or the coordinator rejected the commit (or the DataFrame does not
            fit the table); the data files it wrote were deleted.
        WriteOutcomeUnknown: the commit was sent and nobody could say whether it stands; the data files
            were kept, and the error names the commitUser and identifier to ask about.
    """
    options = write_options(mode, partition, dynamic, properties)
    user = commit_user or f"spark-write-{uuid.uuid4()}"
    if identifier != BATCH_IDENTIFIER and commit_user is not None:
        earlier = client.commit_outcome(table, user, identifier)
        if earlier.status == "committed":
            return CommitResponse(snapshots=earlier.snapshots, deduplicated=True)
    register(df.sparkSession)
    writer = (
        df.write.format(NAME)
        .options(**client_options(client), **options)
        .option("commit-user", user)
        .option("commit-identifier", str(identifier))
        .mode("overwrite" if mode == "overwrite" else "append")
    )
    try:
        writer.save(table)
    except Exception as error:
        raise write_error(error, table, user, identifier, mode) from error
    outcome = client.commit_outcome(table, user, identifier)
    return CommitResponse(snapshots=outcome.snapshots if outcome.status == "committed" else [])


def stream_sink(
    table: str, *, client: CoordinatorClient, commit_user: str
) -> Callable[[DataFrame, int], CommitResponse]:
    """A `foreachBatch` function: each micro-batch is one commit with identifier = batchId.

    Keep `commit_user` stable for the query (the checkpoint's identity): a batch replayed after a restart
    then carries a commit user and identifier the coordinator has seen, and is not committed again. A
    batch whose commit outcome stays unknown raises WriteOutcomeUnknown with its files kept, which stops
    the query; its restart replays the batch, and the coordinator answers it if the commit stood.
    (`df.writeStream.format("paimon-coordinator")` does the same without foreachBatch.)
    """

    def sink(batch: DataFrame, batch_id: int) -> CommitResponse:
        return write(batch, table, client=client, mode="append", commit_user=commit_user, identifier=batch_id)

    return sink


def write_options(
    mode: str, partition: Mapping[str, Any] | None, dynamic: bool, properties: Mapping[str, str] | None
) -> dict[str, str]:
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {', '.join(_MODES)}, got {mode!r}")
    if (partition is not None or dynamic) and mode != "overwrite":
        raise ValueError("partition and dynamic apply to mode='overwrite' only")
    if partition is not None and dynamic:
        raise ValueError("give a static partition or dynamic=True, not both")
    options = {f"snapshot.property.{k}": v for k, v in (properties or {}).items()}
    if mode == "delete":
        options["operation"] = "delete"
    if dynamic:
        options["partitionOverwriteMode"] = "dynamic"
    if partition is not None:
        options["overwrite-partition"] = ",".join(f"{k}={_text(v)}" for k, v in partition.items())
    return options


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def write_error(error: Exception, table: str, user: str, identifier: int, mode: str) -> Exception:
    """The client's exception for a failed `save`: the data source raised it in a Spark worker, and Spark
    hands it on as text, so it is known by the error line its trace ends with. Planning errors (Spark's
    AnalysisException: the write was refused before any task ran) stay ValueErrors."""
    from pyspark.errors import AnalysisException

    reason = first_line(error)
    raised = reason.split(":", 1)[0]
    what = f"{mode} into {table}"
    if isinstance(error, AnalysisException) and raised.endswith(("ValueError", "OptionError")):
        return ValueError(f"{what}: {reason}")
    if raised.endswith("WriteOutcomeUnknown"):
        return WriteOutcomeUnknown(
            f"{what}: {reason}", table_id=table, commit_user=user, identifier=identifier, kept_files=[]
        )
    return WriteAborted(f"{what} failed: {reason}", deleted_files=0)
