"""`bench-null`: a Python data source whose writer only counts the rows Spark hands it, and whose reader
hands Spark rows it already holds.

Timed beside our writes, the writer is the floor of any `DataSourceArrowWriter`: what Spark spends making
the rows, turning them into Arrow batches and sending them to Python workers, plus the data source
write's own planning and (empty) driver-side commit, before a byte is encoded. The reader
(`.option("rows", n)`) is the floor of any Python data source read: in each of `parallelism` tasks it
sends one prepared 65,536-row Arrow batch of the benchmark's columns over and over, so Spark's side of
the hand-off (Arrow from a Python worker into rows) is all that costs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

NAME = "bench-null"
SCHEMA = "dt string, id bigint, name string, amount double, qty int"
BATCH_ROWS = 65_536


@dataclass(frozen=True)
class Counted(WriterCommitMessage):
    rows: int


class NullSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return _CountingWriter()

    def reader(self, schema: StructType) -> DataSourceReader:
        return _RepeatingReader(int(self.options["rows"]), int(self.options.get("parallelism", "2")))


class _RepeatingReader(DataSourceReader):
    def __init__(self, rows: int, parallelism: int) -> None:
        self.rows = rows
        self.parallelism = parallelism

    def partitions(self) -> list[InputPartition]:
        share = -(-self.rows // self.parallelism)
        return [InputPartition(min(share, self.rows - i * share)) for i in range(self.parallelism)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        import numpy as np

        ids = np.arange(BATCH_ROWS, dtype=np.int64)
        batch = pa.RecordBatch.from_pydict(
            {
                "dt": pa.array(np.where(ids % 2 == 0, "2026-11-20", "2026-11-21"), pa.string()),
                "id": pa.array(ids),
                "name": pa.array(np.char.add("customer-", (ids % 100003).astype(str)), pa.string()),
                "amount": pa.array((ids % 10007) / 100.0),
                "qty": pa.array((ids % 1000).astype(np.int32)),
            }
        )
        left: int = partition.value
        while left > 0:
            yield batch if left >= BATCH_ROWS else batch.slice(0, left)
            left -= BATCH_ROWS


class _CountingWriter(DataSourceArrowWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return Counted(sum(batch.num_rows for batch in iterator))

    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        pass

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        pass
