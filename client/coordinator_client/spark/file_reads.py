"""What a reading task does with one data file: read it from the table's filesystem in the table's current
file schema, and hand rows to Spark in exactly the Arrow types Spark expects of the read schema."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from coordinator_client.spark.evolution import FileSchemas

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


def read_data_file(
    schemas: FileSchemas, fs: pafs.FileSystem, root: str, path: str, schema_id: int
) -> pa.Table:
    """The rows of the data file at `path` (as the coordinator's plan names it: under the table's
    location), written under `schema_id`, in the table's current file schema (`_KEY_*`,
    `_SEQUENCE_NUMBER` and `_VALUE_KIND` first on a primary-key table)."""
    layout = schemas.layout
    own = root + path[len(layout.location) :]  # the filesystem's spelling of the path
    written = schemas.written(schema_id).file_schema
    rows = pq.read_table(own, filesystem=fs, columns=written.names, partitioning=None)
    return schemas.read_as_current(rows.cast(written), schema_id)


def spark_arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema a Python data source's batches must have, field for field (Spark checks it):
    timestamps in microseconds, with UTC for TIMESTAMP_LTZ."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def for_spark(rows: pa.Table, target: pa.Schema) -> pa.Table:
    """`rows` with the columns of `target`, cast to its types."""
    return rows.select(target.names).cast(target)
