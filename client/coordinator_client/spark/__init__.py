"""Spark and coordinator-managed Paimon tables: the `paimon-coordinator` data source, and compaction.

Install with the `spark` extra (`pip install 'paimon-coordinator-client[spark]'`), then

    from coordinator_client.spark import register
    register(spark)
    spark.read.format("paimon-coordinator").option("url", url).load("db.t")

Executors write and read the data files; the driver commits once per write through the coordinator.
`write`, `read` and `stream_sink` are the same paths as functions taking a CoordinatorClient;
`transaction` commits the writes of several DataFrames to several tables together.
"""

from coordinator_client.spark.compact import compact
from coordinator_client.spark.read import read
from coordinator_client.spark.source import NAME, CoordinatorSource, register
from coordinator_client.spark.transaction import Transaction, transaction
from coordinator_client.spark.write import stream_sink, write

__all__ = [
    "NAME",
    "CoordinatorSource",
    "Transaction",
    "compact",
    "read",
    "register",
    "stream_sink",
    "transaction",
    "write",
]
