"""Handing rows to Spark: a Python data source's batches must have exactly the Arrow types Spark expects of
its read schema (see `row_groups` for reading the data files)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


def spark_arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema a Python data source's batches must have, field for field (Spark checks it):
    timestamps in microseconds, with UTC for TIMESTAMP_LTZ."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


ROW_KINDS = pa.array(["+I", "-U", "+U", "-D"])
"""Paimon's RowKind byte (_VALUE_KIND) as the index of its short string, as its audit_log shows it."""


def kinds_as_written(kind_bytes: pa.ChunkedArray) -> pa.ChunkedArray:
    """Each primary-key row's kind as Paimon wrote it."""
    return pc.take(ROW_KINDS, kind_bytes.cast(pa.int32()))


def inserts(rows: int) -> pa.Array:
    """The kind of rows that are all inserts: an append table's, or a merged read's."""
    return pa.array(["+I"] * rows, pa.string())


def for_spark(rows: pa.Table, target: pa.Schema) -> pa.Table:
    """`rows` with the columns of `target`, cast to its types."""
    return rows.select(target.names).cast(target)
