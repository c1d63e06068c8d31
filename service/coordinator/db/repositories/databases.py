"""Database rows: the catalog's databases, their options and when they were created."""

from __future__ import annotations

from sqlalchemy import Connection, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite

from coordinator.db.models import DatabaseRow, TableRow

_T = DatabaseRow.__table__


def insert_database(conn: Connection, name: str, options: dict[str, str], *, now: float) -> bool:
    """Record the database unless it exists; True when this call created it (a racing creator loses
    here without an error, so a table's creation can make its database exist in its own transaction)."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    statement = (
        dialect.insert(_T)
        .values(name=name, options=options, created_at=now)
        .on_conflict_do_nothing(index_elements=[_T.c.name])
        # RETURNING, not rowcount, which the PostgreSQL engine answers -1 for this statement.
        .returning(_T.c.name)
    )
    return conn.execute(statement).first() is not None


def get_database(conn: Connection, name: str) -> DatabaseRow | None:
    row = conn.execute(select(_T).where(_T.c.name == name)).mappings().first()
    return DatabaseRow(**row) if row is not None else None


def list_databases(conn: Connection, *, limit: int, after: str | None, prefix: str | None) -> list[str]:
    """At most `limit` names in order, those after `after` (keyset pagination on the primary key)."""
    query = select(_T.c.name)
    if after is not None:
        query = query.where(_T.c.name > after)
    if prefix:
        query = query.where(_T.c.name.startswith(prefix, autoescape=True))
    return list(conn.execute(query.order_by(_T.c.name).limit(limit)).scalars())


def set_database_options(conn: Connection, name: str, options: dict[str, str]) -> None:
    conn.execute(update(DatabaseRow).where(DatabaseRow.name == name).values(options=options))


def delete_database(conn: Connection, name: str) -> bool:
    return conn.execute(delete(DatabaseRow).where(DatabaseRow.name == name)).rowcount == 1


def table_names(conn: Connection, database: str) -> list[str]:
    """Every table of `database`, by name."""
    query = select(TableRow.name).where(TableRow.database == database).order_by(TableRow.name)
    return list(conn.execute(query).scalars())
