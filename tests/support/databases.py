"""Fresh databases for tests and benchmarks: PostgreSQL ones on the server at 127.0.0.1:5432, and the
one metadata database of a test (a new SQLite file, or the session's PostgreSQL emptied)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, select, text

from coordinator.db.migrate import upgrade
from coordinator.db.models import Base
from coordinator.services import Services

PG_SERVER = os.environ.get("COORDINATOR_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432")

OWNED_TABLES = tuple(name for name in Base.metadata.tables if name != "alembic_version")
"""The tables the service owns, emptied between PostgreSQL tests."""


def fresh_database(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated SQLite file in `tmp_path`, or the session's PostgreSQL database (`pg_url`) emptied."""
    if backend == "sqlite":
        sqlite_url = f"sqlite:///{tmp_path}/coordinator.db"
        upgrade(sqlite_url)
        return sqlite_url
    url: str = request.getfixturevalue("pg_url")
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {', '.join(OWNED_TABLES)} RESTART IDENTITY CASCADE"))
    engine.dispose()
    return url


@contextmanager
def postgres_database(prefix: str, server: str = PG_SERVER) -> Iterator[str]:
    """A new, empty database named `<prefix>_<random>` on `server`; dropped on exit, even after a failure."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(f"{server}/postgres", isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield f"{server}/{name}"
        finally:
            # FORCE: a service that failed to stop must not keep the database alive.
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def database_digest(api: TestClient, url: str) -> dict[str, list[str]]:
    """Every row of every table the service owns, to show a request changed none; taken once the
    finishes of the commits the service answered have run (usecases/hold_ends.py)."""
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    services.holds.ends.settled()
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {
                name: sorted(repr(tuple(row)) for row in conn.execute(select(table)))
                for name, table in Base.metadata.tables.items()
            }
    finally:
        engine.dispose()
