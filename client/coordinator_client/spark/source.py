"""The `paimon-coordinator` PySpark data source: coordinator tables through Spark's own read and write APIs.

    from coordinator_client.spark import register
    register(spark)
    df = spark.read.format("paimon-coordinator").option("url", url).load("sales.orders")
    df.write.format("paimon-coordinator").option("url", url).mode("append").save("sales.orders")

Executors write and read the data files; the driver plans a read from the coordinator's scan plan and
commits a write once (`batch_write`, `stream_write`, `batch_read`, `stream_read`). The name is not
`paimon`, so Paimon's own Spark connector can be used in the same session.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)

from coordinator_client.client import CoordinatorClient
from coordinator_client.spark.layout import SparkTable
from coordinator_client.spark.options import Connection, OptionError, flag
from coordinator_client.spark.read import spark_schema

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from coordinator_client.spark.write_job import WriteJob

NAME = "paimon-coordinator"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
ROWKIND = "rowkind"
"""With option('rowkind', 'true'), a first column of each row's kind as Paimon's audit_log names it:
+I, -U, +U, -D. A streaming read of a primary-key table needs it (its deletes are rows too)."""


def read_schema(layout: SparkTable, options: Mapping[str, str]) -> pa.Schema:
    """What a read delivers: the table's columns, after `rowkind` when asked for."""
    if flag(options, ROWKIND):
        return pa.schema([pa.field(ROWKIND, pa.string(), False), *layout.value_schema])
    return layout.value_schema


class CoordinatorSource(DataSource):
    """One table of a coordinator, named by the load/save path or the `table` option."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return spark_schema(read_schema(self._table(), self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        from coordinator_client.spark.batch_read import FILTER_PUSHDOWN, FilteringTableReader, TableReader

        reader = FilteringTableReader if flag(self.options, FILTER_PUSHDOWN) else TableReader
        return reader(self._connection(), self._table(), self.options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from coordinator_client.spark.batch_write import TableWriter

        return TableWriter(self._job(schema, overwrite), self.options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from coordinator_client.spark.stream_write import StreamWriter, query_user

        if overwrite:
            raise OptionError("outputMode", "a stream appends to the table; complete mode would overwrite it")
        if "transaction" in self.options:
            raise OptionError(
                "transaction", "a stream commits each micro-batch; use foreachBatch with transaction()"
            )
        return StreamWriter(self._job(schema, False, commit_user=query_user(self.options)))

    def _job(self, schema: StructType, overwrite: bool, *, commit_user: str | None = None) -> WriteJob:
        from coordinator_client.spark.write_job import WriteJob

        return WriteJob.plan(
            self._connection(), self._table(), self.options, schema, overwrite, commit_user=commit_user
        )

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from coordinator_client.spark.stream_read import ChangeReader

        return ChangeReader(self._connection(), self._table(), self.options, schema)

    def _connection(self) -> Connection:
        return Connection.of(self.options)

    def _table(self) -> SparkTable:
        """The table as the coordinator describes it now; asked once per data source instance."""
        cached: SparkTable | None = getattr(self, "_layout", None)
        if cached is None:
            with self._connection().client() as client:
                cached = SparkTable.of(client.get_table(self._connection().table))
            self._layout = cached
        return cached


def client_options(client: CoordinatorClient) -> dict[str, str]:
    """The options that reach the coordinator as `client` does: its URL, token and timeout."""
    options = {"url": client.base_url}
    if client.token is not None:
        options["token"] = client.token
    if client.timeout is not None:
        options["timeout"] = str(client.timeout)
    return options


def register(spark: SparkSession) -> None:
    """Make `format("paimon-coordinator")` known to `spark`, and let readers that ask for filters
    (option `filter-pushdown`) take them: Spark hands a Python data source filters only when
    `spark.sql.python.filterPushdown.enabled` is set, and fails a reader that asks without it."""
    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(CoordinatorSource)
