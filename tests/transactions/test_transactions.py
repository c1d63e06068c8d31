"""POST /transactions: several tables' changes committed all or nothing, on both databases.

pypaimon reads every table a transaction committed; a conflict on one table leaves every table (its
snapshots, its files) as it was; a resend answers the recorded snapshots; bad input is refused naming
the field, with nothing changed."""

from __future__ import annotations

import random
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from coordinator.commit.commit_point import commit_point
from coordinator.services import Services
from coordinator_client.models import TransactionRequest
from tests.support.commits import Changes, commit, commit_request, new_file, transaction, transaction_body
from tests.support.paimon_files import (
    PaimonTable,
    create_table,
    deletion_of,
    pk_table,
    pypaimon_rows,
    rows_in_bucket,
    sorted_rows,
    tree_digest,
)
from tests.support.pause import PausedCall
from tests.support.served import LiveServer


def held_at_commit_point(api: TestClient, changes: Changes, **body: Any) -> PausedCall[Any]:
    """The transaction running in the app's own use case, held as it reaches its commit point."""
    request = TransactionRequest.model_validate(transaction_body(changes, **body))
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    return PausedCall(lambda: services.committer.transaction(request), at=commit_point).start()


def latest_id(api: TestClient, table: PaimonTable) -> int | None:
    response = api.get(f"/tables/{table.id}/snapshots/latest")
    return response.json()["id"] if response.status_code == 200 else None


def test_two_tables_move_together_and_pypaimon_reads_both(api: TestClient, warehouse: Path) -> None:
    orders, customers = pk_table(api, "orders"), pk_table(api, "customers")
    order_rows = rows_in_bucket(orders, 0, range(20))
    customer_rows = rows_in_bucket(customers, 1, range(100, 120), dt="b")
    answer = transaction(
        api,
        [
            (
                orders,
                new_file(orders, order_rows),
            ),
            (
                customers,
                new_file(customers, customer_rows),
            ),
        ],
        user="loader",
    )
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["deduplicated"] is False
    assert body["tables"] == [
        {"table": orders.id, "snapshots": [{"id": 1, "commitKind": "APPEND"}]},
        {"table": customers.id, "snapshots": [{"id": 1, "commitKind": "APPEND"}]},
    ]
    assert {"validate", "lockWait", "decide", "publish", "total"} <= set(body["timings"])
    assert pypaimon_rows(warehouse, orders.id) == sorted_rows(order_rows)
    assert pypaimon_rows(warehouse, customers.id) == sorted_rows(customer_rows)
    for table in (orders, customers):
        (record,) = api.get(f"/tables/{table.id}/commits").json()["commits"]
        assert record["commitUser"] == "loader"
        assert record["details"] == {"transaction": [orders.id, customers.id]}
    assert 'coordinator_transactions_total{outcome="committed"} 1.0' in api.get("/metrics").text


def test_a_conflict_on_the_second_table_changes_neither(api: TestClient) -> None:
    orders, customers = pk_table(api, "orders"), pk_table(api, "customers")
    customer_rows = rows_in_bucket(customers, 0, range(30))
    level0 = customers.pk_file(customer_rows, first_sequence=0)
    commit(api, customers, [customers.message(customer_rows[0], newFiles=[level0])])
    # A compaction wins the race for the level-0 file the transaction also compacts away.
    compacted = customers.pk_file(customer_rows, first_sequence=0, level=5)
    commit(
        api,
        customers,
        [customers.message(customer_rows[0], compactBefore=[deletion_of(level0)], compactAfter=[compacted])],
        commitUser=f"compactor-{uuid.uuid4()}",
    )
    order_rows = rows_in_bucket(orders, 0, range(10))
    order_file = orders.pk_file(order_rows, first_sequence=0)
    mine = customers.pk_file(customer_rows, first_sequence=0, level=4)
    before = {t.id: tree_digest(t.location) for t in (orders, customers)}

    answer = transaction(
        api,
        [
            (orders, [orders.message(order_rows[0], newFiles=[order_file])]),
            (
                customers,
                [
                    customers.message(
                        customer_rows[0], compactBefore=[deletion_of(level0)], compactAfter=[mine]
                    )
                ],
            ),
        ],
    )
    assert answer.status_code == 409, answer.text
    conflict = answer.json()["conflict"]
    assert conflict["table"] == customers.id
    assert conflict["type"] == "DELETED_FILE_MISSING"
    assert conflict["files"] == [level0["fileName"]]
    assert conflict["winningSnapshot"]["id"] == 2
    assert latest_id(api, orders) is None
    assert latest_id(api, customers) == 2
    # No manifest, list or snapshot of the transaction stayed behind on either table.
    assert {t.id: tree_digest(t.location) for t in (orders, customers)} == before
    assert api.get(f"/tables/{orders.id}/commits").json()["commits"] == []
    assert 'coordinator_transactions_total{outcome="rejected"} 1.0' in api.get("/metrics").text


def test_a_resend_answers_the_recorded_snapshots(api: TestClient) -> None:
    orders, customers = pk_table(api, "orders"), pk_table(api, "customers")
    order_rows, customer_rows = rows_in_bucket(orders, 0, range(5)), rows_in_bucket(customers, 0, range(5))
    changes = [
        (orders, new_file(orders, order_rows)),
        (
            customers,
            new_file(customers, customer_rows),
        ),
    ]
    first = transaction(api, changes, user="cdc", identifier=7)
    assert first.status_code == 201, first.text
    again = transaction(api, changes, user="cdc", identifier=7)
    assert again.status_code == 200, again.text
    assert again.json()["deduplicated"] is True
    assert again.json()["tables"] == first.json()["tables"]
    assert (latest_id(api, orders), latest_id(api, customers)) == (1, 1)


def test_an_identifier_a_single_commit_used_is_refused(api: TestClient) -> None:
    orders, customers = pk_table(api, "orders"), pk_table(api, "customers")
    rows = rows_in_bucket(orders, 0, range(5))
    body = commit_request(new_file(orders, rows), user="cdc", identifier=9)
    assert api.post(f"/tables/{orders.id}/commits", json=body).status_code == 201
    customer_rows = rows_in_bucket(customers, 0, range(5))
    answer = transaction(
        api,
        [
            (orders, body["messages"]),
            (
                customers,
                new_file(customers, customer_rows),
            ),
        ],
        user="cdc",
        identifier=9,
    )
    assert answer.status_code == 409, answer.text
    assert answer.json()["code"] == "IDENTIFIER_REUSED"
    assert answer.json()["conflict"]["table"] == orders.id
    assert answer.json()["conflict"]["recorded"]["snapshots"] == [{"id": 1, "commitKind": "APPEND"}]
    assert (latest_id(api, orders), latest_id(api, customers)) == (1, None)


@pytest.mark.parametrize(
    ("case", "status", "field"),
    [
        ("no tables", 422, "tables"),
        ("the same table twice", 422, "tables[1].table"),
        ("an unknown table", 404, "tables[1].table"),
        ("more tables than the limit", 422, "tables"),
        ("a bad message in the second table", 422, "tables[1].messages[0].bucket"),
        ("a file of the second table not on storage", 422, "tables[1].messages[0].newFiles[0]"),
    ],
)
def test_bad_transactions_are_refused_naming_the_field_and_change_nothing(
    api: TestClient, case: str, status: int, field: str
) -> None:
    orders, customers = pk_table(api, "orders"), pk_table(api, "customers")
    rows = rows_in_bucket(orders, 0, range(5))
    order_change = {
        "table": orders.id,
        "messages": new_file(orders, rows),
    }
    customer_rows = rows_in_bucket(customers, 0, range(5))
    customer_message = customers.message(
        customer_rows[0], newFiles=[customers.pk_file(customer_rows, first_sequence=0)]
    )
    tables = {
        "no tables": [],
        "the same table twice": [order_change, order_change],
        "an unknown table": [order_change, {"table": "sales.nowhere", "messages": []}],
        "more tables than the limit": [order_change] * 100,
        "a bad message in the second table": [
            order_change,
            {"table": customers.id, "messages": [{**customer_message, "bucket": 7}]},
        ],
        "a file of the second table not on storage": [
            order_change,
            {
                "table": customers.id,
                "messages": [
                    {
                        **customer_message,
                        "newFiles": [{**customer_message["newFiles"][0], "fileName": "data-gone.parquet"}],
                    }
                ],
            },
        ],
    }[case]
    before = {t.id: tree_digest(t.location) for t in (orders, customers)}
    answer = api.post("/transactions", json={"commitUser": "job", "identifier": 1, "tables": tables})
    assert answer.status_code == status, answer.text
    assert answer.json()["field"] == field
    assert (latest_id(api, orders), latest_id(api, customers)) == (None, None)
    assert {t.id: tree_digest(t.location) for t in (orders, customers)} == before


def test_transactions_over_random_pairs_beside_single_commits_land_whole_and_once(
    live_server: LiveServer, http: httpx.Client, warehouse: Path
) -> None:
    """Real threads on a real server: transactions name pairs of tables in random order while single
    commits go to the same tables. No deadlock, no lock left held, and every acknowledged change is on
    each of its tables exactly once."""
    tables = [create_table(http, "sales", f"t{i}", {"id": "BIGINT"}) for i in range(4)]
    landed: dict[str, list[int]] = {t.id: [] for t in tables}
    guard = threading.Lock()
    errors: list[str] = []

    def send(path: str, body: dict[str, Any]) -> httpx.Response:
        with httpx.Client(base_url=live_server.url, timeout=120) as client:
            while True:  # a resend of the same commitUser and identifier is always safe
                answer = client.post(path, json=body)
                retryable = answer.status_code == 409 and answer.json()["conflict"]["retryable"]
                if answer.status_code != 503 and not retryable:
                    return answer

    def transactions(worker: int) -> None:
        rng = random.Random(worker)
        for k in range(6):
            row = worker * 1000 + k
            pair = rng.sample(tables, 2)  # random tables, in random order
            body = {
                "commitUser": f"tx-{worker}",
                "identifier": k,
                "tables": [
                    {
                        "table": t.id,
                        "messages": [t.append_message([{"id": row}])],
                    }
                    for t in pair
                ],
            }
            answer = send("/transactions", body)
            if answer.status_code != 201:
                errors.append(answer.text)
                continue
            with guard:
                for t in pair:
                    landed[t.id].append(row)

    def singles(worker: int) -> None:
        rng = random.Random(worker)
        for k in range(6):
            row = worker * 1000 + k
            table = rng.choice(tables)
            message = table.append_message([{"id": row}])
            body = {"commitUser": f"single-{worker}", "identifier": k, "messages": [message]}
            answer = send(f"/tables/{table.id}/commits", body)
            if answer.status_code != 201:
                errors.append(answer.text)
                continue
            with guard:
                landed[table.id].append(row)

    threads = [threading.Thread(target=transactions, args=(w,)) for w in range(1, 5)]
    threads += [threading.Thread(target=singles, args=(w,)) for w in range(5, 7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a writer is stuck: a deadlock"
    assert errors == []
    assert sum(len(rows) for rows in landed.values()) == 4 * 6 * 2 + 2 * 6
    for table in tables:
        assert sorted(r["id"] for r in pypaimon_rows(warehouse, table.id)) == sorted(landed[table.id])
    assert http.get("/locks").json()["locks"] == []


def test_the_ops_api_shows_a_transaction_as_one_entry_with_its_tables(api: TestClient) -> None:
    orders, customers = pk_table(api, "orders"), pk_table(api, "customers")
    order_rows, customer_rows = rows_in_bucket(orders, 0, range(5)), rows_in_bucket(customers, 0, range(5))
    changes = [(orders, new_file(orders, order_rows)), (customers, new_file(customers, customer_rows))]
    held = held_at_commit_point(api, changes, user="loader", identifier=3)
    try:
        (entry,) = api.get("/commits").json()["inFlight"]
        assert entry["tables"] == [orders.id, customers.id]
        assert entry["tableId"] == orders.id
        assert entry["phase"] == "commitPoint"
    finally:
        held.resume()
    commit(
        api, orders, [orders.message(order_rows[0], newFiles=[orders.pk_file(order_rows, first_sequence=10)])]
    )
    recent = api.get("/commits").json()["recent"]
    assert [r["tableId"] for r in recent] == [orders.id, customers.id]  # the single commit, then one entry
    assert recent[1]["transaction"] == [
        {"table": orders.id, "snapshots": [{"id": 1, "commitKind": "APPEND"}]},
        {"table": customers.id, "snapshots": [{"id": 1, "commitKind": "APPEND"}]},
    ]


def test_retention_runs_after_a_transaction_as_after_a_commit(api: TestClient) -> None:
    retain = {
        "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "2",
        "snapshot.time-retained": "1 ms",
    }
    fact, dim = (create_table(api, "sales", n, {"id": "BIGINT"}, options=retain) for n in ("fact", "dim"))
    for k in range(4):
        changes = [(t, [t.append_message([{"id": k}])]) for t in (fact, dim)]
        assert transaction(api, changes, user="loader", identifier=k).status_code == 201
    for table in (fact, dim):
        assert latest_id(api, table) == 4
        assert api.get(f"/tables/{table.id}/snapshots/1").status_code == 404  # expired after a transaction


def test_an_identifier_another_transaction_used_is_refused(api: TestClient) -> None:
    tables = [pk_table(api, n) for n in ("orders", "customers", "returns")]

    def change(table: PaimonTable) -> tuple[PaimonTable, list[dict[str, Any]]]:
        rows = rows_in_bucket(table, 0, range(3))
        return table, new_file(table, rows)

    first = [change(tables[0]), change(tables[1])]
    assert transaction(api, first, user="cdc", identifier=5).status_code == 201
    other = transaction(api, [change(tables[0]), change(tables[2])], user="cdc", identifier=5)
    assert other.status_code == 409, other.text
    assert other.json()["code"] == "IDENTIFIER_REUSED"
    assert latest_id(api, tables[2]) is None
    # The same changes sent again under the same name, even with their tables in another order, are
    # a resend; other changes to the same tables are not.
    again = transaction(api, first[::-1], user="cdc", identifier=5)
    assert again.status_code == 200, again.text
    assert again.json()["deduplicated"] is True
    other_changes = transaction(api, [change(tables[1]), change(tables[0])], user="cdc", identifier=5)
    assert other_changes.status_code == 409, other_changes.text
    assert other_changes.json()["conflict"]["type"] == "IDENTIFIER_REUSED"
    assert (latest_id(api, tables[0]), latest_id(api, tables[1])) == (1, 1)


def test_files_of_a_transaction_in_flight_are_not_orphans(api: TestClient) -> None:
    orders, customers = pk_table(api, "orders"), pk_table(api, "customers")
    order_rows, customer_rows = rows_in_bucket(orders, 0, range(5)), rows_in_bucket(customers, 0, range(5))
    order_file = orders.pk_file(order_rows, first_sequence=0)
    changes = [
        (orders, new_file(orders, order_rows, written=order_file)),
        (customers, new_file(customers, customer_rows)),
    ]
    held = held_at_commit_point(api, changes, user="loader")
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    try:
        assert order_file["fileName"] in services.in_flight.file_names(orders.id)
    finally:
        held.resume()
    assert order_file["fileName"] not in services.in_flight.file_names(orders.id)
