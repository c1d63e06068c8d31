"""pypaimon-rust 0.4.0, a second and independent REST client: its SQL creates a schema and a table and
inserts twice through the coordinator; then pypaimon reads the same table, and a native commit through
the coordinator's own client follows on the same head."""

from __future__ import annotations

from typing import Any

import httpx
from pypaimon_rust.datafusion import SQLContext

from coordinator_client import CoordinatorClient
from tests.support.paimon_files import PaimonTable
from tests.support.rest_writers import CATALOG_NAME, read_rows, rest_catalog
from tests.support.served import LiveServer

INSERTS = [
    [{"id": 1, "dt": "a", "amount": 1.5}, {"id": 2, "dt": "b", "amount": 2.5}],
    [{"id": 3, "dt": "a", "amount": 3.5}],
]


def sql_context(url: str) -> SQLContext:
    context = SQLContext()
    options = {
        "metastore": "rest",
        "uri": url,
        "warehouse": CATALOG_NAME,
        "token.provider": "bear",
        "token": "t",
    }
    context.register_catalog("coordinator", options, default_database="")
    context.set_current_catalog("coordinator")
    return context


def values(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"({r['id']}, '{r['dt']}', {r['amount']})" for r in rows)


def by_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: int(r["id"]))


def test_sql_through_the_coordinator_then_pypaimon_then_a_native_commit(
    live_server: LiveServer, http: httpx.Client
) -> None:
    context = sql_context(live_server.url)
    context.sql("CREATE SCHEMA sales")
    context.sql("CREATE TABLE sales.orders (id BIGINT, dt STRING, amount DOUBLE) PARTITIONED BY (dt)")
    for rows in INSERTS:
        [inserted] = context.sql(f"INSERT INTO sales.orders VALUES {values(rows)}")
        assert inserted.to_pylist() == [{"count": len(rows)}]
    expected = [r for rows in INSERTS for r in rows]
    selected = [r for batch in context.sql("SELECT * FROM sales.orders") for r in batch.to_pylist()]
    assert by_id(selected) == expected

    table = http.get("/tables/sales.orders").json()
    assert table["latestSnapshotId"] == 2
    history = http.get("/tables/sales.orders/commits").json()["commits"]
    assert sorted(s["id"] for c in history if c["outcome"] == "committed" for s in c["snapshots"]) == [1, 2]

    assert by_id(read_rows(rest_catalog(live_server.url).get_table("sales.orders"))) == expected

    native = PaimonTable(table)
    late = [{"id": 4, "dt": "b", "amount": 4.5}]
    request = {
        "commitUser": "native-job",
        "messages": [native.append_message(late)],
    }
    with CoordinatorClient(live_server.url) as client:
        committed = client.commit("sales.orders", request)
    assert [s.id for s in committed.snapshots] == [3]
    assert by_id(read_rows(rest_catalog(live_server.url).get_table("sales.orders"))) == expected + late
    selected = [
        r
        for batch in sql_context(live_server.url).sql("SELECT * FROM sales.orders")
        for r in batch.to_pylist()
    ]
    assert by_id(selected) == expected + late
