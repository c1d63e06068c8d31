"""Batch job: write orders into a primary-key table, update some, delete some, read the table back.

Run against a coordinator (`make serve`): `python examples/batch_job.py [http://127.0.0.1:8080]`.
"""

from __future__ import annotations

from _common import coordinator_client, coordinator_url, spark_session

from coordinator_client import CoordinatorClient, NotFound
from coordinator_client.spark import read, write

TABLE = "sales.orders"


def ensure_table(client: CoordinatorClient) -> None:
    try:
        client.get_table(TABLE)
    except NotFound:
        client.create_table(
            {
                "database": "sales",
                "name": "orders",
                "fields": [
                    {"name": "dt", "type": "STRING NOT NULL"},
                    {"name": "order_id", "type": "BIGINT NOT NULL"},
                    {"name": "customer", "type": "STRING"},
                    {"name": "amount", "type": "DECIMAL(10, 2)"},
                ],
                "partitionKeys": ["dt"],
                "primaryKeys": ["dt", "order_id"],
                "options": {"bucket": "4"},
            }
        )


def main(url: str) -> int:
    spark = spark_session("orders-batch")
    with coordinator_client(url) as client:
        ensure_table(client)
        orders = spark.range(100_000).selectExpr(
            "case when id % 2 = 0 then '2026-11-20' else '2026-11-21' end as dt",
            "id as order_id",
            "'customer-' || (id % 977) as customer",
            "cast((id % 10000) / 100.0 as decimal(10, 2)) as amount",
        )
        written = write(orders, TABLE, client=client)
        print(f"wrote 100,000 orders: snapshot {written.snapshots[0].id}")

        corrections = orders.where("order_id % 10 = 0").selectExpr(
            "dt", "order_id", "customer", "amount * 2 as amount"
        )
        updated = write(corrections, TABLE, client=client)
        print(f"doubled 10,000 amounts: snapshot {updated.snapshots[0].id}")

        cancelled = orders.where("order_id % 100 = 1").select("dt", "order_id")
        deleted = write(cancelled, TABLE, client=client, mode="delete")
        print(f"deleted 1,000 orders: snapshot {deleted.snapshots[0].id}")

        table = read(spark, TABLE, client=client)
        count = table.count()
        print(f"{TABLE} now holds {count:,} orders")
        return count


if __name__ == "__main__":
    main(coordinator_url())
