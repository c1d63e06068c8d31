"""A table as the commit path sees it, and how table ids are made and split."""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.db import repositories as repo
from coordinator.domain.table_schema import TableShape
from coordinator.storage.layout import TableLayout


@dataclass(frozen=True)
class Table:
    """A table as the commit path sees it; immutable, cached per id."""

    id: str
    database: str
    name: str
    uuid: str
    location: str
    shape: TableShape
    layout: TableLayout

    @property
    def lock_id(self) -> str:
        return f"{TABLE_LOCK_PREFIX}{self.id}"


TABLE_LOCK_PREFIX = "table:"


def version_of(table: Table) -> repo.TableVersion:
    """Which table and schema `table` was read as: what its row must still say for it to be current."""
    return repo.TableVersion(table.uuid, table.shape.schema.id)


def table_id_of(database: str, name: str) -> str:
    return f"{database}.{name}"


def split_table_id(table_id: str) -> tuple[str, str]:
    """(database, name); database names hold no dot, so the first one separates them."""
    database, _, name = table_id.partition(".")
    return database, name
