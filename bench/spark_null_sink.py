"""`bench-null`: a Python data source whose writer only counts the rows Spark hands it.

Timed beside our writes, it is the floor of any `DataSourceArrowWriter`: what Spark spends making the
rows, turning them into Arrow batches and sending them to Python workers, plus the data source write's
own planning and (empty) driver-side commit, before a byte is encoded.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

NAME = "bench-null"


@dataclass(frozen=True)
class Counted(WriterCommitMessage):
    rows: int


class NullSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return _CountingWriter()


class _CountingWriter(DataSourceArrowWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return Counted(sum(batch.num_rows for batch in iterator))

    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        pass

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        pass
