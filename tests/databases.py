"""Fresh PostgreSQL databases for tests and benchmarks, on the server at 127.0.0.1:5432."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text

PG_SERVER = os.environ.get("COORDINATOR_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432")


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
