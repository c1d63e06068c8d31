"""What the example jobs share: the coordinator's client and a local Spark session."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from coordinator_client import CoordinatorClient

DEFAULT_URL = "http://127.0.0.1:8080"


def coordinator_url() -> str:
    """The first command-line argument, else the embedded default that `make serve` starts."""
    return sys.argv[1] if len(sys.argv) > 1 else DEFAULT_URL


def coordinator_client(url: str) -> CoordinatorClient:
    """With COORDINATOR_TOKEN set, its bearer token goes with every call (a writer token for the jobs)."""
    return CoordinatorClient(url, token=os.environ.get("COORDINATOR_TOKEN"))


def spark_session(app: str) -> SparkSession:
    # Executors must run this same interpreter: it has the client installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session
