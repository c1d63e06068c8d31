"""Fixtures of the Spark pipeline tests: one local Spark session for the whole run, a live coordinator.

The session is `local[2, 4]`: two worker threads, and up to four attempts per task, so a test can make a
task fail once and see Spark retry it (plain `local[2]` gives every task a single attempt).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from coordinator_client import CoordinatorClient
from tests.support.databases import fresh_database
from tests.support.seaweed import SeaweedFS
from tests.support.served import LiveServer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark(seaweedfs: SeaweedFS) -> Iterator[SparkSession]:
    # The S3 store first: Spark's Python workers take their AWS_* environment from the driver's at start.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2,4]")
        .appName("coordinator-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def client(live_server: LiveServer) -> Iterator[CoordinatorClient]:
    with CoordinatorClient(live_server.url, timeout=120) as c:
        yield c


@pytest.fixture
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """PostgreSQL only: these tests are about the Spark side, and the service's database behaviour is
    covered on both backends by the rest of the suite (the examples' test runs on SQLite)."""
    return fresh_database("postgres", request, tmp_path)
