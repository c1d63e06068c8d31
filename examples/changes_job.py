"""Changes job: read examples.orders as a stream of changes, the upserts and deletes of every commit.

Run after batch_job.py: `python examples/changes_job.py [http://127.0.0.1:8080]`. The first run starts
from the earliest snapshot still kept (the table as it was then, then every later commit's changes); the
consumer `orders-audit` keeps expiration from deleting what the query has yet to read, and the
checkpoint in ./examples-work makes a second run go on from where the first stopped.
"""

from __future__ import annotations

from pathlib import Path

from _common import coordinator_url, spark_session

from coordinator_client.spark import NAME, register

TABLE = "examples.orders"


def main(url: str, work: Path = Path("examples-work")) -> dict[str, int]:
    spark = spark_session("orders-changes")
    register(spark)
    changes = (
        spark.readStream.format(NAME)
        .option("url", url)
        .option("rowkind", "true")  # +I, -U, +U, -D: a primary-key table's deletes are rows too
        .option("start", "earliest")
        .option("consumer-id", "orders-audit")
        .load(TABLE)
    )
    query = (
        changes.writeStream.format("memory")
        .queryName("order_changes")
        .option("checkpointLocation", str(work / "orders-changes-checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    counts = {
        r["rowkind"]: r["n"]
        for r in spark.sql("SELECT rowkind, count(*) AS n FROM order_changes GROUP BY rowkind").collect()
    }
    print(f"changes of {TABLE}: " + ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items())))
    return counts


if __name__ == "__main__":
    main(coordinator_url())
