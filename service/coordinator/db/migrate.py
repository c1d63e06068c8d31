"""`alembic upgrade head` from inside the service, wherever the package was installed.

Replicas started together on a fresh database all run the upgrade at start. Alembic itself does not
serialise them: each sees no `alembic_version`, and all but one crash creating the same tables. So the
upgrade runs under a database-wide migration lock, taken beside Alembic's connection and held until it
is done: the first replica migrates, the others wait, then find the database at head and do nothing.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

MIGRATION_LOCK_KEY = 7_261_736_105_364_275_200
"""The PostgreSQL advisory lock key of the migration (a bigint; any fixed value no one else uses)."""

MIGRATION_LOCK_NAME = "paimon-coordinator-migration"
"""The MySQL/MariaDB named lock of the migration."""

MIGRATION_LOCK_WAIT_SECONDS = 600
"""How long a MySQL/MariaDB replica waits for another's migration before giving up."""


def migrations_dir() -> Path:
    """The Alembic scripts: shipped inside the wheel, or the repository's top-level folder in a checkout."""
    packaged = Path(__file__).resolve().parent.parent / "migrations"
    if (packaged / "env.py").exists():
        return packaged
    return Path(__file__).resolve().parents[3] / "migrations"


def alembic_config(database_url: str) -> Config:
    """An Alembic Config pointing at our scripts and the given database."""
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade(database_url: str) -> None:
    """Bring the database schema to the newest revision, once, however many replicas ask at once."""
    with migration_lock(database_url):
        command.upgrade(alembic_config(database_url), "head")


@contextmanager
def migration_lock(database_url: str) -> Iterator[None]:
    """Hold the database's migration lock: one holder at a time per database, across processes.

    PostgreSQL: a session advisory lock; MySQL/MariaDB: a named lock (both are released by the server
    if this process dies). SQLite: an exclusive flock on the database file itself, which SQLite's own
    POSIX byte-range locks do not interact with; an in-memory database has no one to race.

    Raises:
        TimeoutError: MySQL/MariaDB only, when another migration held the lock past the wait.
        ValueError: a database the service does not support.
    """
    url = make_url(database_url)
    backend = url.get_backend_name()
    if backend == "sqlite":
        with _file_lock(url.database):
            yield
    elif backend == "postgresql":
        with _session(database_url) as conn:
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY})
    elif backend in ("mysql", "mariadb"):
        with _session(database_url) as conn:
            got = conn.execute(
                text("SELECT GET_LOCK(:name, :wait)"),
                {"name": MIGRATION_LOCK_NAME, "wait": MIGRATION_LOCK_WAIT_SECONDS},
            ).scalar()
            if got != 1:
                raise TimeoutError(f"another replica held {MIGRATION_LOCK_NAME} past the wait")
            try:
                yield
            finally:
                conn.execute(text("SELECT RELEASE_LOCK(:name)"), {"name": MIGRATION_LOCK_NAME})
    else:
        raise ValueError(f"no migration lock for {backend} databases")


@contextmanager
def _session(database_url: str) -> Iterator[Connection]:
    """A connection of its own, beside Alembic's, in autocommit: the lock belongs to the session, and no
    transaction of ours stays open while Alembic migrates."""
    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")
    finally:
        engine.dispose()


@contextmanager
def _file_lock(database: str | None) -> Iterator[None]:
    if not database or database == ":memory:" or database.startswith("file:"):
        yield  # in memory (or a URI filename SQLite resolves itself): nothing shared to lock
        return
    # Opening for append creates an absent database file empty, which SQLite takes as a new database.
    with open(database, "ab") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
