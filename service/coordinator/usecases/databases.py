"""The catalog's databases: create, list, get, alter options and drop (with their tables)."""

from __future__ import annotations

import base64
from dataclasses import dataclass

from sqlalchemy import Engine

from coordinator.clock import Clock
from coordinator.db import repositories as repo
from coordinator.db.repositories import databases as rows
from coordinator.errors import DatabaseAlreadyExists, DatabaseNotFound, InvalidRequest, TableNotFound
from coordinator.usecases.table_locations import CREATED
from coordinator.usecases.tables import Tables, table_id_of


@dataclass(frozen=True)
class Database:
    name: str
    location: str
    options: dict[str, str]
    created_at: float


@dataclass(frozen=True)
class DatabasePage:
    names: list[str]
    next_page_token: str | None


@dataclass(frozen=True)
class OptionChanges:
    """What an alteration did: options set, options removed, and removals of options that were not set."""

    updated: list[str]
    removed: list[str]
    missing: list[str]


class Databases:
    def __init__(self, engine: Engine, tables: Tables, warehouse_root: str, clock: Clock) -> None:
        self._engine = engine
        self._tables = tables
        self._root = warehouse_root
        self._clock = clock

    def create(self, name: str, options: dict[str, str]) -> Database:
        """Raises: DatabaseAlreadyExists."""
        with self._engine.begin() as conn:
            if not rows.insert_database(conn, name, options, now=self._clock.now()):
                raise DatabaseAlreadyExists(f"database {name} already exists")
        return self.get(name)

    def get(self, name: str) -> Database:
        """Raises: DatabaseNotFound."""
        with self._engine.connect() as conn:
            row = rows.get_database(conn, name)
        if row is None:
            raise DatabaseNotFound(f"database {name} does not exist")
        return Database(row.name, self.location(row.name), dict(row.options), row.created_at)

    def location(self, name: str) -> str:
        """Where the coordinator puts the folders of the database's tables (as Paimon does: `<db>.db`)."""
        return f"{self._root}/{name}.db"

    def page(self, *, limit: int, page_token: str | None, prefix: str | None) -> DatabasePage:
        """One page of names in order.

        Raises:
            InvalidRequest: a page token this service did not give out.
        """
        after = _decode(page_token) if page_token else None
        with self._engine.connect() as conn:
            names = rows.list_databases(conn, limit=limit + 1, after=after, prefix=prefix)
        more = len(names) > limit
        return DatabasePage(names[:limit], _encode(names[limit - 1]) if more else None)

    def table_names(self, name: str) -> list[str]:
        """Raises: DatabaseNotFound."""
        with self._engine.connect() as conn:
            if rows.get_database(conn, name) is None:
                raise DatabaseNotFound(f"database {name} does not exist")
            return rows.table_names(conn, name)

    def alter(self, name: str, *, updates: dict[str, str], removals: list[str]) -> OptionChanges:
        """Set and remove options of a database.

        Raises: DatabaseNotFound, InvalidRequest (a key both set and removed).
        """
        both = sorted(set(updates) & set(removals))
        if both:
            raise InvalidRequest(f"options both set and removed: {both}", field="removals")
        with self._engine.begin() as conn:
            row = rows.get_database(conn, name)
            if row is None:
                raise DatabaseNotFound(f"database {name} does not exist")
            options = dict(row.options)
            keys = list(dict.fromkeys(removals))  # a key named twice is removed once
            removed = [k for k in keys if k in options]
            missing = [k for k in keys if k not in options]
            for key in removed:
                del options[key]
            options.update(updates)
            rows.set_database_options(conn, name, options)
        return OptionChanges(sorted(updates), removed, missing)

    def drop(self, name: str) -> list[str]:
        """Drop the database and every table in it (as `drop_table` drops one); the tables dropped.

        Paimon's clients refuse to drop a database that still has tables unless their user asked for a
        cascade, and they check that themselves before they send the drop: a drop that arrives here is
        a cascade.

        Raises: DatabaseNotFound, PurgeRefused (a table's folder is not only its own; the tables
            before it in name order are dropped, the database stays).
        """
        dropped = []
        for table in self.table_names(name):
            try:
                self.drop_table(table_id_of(name, table))
            except TableNotFound:
                continue  # dropped by someone else meanwhile
            dropped.append(table)
        with self._engine.begin() as conn:
            if not rows.delete_database(conn, name):
                raise DatabaseNotFound(f"database {name} does not exist")
        return dropped

    def drop_table(self, table_id: str) -> None:
        """Drop a table as Paimon drops a managed table: its folder goes too when the coordinator made it;
        a table registered by location is only forgotten (its files were found, not made).

        Raises: TableNotFound, PurgeRefused.
        """
        with self._engine.connect() as conn:
            row = repo.get_table(conn, table_id)
        if row is None:
            raise TableNotFound(f"table {table_id} does not exist")
        self._tables.drop(table_id, purge=row.origin == CREATED)


def _encode(last: str) -> str:
    """Opaque to clients: the name the next page starts after."""
    return base64.urlsafe_b64encode(last.encode()).decode().rstrip("=")


def _decode(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except ValueError:
        raise InvalidRequest("not a page token of this service", field="pageToken") from None
