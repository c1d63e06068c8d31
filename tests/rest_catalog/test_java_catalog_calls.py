"""What Paimon's Java catalog (Flink's, through Paimon's connector) needs from the REST door beyond what
pypaimon asks, each found by running Flink SQL against the coordinator (tests/flink/):

- Views: Flink's catalog asks for a view whenever a table is missing (so every CREATE TABLE IF NOT
  EXISTS) and lists views in SHOW TABLES. A 501 there failed the statement; the coordinator keeps no
  views, so it answers an empty list and 404 VIEW.
- `owner`: Java copies it into the table's options as it is, and Flink refuses options holding a null
  ("properties cannot have null keys or values"), so a table or database is never answered without one.

Runs on SQLite and PostgreSQL."""

from __future__ import annotations

import httpx

from tests.support.rest_writers import CATALOG_NAME, rest_catalog
from tests.support.served import LiveServer

AUTH = {"Authorization": "Bearer any-token"}
P = f"/v1/{CATALOG_NAME}"


def _with_table(live_server: LiveServer) -> None:
    import pyarrow as pa
    from pypaimon import Schema

    catalog = rest_catalog(live_server.url)
    catalog.create_database("db", False)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(pa.schema([("id", pa.int64())])), False)


def test_views_are_none_rather_than_not_served(live_server: LiveServer, http: httpx.Client) -> None:
    _with_table(live_server)
    listed = http.get(f"{P}/databases/db/views", headers=AUTH)
    assert listed.status_code == 200, listed.text
    assert listed.json()["views"] == []
    missing = http.get(f"{P}/databases/db/views/t", headers=AUTH)
    assert missing.status_code == 404, missing.text
    assert missing.json() == {
        "message": missing.json()["message"],
        "resourceType": "VIEW",
        "resourceName": "db.t",
        "code": 404,
    }
    # A database that does not exist is said so first, as for its tables.
    for path in (f"{P}/databases/nodb/views", f"{P}/databases/nodb/views/v"):
        gone = http.get(path, headers=AUTH)
        assert gone.status_code == 404, gone.text
        assert gone.json()["resourceType"] == "DATABASE"
    # Creating one is still not served.
    assert http.post(f"{P}/databases/db/views", headers=AUTH, json={}).status_code == 501


def test_tables_and_databases_always_name_an_owner(live_server: LiveServer, http: httpx.Client) -> None:
    _with_table(live_server)
    for path in (f"{P}/databases/db/tables/t", f"{P}/databases/db"):
        answer = http.get(path, headers=AUTH)
        assert answer.status_code == 200, answer.text
        owner = answer.json()["owner"]
        assert isinstance(owner, str), (path, answer.json())
        assert owner, (path, answer.json())
