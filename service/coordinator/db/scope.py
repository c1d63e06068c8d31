"""TableScope: the part of the catalog a token limited by a grant may read, as the queries filter it.

It lives with the queries (the lowest layer) so that every listing, total and history can be cut to it
in SQL: filtering rows after a LIMIT would give a limited token short or empty pages.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, true
from sqlalchemy.orm import InstrumentedAttribute


@dataclass(frozen=True)
class TableScope:
    """One database, or one table of it (`table_name`)."""

    database: str
    table_name: str | None = None

    def covers(self, table_id: str) -> bool:
        """Whether `table_id` (database.name; database names hold no dot) lies inside."""
        database, _, name = table_id.partition(".")
        return self.covers_table(database, name)

    def covers_table(self, database: str, name: str) -> bool:
        return database == self.database and (self.table_name is None or name == self.table_name)

    def table_ids(self, column: InstrumentedAttribute[str]) -> ColumnElement[bool]:
        """`column` (a table id) inside the scope: the one table, or every `database.` id."""
        if self.table_name is not None:
            return column == f"{self.database}.{self.table_name}"
        # autoescape: `_` is a LIKE wildcard and is allowed in database names.
        return column.startswith(f"{self.database}.", autoescape=True)

    def tables(
        self, database: InstrumentedAttribute[str], name: InstrumentedAttribute[str]
    ) -> ColumnElement[bool]:
        """A table row's (database, name) columns inside the scope."""
        if self.table_name is None:
            return database == self.database
        return and_(database == self.database, name == self.table_name)


def within(scope: TableScope | None, column: InstrumentedAttribute[str]) -> ColumnElement[bool]:
    """The condition a query on table ids adds for `scope`; None reads everything."""
    return true() if scope is None else scope.table_ids(column)
