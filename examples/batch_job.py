"""Batch job: write orders into a primary-key table, update some, delete some, read the table back,
all through Spark's own API and the `paimon-coordinator` data source.

Run against a coordinator (`make serve`): `python examples/batch_job.py [http://127.0.0.1:8080]`.
With COORDINATOR_TOKEN set, the data source sends it (a writer token).
"""

from __future__ import annotations

from _common import coordinator_client, coordinator_url, spark_session

from coordinator_client import CoordinatorClient, NotFound
from coordinator_client.spark import NAME, register

TABLE = "examples.orders"


def ensure_table(client: CoordinatorClient) -> None:
    try:
        client.get_table(TABLE)
    except NotFound:
        client.create_table(
            {
                "database": "examples",
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
    register(spark)
    with coordinator_client(url) as client:
        ensure_table(client)
        orders = spark.range(100_000).selectExpr(
            "case when id % 2 = 0 then '2026-11-20' else '2026-11-21' end as dt",
            "id as order_id",
            "'customer-' || (id % 977) as customer",
            "cast((id % 10000) / 100.0 as decimal(10, 2)) as amount",
        )
        orders.write.format(NAME).option("url", url).mode("append").save(TABLE)
        print(f"wrote 100,000 orders: snapshot {client.latest_snapshot(TABLE).id}")

        corrections = orders.where("order_id % 10 = 0").selectExpr(
            "dt", "order_id", "customer", "amount * 2 as amount"
        )
        corrections.write.format(NAME).option("url", url).mode("append").save(TABLE)
        print(f"doubled 10,000 amounts: snapshot {client.latest_snapshot(TABLE).id}")

        cancelled = orders.where("order_id % 100 = 1").select("dt", "order_id")
        cancelled.write.format(NAME).option("url", url).option("operation", "delete").mode("append").save(
            TABLE
        )
        print(f"deleted 1,000 orders: snapshot {client.latest_snapshot(TABLE).id}")

        table = spark.read.format(NAME).option("url", url).load(TABLE)
        count = table.count()
        print(f"{TABLE} now holds {count:,} orders")
        # With filter-pushdown only that partition's files are read (a DataFrame per query: docs/spark.md).
        pushing = spark.read.format(NAME).option("url", url).option("filter-pushdown", "true")
        one_day = pushing.load(TABLE).where("dt = '2026-11-20'").count()
        first = spark.read.format(NAME).option("url", url).option("snapshot-id", "1").load(TABLE).count()
        print(f"{one_day:,} of them on 2026-11-20; {first:,} orders at snapshot 1")
        return count


if __name__ == "__main__":
    main(coordinator_url())
