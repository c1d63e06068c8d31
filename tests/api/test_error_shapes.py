"""One error shape everywhere (issue 28, item 5): an unknown route, a wrong method, an unknown body field,
a lock nobody holds and a bad option key each get their 4xx in the door's shape (`{code, message,
field}`; under /v1 Paimon's ErrorResponse), and change nothing: the table's files, snapshots and
history are the same before and after. Runs on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from coordinator.app import create_app
from coordinator.settings import Settings
from coordinator_client import CoordinatorClient
from coordinator_client.errors import NotFound
from coordinator_client.models import SetOption
from tests.support.commits import commit, new_file
from tests.support.databases import database_digest
from tests.support.paimon_files import PaimonTable, pk_table, rows_in_bucket, tree_digest
from tests.support.served import LiveServer

PAIMON_ERROR_KEYS = {"message", "resourceType", "resourceName", "code"}


@pytest.fixture
def table(api: TestClient) -> PaimonTable:
    orders = pk_table(api, "orders")
    rows = rows_in_bucket(orders, 0, range(10))
    commit(api, orders, new_file(orders, rows))
    return orders


def state(api: TestClient, database_url: str, table: PaimonTable) -> tuple[Any, ...]:
    """What a refused request must leave as it was: every row the service owns, every file of the table."""
    return database_digest(api, database_url), tree_digest(table.location)


def native_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["code"] == code, body
    assert body["message"], body
    assert set(body) <= {"code", "message", "field"}, body
    return body


def paimon_error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == PAIMON_ERROR_KEYS, body
    assert body["code"] == status
    return body


def test_unknown_routes_and_wrong_methods_answer_in_the_native_shape(
    api: TestClient, table: PaimonTable, database_url: str
) -> None:
    before = state(api, database_url, table)
    assert "/nope" in native_error(api.get("/nope"), 404, "NOT_FOUND")["message"]
    native_error(api.post(f"/tables/{table.id}/nope", json={}), 404, "NOT_FOUND")
    for method, path, allowed in [
        ("PUT", "/tables", "GET, POST"),
        ("DELETE", "/health", "GET"),
        ("PATCH", f"/tables/{table.id}", "GET, DELETE"),
        ("PUT", f"/tables/{table.id}/commits", "GET, POST"),
        ("GET", f"/tables/{table.id}/expire", "POST"),
    ]:
        response = api.request(method, path, json={})
        assert method in native_error(response, 405, "METHOD_NOT_ALLOWED")["message"]
        assert response.headers["Allow"] == allowed, (method, path)
    assert state(api, database_url, table) == before


def test_under_v1_a_wrong_method_is_405_an_unknown_path_404_and_only_a_known_endpoint_501(
    api: TestClient, table: PaimonTable, database_url: str
) -> None:
    before = state(api, database_url, table)
    t = "/v1/paimon/databases/sales/tables/orders"
    for method, path, allowed in [
        ("PUT", "/v1/config", "GET"),
        ("DELETE", "/v1/config", "GET"),
        ("PUT", "/v1/paimon/databases/sales", "DELETE, GET, POST"),
        ("PATCH", t, "DELETE, GET, POST"),
        ("GET", f"{t}/commit", "POST"),
        ("DELETE", f"{t}/snapshot", "GET"),
        ("PUT", f"{t}/partitions", "GET, POST"),  # a path the coordinator does not serve at all
    ]:
        response = api.request(method, path, json={})
        paimon_error(response, 405)
        assert response.headers["Allow"] == allowed, (method, path)
    for path in ("/v1/nope", "/v1/config/x", f"{t}/nowhere", "/v1/"):
        paimon_error(api.get(path), 404)
    for method, path in [
        ("GET", f"{t}/partitions"),
        ("DELETE", "/v1/paimon/databases/sales/views/v"),  # views are listed (none), not dropped
        ("POST", "/v1/paimon/tables/rename"),
        ("POST", f"{t}/replace"),
    ]:
        assert "not served" in paimon_error(api.request(method, path, json={}), 501)["message"]
    assert state(api, database_url, table) == before


def test_bodiless_actions_refuse_unknown_fields(
    api: TestClient, table: PaimonTable, database_url: str
) -> None:
    before = state(api, database_url, table)
    expire = api.post(f"/tables/{table.id}/expire", json={"olderThan": 1})
    assert native_error(expire, 422, "INVALID_REQUEST")["field"] == "olderThan"
    release = api.post(f"/locks/table:{table.id}/release", json={"force": True})
    assert native_error(release, 422, "INVALID_REQUEST")["field"] == "force"
    assert state(api, database_url, table) == before
    # Without a body, or with an empty one, the action runs.
    assert api.post(f"/tables/{table.id}/expire").status_code == 200
    assert api.post(f"/tables/{table.id}/expire", json={}).status_code == 200


def test_releasing_a_lock_nobody_holds_is_404_and_records_nothing(
    api: TestClient, table: PaimonTable, database_url: str
) -> None:
    before = state(api, database_url, table)
    for lock_id in (f"table:{table.id}", "table:sales.none", "anything"):
        released = api.post(f"/locks/{lock_id}/release")
        assert lock_id in native_error(released, 404, "LOCK_NOT_FOUND")["message"]
    assert api.get("/audit").json()["entries"] == []
    assert state(api, database_url, table) == before
    # A held one is released, and that is audited.
    services = api.app.state.services  # type: ignore[attr-defined]
    lease = services.locks.acquire(f"table:{table.id}", "stuck-job", timeout_seconds=1)
    released = api.post(f"/locks/table:{table.id}/release")
    assert released.status_code == 200, released.text
    assert (released.json()["owner"], released.json()["epoch"]) == ("stuck-job", lease.epoch)
    assert [e["action"] for e in api.get("/audit").json()["entries"]] == ["force-release-lock"]


def test_the_client_sees_a_free_lock_as_not_found(settings: Settings) -> None:
    with LiveServer(settings) as server, CoordinatorClient(server.url) as client:
        with pytest.raises(NotFound) as missing:
            client.release_lock("table:db.free")
        assert missing.value.code == "LOCK_NOT_FOUND"


BAD_OPTIONS: list[tuple[str, bytes, str]] = [
    ("empty key to set", b'{"set": {"": "v"}}', "set"),
    ("empty key to remove", b'{"remove": [""]}', "remove[0]"),
    ("lone surrogate in a key to set", b'{"set": {"\\ud800": "v"}}', "set"),
    ("lone surrogate in a key to remove", b'{"remove": ["k\\udfff"]}', "remove[0]"),
    ("key longer than Paimon's", b'{"set": {"' + b"k" * 257 + b'": "v"}}', "set"),
    ("NUL in a key", b'{"set": {"k\\u0000": "v"}}', "set"),
    ("unknown field", b'{"set": {}, "unset": ["k"]}', "unset"),
]


def test_option_keys_no_schema_change_can_carry_are_422_naming_the_field(
    api: TestClient, table: PaimonTable, database_url: str
) -> None:
    """A fuzzer's keys used to reach SetOption/RemoveOption in the use case, whose ValidationError was a
    500: refused at the edge now, before the table is held."""
    before = state(api, database_url, table)
    for name, body, field in BAD_OPTIONS:
        response = api.patch(
            f"/tables/{table.id}/options", content=body, headers={"content-type": "application/json"}
        )
        assert native_error(response, 422, "INVALID_REQUEST")["field"] == field, name
    assert state(api, database_url, table) == before
    assert api.patch(f"/tables/{table.id}/options", json={"set": {"k": "v"}}).status_code == 200


def test_a_validation_error_below_the_routes_is_a_422_naming_the_field(settings: Settings) -> None:
    """The safety net: a model built from what a request carried, refused below the routes, is the
    request's fault, not a 500 (here a route of the real app building Paimon's setOption change)."""
    app = create_app(settings)

    @app.post("/probe/{key}")
    def probe(key: str) -> None:
        SetOption(key=key.strip(), value="v")

    with TestClient(app) as api:
        body = native_error(api.post("/probe/%20"), 422, "INVALID_REQUEST")
        assert body["field"] == "key"
        assert body["message"].startswith("key: ")
