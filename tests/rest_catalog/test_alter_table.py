"""ALTER TABLE through Paimon's REST catalog (`POST {T}`, Paimon's schema changes): pypaimon adds a column
and sets an option, the coordinator writes the next schema, and rows written before and after read in
the new schema (old files read null in the new column). Refusals change nothing."""

from __future__ import annotations

import httpx
import pyarrow as pa
import pytest
from pypaimon.api.rest_exception import BadRequestException
from pypaimon.catalog.catalog_exception import TableNotExistException
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange

from tests.support.paimon_files import file_exists, tree_digest
from tests.support.rest_writers import CATALOG_NAME, create_rest_table, read_rows, rest_catalog, write_rows
from tests.support.served import LiveServer

BEFORE = pa.schema([("id", pa.int64()), ("v", pa.string())])
AFTER = pa.schema([("id", pa.int64()), ("v", pa.string()), ("score", pa.float64())])
AUTH = {"Authorization": "Bearer any-token"}


def test_a_column_added_through_rest_reads_null_in_old_rows(
    live_server: LiveServer, http: httpx.Client
) -> None:
    catalog = rest_catalog(live_server.url)
    create_rest_table(catalog, "db.events", BEFORE)
    write_rows(catalog.get_table("db.events"), pa.Table.from_pylist([{"id": 1, "v": "old"}], schema=BEFORE))

    catalog.alter_table(
        "db.events",
        [
            SchemaChange.add_column("score", AtomicType("DOUBLE"), "a new column"),
            SchemaChange.set_option("k", "v"),
        ],
    )
    got = http.get(f"/v1/{CATALOG_NAME}/databases/db/tables/events", headers=AUTH).json()
    assert got["schemaId"] == 1
    assert [f["name"] for f in got["schema"]["fields"]] == ["id", "v", "score"]
    assert got["schema"]["options"]["k"] == "v"
    location = http.get("/tables/db.events").json()["location"]
    assert file_exists(f"{location}/schema/schema-1")

    table = catalog.get_table("db.events")
    write_rows(table, pa.Table.from_pylist([{"id": 2, "v": "new", "score": 0.5}], schema=AFTER))
    assert read_rows(catalog.get_table("db.events")) == [
        {"id": 1, "v": "old", "score": None},
        {"id": 2, "v": "new", "score": 0.5},
    ]
    assert http.get("/tables/db.events/commits").json()["commits"][1]["action"] == "alter-table"

    before = (tree_digest(location), http.get("/tables/db.events").json())
    with pytest.raises(BadRequestException, match="changes"):
        catalog.alter_table("db.events", [SchemaChange.drop_column("nope")])
    with pytest.raises(TableNotExistException):
        catalog.alter_table("db.nowhere", [SchemaChange.set_option("k", "v")])
    assert (tree_digest(location), http.get("/tables/db.events").json()) == before
