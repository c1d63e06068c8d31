"""Fixtures of the Flink tests: the coordinator on SQLite (the replica test brings its own PostgreSQL
replicas); the service's database behaviour is covered on both backends by the rest of the suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.databases import fresh_database


@pytest.fixture
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_database("sqlite", request, tmp_path)
