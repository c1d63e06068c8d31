"""Fixtures of the Flink tests: the coordinator on SQLite (the replica test brings its own PostgreSQL
replicas); the service's database behaviour is covered on both backends by the rest of the suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.flink.jobs import FlinkJob
from tests.support.databases import fresh_database


@pytest.fixture
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_database("sqlite", request, tmp_path)


@pytest.fixture(autouse=True)
def no_job_left() -> Iterator[None]:
    """A job a failing test left running is killed with its JVM, not left to the next test."""
    yield
    while FlinkJob.started:
        job = FlinkJob.started.pop()
        if job.process.poll() is None:
            job.kill()
