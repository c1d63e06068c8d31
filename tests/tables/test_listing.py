"""GET /tables pages: every table exactly once across pages, in (database, name) order, with the
database and name-prefix filters; a bad limit or page token is a 422 that names the field and changes
nothing. The same paging drives the overview's tables and the client's iterator."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from coordinator_client import BadRequest, CoordinatorClient
from tests.support.paimon_files import create_table, tree_digest
from tests.support.served import LiveServer

NAMES = {
    "alpha": ["a_1", "a_2", "ab", "abc", "b", "orders", "orders_2024", "orders_2025"],
    "beta": ["a_1", "ab", "orders"],
    "gamma_x": ["z"],
}
"""`_` is a wildcard to SQL LIKE: the prefix "a_" must find a_1 and a_2, never ab or abc."""
ALL = sorted((db, name) for db, names in NAMES.items() for name in names)


@pytest.fixture
def tables(http: httpx.Client) -> list[tuple[str, str]]:
    for database, names in NAMES.items():
        for name in names:
            create_table(http, database, name, {"id": "BIGINT"})
    return ALL


def pages(http: httpx.Client, path: str = "/tables", **params: Any) -> Iterator[list[tuple[str, str]]]:
    token = None
    while True:
        response = http.get(path, params={**params, **({"page_token": token} if token else {})})
        assert response.status_code == 200, response.text
        body = response.json()
        listed = body["tables"]
        if path == "/tables":
            yield [(t["database"], t["name"]) for t in listed]
        else:
            yield [tuple(t["tableId"].split(".", 1)) for t in listed]
        token = body["nextPageToken"]
        if token is None:
            return


FILTERS: list[tuple[dict[str, str], list[tuple[str, str]]]] = [
    ({}, ALL),
    ({"database": "alpha"}, [t for t in ALL if t[0] == "alpha"]),
    ({"name_prefix": "a_"}, [("alpha", "a_1"), ("alpha", "a_2"), ("beta", "a_1")]),
    ({"name_prefix": "orders"}, [t for t in ALL if t[1].startswith("orders")]),
    ({"database": "alpha", "name_prefix": "ab"}, [("alpha", "ab"), ("alpha", "abc")]),
    ({"database": "gamma"}, []),
    ({"name_prefix": "nothing"}, []),
]


@pytest.mark.parametrize("limit", [1, 2, 3, 1000])
@pytest.mark.parametrize(("filters", "expected"), FILTERS, ids=[str(f) for f, _ in FILTERS])
def test_pages_give_each_table_once_in_order(
    http: httpx.Client, tables: list[tuple[str, str]], limit: int, filters: dict[str, str], expected: Any
) -> None:
    for path in ("/tables", "/ops/overview"):
        got = list(pages(http, path, limit=limit, **filters))
        assert [t for page in got for t in page] == expected
        assert all(len(page) <= limit for page in got)
        assert all(len(page) == limit for page in got[:-1])
        assert len(got) == max(1, -(-len(expected) // limit))  # no trailing empty page


def test_pages_stay_whole_when_tables_come_and_go_between_them(
    http: httpx.Client, tables: list[tuple[str, str]]
) -> None:
    """Keyset paging: a table created before the page boundary or dropped after it shifts nothing."""
    first = http.get("/tables", params={"limit": 4}).json()
    create_table(http, "alpha", "a_0", {"id": "BIGINT"})  # sorts into the page already read
    assert http.delete("/tables/alpha.orders").status_code == 204  # not read yet
    rest = [t for page in pages(http, limit=4, page_token=first["nextPageToken"]) for t in page]
    seen = [(t["database"], t["name"]) for t in first["tables"]] + rest
    assert seen == [t for t in ALL if t != ("alpha", "orders")]


def test_default_page_is_100(http: httpx.Client) -> None:
    for n in range(101):
        create_table(http, "many", f"t{n:03d}", {"id": "BIGINT"})
    first = http.get("/tables").json()
    assert len(first["tables"]) == 100
    assert first["nextPageToken"] is not None
    assert [t["name"] for t in http.get("/tables", params={"page_token": first["nextPageToken"]}).json()[
        "tables"
    ]] == ["t100"]  # fmt: skip


BAD = [
    ({"limit": 0}, "limit"),
    ({"limit": 1001}, "limit"),
    ({"limit": "ten"}, "limit"),
    ({"page_token": "not-a-token!"}, "page_token"),
    ({"page_token": "WzFd"}, "page_token"),  # base64 of [1]: JSON, but no (database, name)
    ({"page_token": "x" * 601}, "page_token"),
    ({"database": "no.dots"}, "database"),
    ({"name_prefix": "n" * 129}, "name_prefix"),
]


@pytest.mark.parametrize(("params", "field"), BAD, ids=[f for _, f in BAD])
def test_bad_paging_is_a_422_naming_the_field_and_changes_nothing(
    http: httpx.Client, warehouse: Path, tables: list[tuple[str, str]], params: dict[str, Any], field: str
) -> None:
    before = (http.get("/tables", params={"limit": 1000}).json(), tree_digest(warehouse))
    for path in ("/tables", "/ops/overview"):
        response = http.get(path, params=params)
        assert response.status_code == 422, response.text
        assert response.json()["field"] == field
        assert response.json()["code"] == "INVALID_REQUEST"
    assert (http.get("/tables", params={"limit": 1000}).json(), tree_digest(warehouse)) == before


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_client_pages_and_iterates(live_server: LiveServer, tables: list[tuple[str, str]]) -> None:
    with CoordinatorClient(live_server.url) as client:
        page = client.list_tables(limit=2, database="beta")
        assert [t.id for t in page.tables] == ["beta.a_1", "beta.ab"]
        assert page.next_page_token is not None
        rest = client.list_tables(limit=2, database="beta", page_token=page.next_page_token)
        assert ([t.id for t in rest.tables], rest.next_page_token) == (["beta.orders"], None)
        assert [(t.database, t.name) for t in client.iter_tables(page_size=3)] == ALL
        assert [t.id for t in client.iter_tables(name_prefix="a_")] == ["alpha.a_1", "alpha.a_2", "beta.a_1"]
        overview = client.overview(limit=1, name_prefix="orders_")
        assert [t.table_id for t in overview.tables] == ["alpha.orders_2024"]
        assert overview.totals.tables == len(ALL)
        with pytest.raises(BadRequest) as bad:
            client.list_tables(limit=0)
        assert bad.value.field == "limit"
