"""Which database failures mean "the database is unavailable": a retry can succeed.

Down, restarting, shutting down, refusing or dropping connections, out of connections, a pool that
stayed empty past its timeout, a lock or deadlock the database gave up on, SQLite's "database is
locked": each one is `DatabaseUnavailable`, which the API answers 503 with Retry-After on every door
(api/database_errors.py), never 500. Paimon's REST clients resend only 429 and 503, and the native
client resends a 503 (ServiceUnavailable), so each of these costs a writer a wait, not its commit.

A resend is safe even when the failure struck a commit at its commit point: that transaction either
stood or did not, and a commit that stood is recognised by its commitUser and identifier (or its
Idempotency-Key) and answered from its record.

What counts is PEP 249's OperationalError ("errors related to the database's operation and not
necessarily under the control of the programmer": psycopg raises it for connection failures, admin
shutdown, "the database system is starting up", too many connections, serialization failures and
deadlocks, cancelled statements), any DBAPI error SQLAlchemy found to be a disconnect (a closed
connection's InterfaceError among them), a connection the pool found dead, and the pool's timeout;
also a driver's own OperationalError, where the service talks to psycopg without SQLAlchemy (the
live-file index's COPY). Errors of a statement itself (IntegrityError, ProgrammingError, DataError)
stay what they are.
"""

from __future__ import annotations

import sqlite3

import psycopg
from sqlalchemy import exc

from coordinator.errors import Unavailable

RETRY_AFTER_SECONDS = 1
"""A restarting PostgreSQL takes connections again within a second or two."""

DRIVER_FAULTS: tuple[type[Exception], ...] = (psycopg.OperationalError, sqlite3.OperationalError)
"""The drivers' own errors of unavailability, raised where SQLAlchemy does not wrap them."""


class DatabaseUnavailable(Unavailable):
    """The metadata database could not serve the request (down, restarting, out of connections, busy)."""

    code = "DATABASE_UNAVAILABLE"


def unavailable(error: BaseException) -> DatabaseUnavailable | None:
    """`error` as DatabaseUnavailable when it means the database is unavailable, else None."""
    if isinstance(error, exc.TimeoutError):
        reason = "no database connection came free in time"
    elif isinstance(error, exc.DisconnectionError):
        reason = "the database connection was lost"
    elif isinstance(error, (exc.OperationalError, *DRIVER_FAULTS)) or (
        isinstance(error, exc.DBAPIError) and error.connection_invalidated
    ):
        reason = "the database could not serve the request"
    else:
        return None
    return DatabaseUnavailable(f"{reason}; try again", retry_after_seconds=RETRY_AFTER_SECONDS)


def first_line(error: BaseException) -> str:
    """The error's type and first line, for a log line (SQLAlchemy appends the statement and a link)."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:500]
