"""Paimon's REST catalog, driven by unmodified pypaimon 2.1.0 against a real uvicorn server: config,
databases and tables, and the errors the clients read (Paimon's ErrorResponse, 404 by resource type,
409, 501 for what the coordinator does not serve). Runs on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import httpx
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema
from pypaimon.api.rest_exception import NoSuchResourceException, NotImplementedException
from pypaimon.catalog.catalog_exception import (
    DatabaseAlreadyExistException,
    DatabaseNotExistException,
    TableAlreadyExistException,
    TableNotExistException,
)

from coordinator.settings import Settings
from coordinator_client import CoordinatorClient
from tests.support.paimon_files import file_exists, table_request
from tests.support.rest_writers import CATALOG_NAME, rest_catalog
from tests.support.served import LiveServer

AUTH = {"Authorization": "Bearer any-token"}
P = f"/v1/{CATALOG_NAME}"
EVENTS = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def paimon_schema(**kwargs: Any) -> Schema:
    return Schema.from_pyarrow_schema(EVENTS, **kwargs)


def error(response: httpx.Response, status: int) -> dict[str, Any]:
    """The body of an error answer, checked to be Paimon's ErrorResponse with `code` = the status."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"message", "resourceType", "resourceName", "code"}
    assert body["code"] == status
    return body


def test_config_names_the_prefix_and_refuses_other_warehouses(http: httpx.Client) -> None:
    answer = http.get("/v1/config", params={"warehouse": CATALOG_NAME}, headers=AUTH)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"defaults": {"prefix": CATALOG_NAME}, "overrides": {}}
    # pypaimon 2.1.0 encodes the warehouse once more than it should: decoded until it stays the same
    # ("%2570aimon" arrives, "%70aimon" after the one decoding every query gets, then "paimon").
    twice = http.get("/v1/config?warehouse=%2570aimon", headers=AUTH)
    assert twice.status_code == 200, twice.text
    assert (
        "elsewhere"
        in error(http.get("/v1/config", params={"warehouse": "elsewhere"}, headers=AUTH), 404)["message"]
    )
    error(http.get("/v1/elsewhere/databases", headers=AUTH), 404)


def test_databases_through_pypaimon(live_server: LiveServer, http: httpx.Client) -> None:
    catalog = rest_catalog(live_server.url)
    for name in ("sales", "ops", "archive"):
        catalog.create_database(name, False, {"team": "revenue"} if name == "sales" else None)
    with pytest.raises(DatabaseAlreadyExistException):
        catalog.create_database("sales", False)
    catalog.create_database("sales", True)  # ignore_if_exists reads the 409
    assert catalog.list_databases() == ["archive", "ops", "sales"]

    page = catalog.list_databases_paged(max_results=2)
    assert page.elements == ["archive", "ops"]
    assert catalog.list_databases_paged(max_results=2, page_token=page.next_page_token).elements == ["sales"]
    assert catalog.list_databases_paged(database_name_pattern="ar%").elements == ["archive"]

    sales = catalog.get_database("sales")
    assert sales.options["team"] == "revenue"
    assert sales.options["location"].endswith("/sales.db")
    with pytest.raises(DatabaseNotExistException):
        catalog.get_database("nowhere")
    body = error(http.get(f"{P}/databases/nowhere", headers=AUTH), 404)
    assert (body["resourceType"], body["resourceName"]) == ("DATABASE", "nowhere")

    altered = http.post(
        f"{P}/databases/sales", json={"removals": ["team", "gone"], "updates": {"tier": "gold"}}, headers=AUTH
    )
    assert altered.json() == {"removed": ["team"], "updated": ["tier"], "missing": ["gone"]}
    twice = http.post(f"{P}/databases/sales", json={"removals": ["tier", "tier", "x", "x"]}, headers=AUTH)
    assert twice.json() == {"removed": ["tier"], "updated": [], "missing": ["x"]}
    assert http.post(f"{P}/databases/sales", json={"updates": {"tier": "gold"}}, headers=AUTH).is_success
    assert catalog.get_database("sales").options["tier"] == "gold"

    catalog.drop_database("ops")
    assert catalog.list_databases() == ["archive", "sales"]
    with pytest.raises(DatabaseNotExistException):
        catalog.drop_database("ops")


def test_tables_through_pypaimon(live_server: LiveServer, http: httpx.Client) -> None:
    catalog = rest_catalog(live_server.url)
    with pytest.raises(NoSuchResourceException) as missing:
        catalog.create_table("db.events", paimon_schema(partition_keys=["dt"]), False)
    assert missing.value.resource_type == "DATABASE"
    catalog.create_database("db", False)
    catalog.create_table("db.events", paimon_schema(partition_keys=["dt"]), False)
    catalog.create_table(
        "db.orders",
        paimon_schema(partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "4"}),
        False,
    )
    with pytest.raises(TableAlreadyExistException):
        catalog.create_table("db.events", paimon_schema(), False)
    assert catalog.list_tables("db") == ["events", "orders"]
    assert catalog.list_tables_paged("db", max_results=1).elements == ["events"]
    assert catalog.list_tables_paged("db", table_name_pattern="ord%").elements == ["orders"]
    assert catalog.list_tables_paged("db", table_name_pattern="events").elements == ["events"]
    with pytest.raises(DatabaseNotExistException):
        catalog.list_tables("nowhere")

    got = http.get(f"{P}/databases/db/tables/orders", headers=AUTH).json()
    native = http.get("/tables/db.orders").json()
    assert got["id"] == native["uuid"]
    assert got["isExternal"] is False
    assert got["path"] == f"file://{native['location']}"
    assert native["location"].endswith("/db.db/orders")
    assert got["schema"]["primaryKeys"] == ["dt", "id"]
    assert got["schema"]["partitionKeys"] == ["dt"]
    assert got["schema"]["options"]["bucket"] == "4"
    assert "path" not in got["schema"]["options"]
    assert [(f["id"], f["name"]) for f in got["schema"]["fields"]] == [(0, "dt"), (1, "id"), (2, "v")]
    assert file_exists(f"{native['location']}/schema/schema-0")

    orders = catalog.get_table("db.orders")
    assert orders.table_schema.primary_keys == ["dt", "id"]
    with pytest.raises(TableNotExistException):
        catalog.get_table("db.nowhere")
    body = error(http.get(f"{P}/databases/db/tables/nowhere", headers=AUTH), 404)
    assert (body["resourceType"], body["resourceName"]) == ("TABLE", "db.nowhere")

    # An empty table: GET snapshot is a 404 SNAPSHOT, which the clients read as "no snapshot yet".
    body = error(http.get(f"{P}/databases/db/tables/events/snapshot", headers=AUTH), 404)
    assert body["resourceType"] == "SNAPSHOT"
    builder = catalog.get_table("db.events").new_read_builder()
    assert builder.new_read().to_arrow(builder.new_scan().plan().splits()).num_rows == 0

    # Dropped as Paimon drops a managed table: its folder goes too, so the name can be used again.
    catalog.drop_table("db.events")
    assert not file_exists(f"{native['location'].removesuffix('orders')}events/schema/schema-0")
    with pytest.raises(TableNotExistException):
        catalog.drop_table("db.events")
    catalog.create_table("db.events", paimon_schema(), False)
    assert catalog.list_tables("db") == ["events", "orders"]

    # Dropping a database drops its tables (the clients refuse a non-empty one unless asked to cascade).
    catalog.drop_database("db", cascade=True)
    assert http.get("/tables").json()["tables"] == []


def test_one_catalog_behind_both_doors(live_server: LiveServer, http: httpx.Client) -> None:
    """A table created through the native API makes its database exist for REST clients, and tables
    created through either door are listed by both."""
    with CoordinatorClient(live_server.url) as client:
        client.create_table(table_request("native_db", "t", {"id": "BIGINT"}))
    catalog = rest_catalog(live_server.url)
    assert catalog.list_databases() == ["native_db"]
    assert catalog.list_tables("native_db") == ["t"]
    catalog.create_table("native_db.u", paimon_schema(), False)
    assert [t["id"] for t in http.get("/tables").json()["tables"]] == ["native_db.t", "native_db.u"]


def test_what_is_not_served_answers_501(live_server: LiveServer, http: httpx.Client) -> None:
    catalog = rest_catalog(live_server.url)
    catalog.create_database("db", False)
    catalog.create_table("db.t", paimon_schema(), False)
    with pytest.raises(NotImplementedException):
        catalog.rest_api.rename_table(*(catalog_identifier(n) for n in ("db.t", "db.u")))
    for method, path in [
        ("GET", f"{P}/databases/db/tables/t/partitions"),
        ("POST", f"{P}/databases/db/views"),  # views are listed (none) and looked up (404), not created
        ("POST", f"{P}/databases/db/tables/t/branches"),
        ("GET", f"{P}/databases/db/tables/t/token"),  # the warehouse is not on S3
        ("GET", f"{P}/databases/db/tables/t%24branch_b1"),
        ("POST", f"{P}/databases/db/tables/t%24branch_b1/commit"),
        ("GET", f"{P}/databases/db/tables/t%24snapshots/snapshot"),
    ]:
        error(http.request(method, path, headers=AUTH, json={}), 501)
    # A method the protocol does not define is no endpoint to build: 405, as on the native API.
    wrong = http.request("PUT", f"{P}/databases/db", headers=AUTH, json={})
    error(wrong, 405)
    assert wrong.headers["Allow"] == "DELETE, GET, POST"
    assert [t["id"] for t in http.get("/tables").json()["tables"]] == ["db.t"]


def catalog_identifier(name: str) -> Any:
    from pypaimon.common.identifier import Identifier

    return Identifier.from_string(name)


@pytest.mark.parametrize(
    ("path", "body", "named"),
    [
        (f"{P}/databases", {"name": "bad name"}, "name"),
        (f"{P}/databases", {"options": {}}, "name"),
        (f"{P}/databases/db/tables", {"identifier": {"database": "db", "object": "t"}}, "schema"),
        (
            f"{P}/databases/db/tables",
            {"identifier": {"database": "other", "object": "t"}, "schema": {"fields": []}},
            "identifier.database",
        ),
        (
            f"{P}/databases/db/tables",
            {
                "identifier": {"database": "db", "object": "t"},
                "schema": {"fields": [{"id": 0, "name": "id", "type": "BIGINT"}], "options": {"path": "/x"}},
            },
            "schema.options.path",
        ),
        (
            f"{P}/databases/db/tables",
            {
                "identifier": {"database": "db", "object": "t"},
                "schema": {"fields": [{"id": 0, "name": "a", "type": {"type": "ARRAY", "element": "INT"}}]},
            },
            "schema.fields[0].type",
        ),
        (
            f"{P}/databases/db/tables",
            {
                "identifier": {"database": "db", "object": "t"},
                "schema": {"fields": [{"id": 0, "name": "id", "type": "NOT A TYPE"}]},
            },
            "fields[0].type",
        ),
        (
            f"{P}/databases/db/tables",
            {
                "identifier": {"database": "db", "object": "t"},
                "schema": {"fields": [{"id": 0, "name": "id", "type": "INT"}], "primaryKeys": ["nope"]},
            },
            "primaryKeys[0]",
        ),
        (f"{P}/databases/db/tables/t/rollback", {"instant": {"type": "branch"}}, "instant"),
    ],
)
def test_bad_requests_are_400_naming_the_field(
    live_server: LiveServer, http: httpx.Client, path: str, body: dict[str, Any], named: str
) -> None:
    rest_catalog(live_server.url).create_database("db", False)
    before = http.get("/tables").json()
    answer = error(http.post(path, json=body, headers=AUTH), 400)
    assert named in answer["message"]
    assert http.get("/tables").json() == before
    assert rest_catalog(live_server.url).list_databases() == ["db"]


def test_the_catalog_name_is_a_setting(settings: Settings) -> None:
    with LiveServer(settings.model_copy(update={"catalog_name": "lake"})) as server:
        catalog = CatalogFactory.create(rest_options(server.url, warehouse="lake"))
        catalog.create_database("db", False)
        assert catalog.list_databases() == ["db"]
        with pytest.raises(NoSuchResourceException):
            CatalogFactory.create(rest_options(server.url, warehouse=CATALOG_NAME))
        with httpx.Client(base_url=server.url) as http:
            error(http.get(f"{P}/databases", headers=AUTH), 404)
            assert http.get("/v1/lake/databases", headers=AUTH).json()["databases"] == ["db"]


def rest_options(url: str, *, warehouse: str) -> dict[str, str]:
    return {"metastore": "rest", "uri": url, "warehouse": warehouse, "token.provider": "bear", "token": "t"}
