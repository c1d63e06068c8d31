"""GET /commits: a multi-table transaction is one entry listing every table's snapshots, whether the list
is of all tables or of one (`?table=`). Runs on SQLite and PostgreSQL."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.support.commits import commit, new_file, transaction
from tests.support.paimon_files import pk_table, rows_in_bucket


def test_commits_of_one_table_list_every_table_of_a_transaction(api: TestClient) -> None:
    """GET /commits?table= used to show the transaction's other tables with no snapshots."""
    invoices, customers = pk_table(api, "invoices"), pk_table(api, "customers")
    commit(api, invoices, new_file(invoices, rows_in_bucket(invoices, 1, range(5))))  # snapshot 1
    for identifier in (1, 2):  # two transactions of one user; only invoices' snapshot ids differ
        changes = [
            (t, new_file(t, rows_in_bucket(t, 0, range(identifier * 10, identifier * 10 + 5))))
            for t in (invoices, customers)
        ]
        assert transaction(api, changes, user="loader", identifier=identifier).status_code == 201
    unfiltered = [r for r in api.get("/commits").json()["recent"] if r.get("transaction")]
    for table in (invoices, customers):
        recent = api.get("/commits", params={"table": table.id}).json()["recent"]
        assert {r["tableId"] for r in recent} == {table.id}
        entries = [r for r in recent if r.get("transaction")]
        assert [e["transaction"] for e in entries] == [e["transaction"] for e in unfiltered]
    assert [e["transaction"] for e in unfiltered] == [
        [
            {"table": invoices.id, "snapshots": [{"id": 3, "commitKind": "APPEND"}]},
            {"table": customers.id, "snapshots": [{"id": 2, "commitKind": "APPEND"}]},
        ],
        [
            {"table": invoices.id, "snapshots": [{"id": 2, "commitKind": "APPEND"}]},
            {"table": customers.id, "snapshots": [{"id": 1, "commitKind": "APPEND"}]},
        ],
    ]


def test_batch_transactions_of_one_user_are_told_apart(api: TestClient) -> None:
    """Under the batch identifier one user's transactions over the same tables share their name: each
    entry lists its own snapshots, filtered by either table or not."""
    invoices, customers = pk_table(api, "invoices"), pk_table(api, "customers")
    for k in range(3):
        changes = [
            (t, new_file(t, rows_in_bucket(t, 0, range(k * 10, k * 10 + 5)))) for t in (invoices, customers)
        ]
        body = {"identifier": 2**63 - 1, "user": "nightly"}
        assert transaction(api, changes, **body).status_code == 201
    expected = [
        [{"table": t.id, "snapshots": [{"id": k, "commitKind": "APPEND"}]} for t in (invoices, customers)]
        for k in (3, 2, 1)
    ]
    for params in ({}, {"table": invoices.id}, {"table": customers.id}):
        recent = api.get("/commits", params=params).json()["recent"]
        assert [r["transaction"] for r in recent] == expected, params
