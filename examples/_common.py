"""What the three example jobs share: the coordinator's address and a local Spark session."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

DEFAULT_URL = "http://127.0.0.1:8080"


def coordinator_url() -> str:
    """The first command-line argument, else the embedded default that `make serve` starts."""
    return sys.argv[1] if len(sys.argv) > 1 else DEFAULT_URL


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
