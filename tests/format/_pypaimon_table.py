"""Builds a small real pypaimon table (filesystem catalog) for compatibility tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from tests.support.paimon_files import PaimonTable, pypaimon_table

ARROW_SCHEMA = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("v", pa.float64())]
)
BATCHES: list[dict[str, list[Any]]] = [
    {
        "dt": ["2024-01-01", "2024-01-01", "2024-01-01", "2024-01-02", "2024-01-02"],
        "id": [1, 2, 3, 4, 5],
        "name": ["a", "b", None, "d", "e"],
        "v": [1.0, 2.0, 3.0, 4.0, 5.0],
    },
    {"dt": ["2024-01-02", "2024-01-03"], "id": [5, 6], "name": ["x", "y"], "v": [9.0, 6.0]},
]
# Live rows after both commits (id 5 updated by the second batch).
EXPECTED_ROWS = [
    ("2024-01-01", 1, "a", 1.0),
    ("2024-01-01", 2, "b", 2.0),
    ("2024-01-01", 3, None, 3.0),
    ("2024-01-02", 4, "d", 4.0),
    ("2024-01-02", 5, "x", 9.0),
    ("2024-01-03", 6, "y", 6.0),
]


class PypaimonTable(PaimonTable):
    """A table pypaimon created and wrote itself; `table` is pypaimon's own FileStoreTable of it."""

    def __init__(self, table: Any, location: Path, table_id: str) -> None:
        schema = json.loads((location / "schema" / "schema-0").read_text())
        super().__init__({"id": table_id, "location": str(location), "schema": schema})
        self.table = table


def build_pk_table(warehouse: Path) -> PypaimonTable:
    """Partitioned (dt) primary-key (dt, id) table with 2 buckets and two batch commits."""
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", True)
    schema = Schema.from_pyarrow_schema(
        ARROW_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "2"}
    )
    catalog.create_table("db.t", schema, False)
    table = catalog.get_table("db.t")
    for batch in BATCHES:
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        write.write_arrow(pa.Table.from_pydict(batch, schema=ARROW_SCHEMA))
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()
    return PypaimonTable(catalog.get_table("db.t"), warehouse / "db.db" / "t", "db.t")


def read_rows(warehouse: Path) -> list[tuple[Any, ...]]:
    """All live rows of db.t as read by a fresh pypaimon catalog, sorted by id."""
    rows = pypaimon_table(warehouse, "db.t").to_pylist()
    return sorted((r["dt"], r["id"], r["name"], r["v"]) for r in rows)
