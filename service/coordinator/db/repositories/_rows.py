"""Helpers shared by the repository modules."""

from __future__ import annotations

from sqlalchemy import Connection, RowMapping
from sqlalchemy.sql.expression import Executable


def first(conn: Connection, query: Executable) -> RowMapping | None:
    """The first row of a query as a mapping, or None."""
    return conn.execute(query).mappings().first()
