"""What Spark tasks share when they write rows (cast, bucket, group, number) and the per-bucket compaction.

Each task is a small frozen dataclass that Spark pickles into its Python workers and calls through
`mapInArrow`. Tasks only read and write files under the table; the driver alone talks to the coordinator.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from coordinator_client.spark.data_files import RollingFileWriter, WrittenFile, written_files_batch
from coordinator_client.spark.evolution import FileSchemas
from coordinator_client.spark.layout import (
    SparkTable,
)
from coordinator_client.spark.merge import merge_by_key
from paimon_format.bucket_arrow import buckets_of_columns

TASK_COLUMN = "task"

Group = tuple[tuple[object, ...], int]
"""(partition values, bucket): the unit one RollingFileWriter writes."""


def conform(layout: SparkTable, batch: pa.RecordBatch) -> pa.Table:
    """The table's columns of a Spark batch, cast to the table's Arrow types; absent columns are null."""
    arrays = []
    for f in layout.value_schema:
        index = batch.schema.get_field_index(f.name)
        if index < 0:
            array: pa.Array = pa.nulls(batch.num_rows, f.type)
        else:
            array = batch.column(index)
            if array.type != f.type:
                array = array.cast(f.type)
        if not f.nullable and array.null_count:
            raise ValueError(
                f"column {f.name!r} of {layout.table_id} is NOT NULL, but {array.null_count} row(s) are null"
            )
        arrays.append(array)
    return pa.Table.from_arrays(arrays, schema=layout.value_schema)


def buckets(layout: SparkTable, rows: pa.Table | pa.RecordBatch) -> pa.Array:
    """Paimon's bucket of every row (0 for bucket-unaware tables); only the bucket-key columns are read."""
    if layout.num_buckets <= 0:
        return pa.array(np.zeros(rows.num_rows, dtype=np.int32))
    columns = []
    for name in layout.bucket_keys:
        column = rows.column(name)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        wanted = layout.value_schema.field(name).type
        columns.append(column if column.type == wanted else column.cast(wanted))
    return pa.array(buckets_of_columns(columns, layout.bucket_key_types, layout.num_buckets).astype(np.int32))


def groups(layout: SparkTable, rows: pa.Table, bucket: pa.Array) -> Iterator[tuple[Group, pa.Table]]:
    """The rows of each (partition, bucket), each group in the order its rows came."""
    names = layout.partition_keys
    if not names and layout.num_buckets <= 0:
        # One group only (an unpartitioned, bucket-unaware table): no grouping and no copy.
        yield ((), 0), rows
        return
    frame = pa.table(
        {
            **{f"p{i}": rows[n] for i, n in enumerate(names)},
            "b": bucket,
            "i": pa.array(np.arange(rows.num_rows, dtype=np.int64)),
        }
    )
    # use_threads=False keeps each group's row indices in input order, which sequence numbers rely on.
    grouped = frame.group_by([*(f"p{i}" for i in range(len(names))), "b"], use_threads=False).aggregate(
        [("i", "list")]
    )
    partitions = [grouped[f"p{i}"].to_pylist() for i in range(len(names))]
    for j in range(grouped.num_rows):
        values = tuple(p[j] for p in partitions)
        # A batch of one group (common: Spark batches often hold one partition) is passed on uncopied.
        part = rows if grouped.num_rows == 1 else rows.take(grouped["i_list"][j].values)
        yield (values, grouped["b"][j].as_py()), part


def with_system_columns(layout: SparkTable, rows: pa.Table, first_sequence: int, kind: int) -> pa.Table:
    """Primary-key file rows: `_KEY_*`, `_SEQUENCE_NUMBER` from `first_sequence` on, `_VALUE_KIND`."""
    n = rows.num_rows
    arrays = [rows[k] for k in layout.key_names]
    arrays.append(pa.array(np.arange(first_sequence, first_sequence + n, dtype=np.int64)))
    arrays.append(pa.array(np.full(n, kind, dtype=np.int8)))
    return pa.Table.from_arrays([*arrays, *rows.columns], schema=layout.file_schema)


@dataclass(frozen=True)
class CompactTask:
    """Merges all live files of one bucket into sorted files; input rows name the bucket and its files.

    Primary-key buckets keep, per key, the row with the highest sequence number and drop retractions
    (nothing older can remain below the top level), then go to the top level. Append buckets are
    concatenated in sequence order into level-0 files, as Paimon's append compaction does. Files of an
    older schema are read as rows of the current one, which the new files are written with.
    """

    layout: SparkTable
    prefix: str
    schemas: FileSchemas

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        fs, root = self.layout.filesystem()
        for batch in batches:
            for text in batch.column(TASK_COLUMN).to_pylist():
                spec = json.loads(text)
                yield written_files_batch(self._compact(fs, root, spec))

    def _compact(self, fs: Any, root: str, spec: Mapping[str, Any]) -> Sequence[WrittenFile]:
        layout = self.layout
        tables = []
        for path, schema_id in zip(spec["paths"], spec["schemaIds"], strict=True):
            written = self.schemas.written(schema_id).file_schema
            with fs.open_input_file(f"{root}/{path}") as f:
                rows = pq.read_table(f, columns=written.names).cast(written)
            tables.append(self.schemas.read_as_current(rows, schema_id))
        rows = pa.concat_tables(tables)
        if layout.has_primary_key:
            rows = merge_by_key(layout, rows)
        values = layout.partition_values(spec["partition"])
        level = layout.max_level if layout.has_primary_key else 0
        writer = RollingFileWriter(layout, fs, root, values, spec["bucket"], self.prefix, level=level)
        try:
            if rows.num_rows:
                writer.write(rows)
            return writer.close()
        except BaseException:
            writer.abort()
            raise
