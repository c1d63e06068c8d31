"""Reading a data file, or a byte range of one, in batches: a task holds one batch of a file at a time,
never the whole file, and a file bigger than a split is shared by several tasks.

A byte range owns the row groups whose middle lies in it (Spark's rule for Parquet splits), so the
ranges of one file read each row group exactly once. Rows come in the table's current file schema
(`FileSchemas.read_as_current`), as `file_reads.read_data_file` gives a whole file.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from coordinator_client.spark.evolution import FileSchemas
from coordinator_client.spark.splits import SplitFile

BATCH_ROWS = 65_536
"""Rows per batch handed to Spark: big enough that the per-batch cost of Arrow's hand-off to the JVM
does not count, small enough to keep a task's memory to a few of them."""


def read_piece(schemas: FileSchemas, fs: pafs.FileSystem, root: str, piece: SplitFile) -> Iterator[pa.Table]:
    """The rows of a data file (or of the row groups its byte range owns) in the current file schema."""
    layout = schemas.layout
    own = root + piece.path[len(layout.location) :]  # the filesystem's spelling of the path
    written = schemas.written(piece.schema_id).file_schema
    with fs.open_input_file(own) as source:
        parquet = pq.ParquetFile(source)
        groups = owned_row_groups(parquet.metadata, piece)
        if not groups:
            return
        for batch in parquet.iter_batches(BATCH_ROWS, row_groups=groups, columns=written.names):
            rows = pa.Table.from_batches([batch]).cast(written)
            yield schemas.read_as_current(rows, piece.schema_id)


def owned_row_groups(metadata: pq.FileMetaData, piece: SplitFile) -> list[int]:
    """The row groups of a file whose middle lies in the piece's byte range (all for a whole file)."""
    if piece.length is None:
        return list(range(metadata.num_row_groups))
    end = piece.start + piece.length
    owned = []
    for i in range(metadata.num_row_groups):
        group = metadata.row_group(i)
        columns = [group.column(c) for c in range(group.num_columns)]
        first = min(
            c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset for c in columns
        )
        middle = first + sum(c.total_compressed_size for c in columns) // 2
        if piece.start <= middle < end:
            owned.append(i)
    return owned
