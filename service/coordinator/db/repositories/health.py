"""The database's health check."""

from __future__ import annotations

from sqlalchemy import Connection, select


def ping(conn: Connection) -> None:
    """One round trip (`SELECT 1`): raises when the database does not answer."""
    conn.execute(select(1))
