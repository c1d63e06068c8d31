"""Spark pipeline: write, read and compact coordinator-managed Paimon tables from PySpark.

Install with the `spark` extra (`pip install 'paimon-coordinator-client[spark]'`). Executors write the
data files; the driver sends one commit per job through the CoordinatorClient.
"""

from coordinator_client.spark.compact import compact
from coordinator_client.spark.read import read
from coordinator_client.spark.write import stream_sink, write

__all__ = ["compact", "read", "stream_sink", "write"]
