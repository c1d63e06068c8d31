"""Transaction job: load a day of invoices and the customers they name into two tables in one
multi-table transaction, so no reader ever sees an invoice whose customer is not there yet.

Run against a coordinator (`make serve`): `python examples/transaction_job.py [http://127.0.0.1:8080]`.
Running it again for the same day commits nothing new: the day is the transaction's identifier.
"""

from __future__ import annotations

from _common import coordinator_client, coordinator_url, spark_session

from coordinator_client import CoordinatorClient, NotFound
from coordinator_client.spark import transaction

INVOICES, CUSTOMERS = "examples.invoices", "examples.customers"
DAY = 20261120


def ensure_tables(client: CoordinatorClient) -> None:
    tables = {
        INVOICES: {
            "fields": [
                {"name": "day", "type": "INT NOT NULL"},
                {"name": "invoice_id", "type": "BIGINT NOT NULL"},
                {"name": "customer_id", "type": "BIGINT"},
                {"name": "amount", "type": "DECIMAL(10, 2)"},
            ],
            "partitionKeys": ["day"],
        },
        CUSTOMERS: {
            "fields": [
                {"name": "customer_id", "type": "BIGINT NOT NULL"},
                {"name": "name", "type": "STRING"},
            ],
            "primaryKeys": ["customer_id"],
            "options": {"bucket": "2"},
        },
    }
    for table_id, body in tables.items():
        database, name = table_id.split(".")
        try:
            client.get_table(table_id)
        except NotFound:
            client.create_table({"database": database, "name": name, **body})


def main(url: str) -> list[int]:
    """Returns the latest snapshot of each table after the load."""
    spark = spark_session("billing-transaction")
    with coordinator_client(url) as client:
        ensure_tables(client)
        invoices = spark.range(10_000).selectExpr(
            f"{DAY} as day",
            "id as invoice_id",
            "id % 500 as customer_id",
            "cast((id % 1000) / 10.0 as decimal(10, 2)) as amount",
        )
        customers = invoices.selectExpr("customer_id", "'customer-' || customer_id as name").distinct()
        with transaction(client, commit_user="billing-daily-load", identifier=DAY) as tx:
            tx.write(invoices, INVOICES)
            tx.write(customers, CUSTOMERS)
        assert tx.response is not None
        state = "already loaded" if tx.response.deduplicated else "loaded"
        print(
            f"day {DAY} {state}: "
            + ", ".join(f"{t.table} snapshot {t.snapshots[-1].id}" for t in tx.response.tables)
        )
        return [client.get_table(t).latest_snapshot_id or 0 for t in (INVOICES, CUSTOMERS)]


if __name__ == "__main__":
    main(coordinator_url())
