"""Streaming writes of the data source: `df.writeStream.format("paimon-coordinator")`.

Each micro-batch is one commit whose identifier is the batch id, under a commit user that stays the same
for the query: the `commit-user` option, else one derived from the query's checkpoint location. A batch
that Spark replays after a crash between the commit and its checkpoint (same batch id, same user) is
answered by the coordinator with the earlier commit, and the replay's files are deleted: it commits once.
Spark plans a new writer for every micro-batch, so each batch numbers its rows after the last one's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from coordinator_client.spark.options import OptionError
from coordinator_client.spark.write_job import WriteJob

if TYPE_CHECKING:
    pass


class StreamWriter(DataSourceStreamArrowWriter):
    """One micro-batch's write (Spark plans a writer per batch), committed with the batch id."""

    def __init__(self, job: WriteJob) -> None:
        self.job = job

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self.job.task_files(iterator)

    def commit(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        self.job.commit(messages, batchId)

    def abort(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        self.job.abort()


def query_user(options: Mapping[str, str]) -> str:
    """The query's commit user: `commit-user`, else named after its checkpoint, which a restart reuses."""
    if options.get("commit-user"):
        return options["commit-user"]
    checkpoint = options.get("checkpointLocation")
    if not checkpoint:
        raise OptionError(
            "checkpointLocation", "a streaming write needs a checkpoint (or a commit-user option)"
        )
    return "spark-stream-" + hashlib.sha256(checkpoint.encode()).hexdigest()[:24]
