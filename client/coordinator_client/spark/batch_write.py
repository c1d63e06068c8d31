"""Batch writes of the data source: `df.write.format("paimon-coordinator").mode(...).save("db.t")`.

    .mode("append")                               add rows (upsert them on a primary-key table)
    .mode("overwrite")                            replace the whole table
    .option("overwrite-partition", "dt=2024-01-01")   ... or only this partition
    .option("partitionOverwriteMode", "dynamic")  ... or the partitions the DataFrame writes to
    .option("operation", "delete")                delete the rows of the DataFrame's keys (primary-key tables)
    .option("commit-user", u).option("commit-identifier", n)   exactly once: a resend is not committed again
    .option("snapshot.property.<name>", v)        a property of the snapshot

One write is one snapshot (see write_job for how its tasks write and how it commits).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from coordinator_client.models import BATCH_IDENTIFIER
from coordinator_client.spark.options import OptionError, optional_int
from coordinator_client.spark.write_job import WriteJob

if TYPE_CHECKING:
    pass


class TableWriter(DataSourceArrowWriter):
    """One batch write: the job planned on the driver, committed under `commit-identifier` if given."""

    def __init__(self, job: WriteJob, options: Mapping[str, str]) -> None:
        identifier = optional_int(options, "commit-identifier", minimum=0)
        if identifier is not None and "commit-user" not in options:
            raise OptionError(
                "commit-identifier", "a resend is known by its commit user too: set commit-user"
            )
        self.job = job
        self.identifier = BATCH_IDENTIFIER if identifier is None else identifier

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self.job.task_files(iterator)

    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        self.job.commit(messages, self.identifier)

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        self.job.abort()
