"""Changes job: read examples.orders as a stream of changes, the upserts and deletes of every commit.

Run after batch_job.py: `python examples/changes_job.py [http://127.0.0.1:8080]`. The first run starts
from the earliest snapshot still kept (the table as it was then, then every later commit's changes); the
consumer `orders-audit` keeps expiration from deleting what the query has yet to read, and the
checkpoint in ./examples-work makes a second run go on from where the first stopped: it counts only the
changes committed since. (The counts are taken per micro-batch with `foreachBatch`: Spark's memory sink
cannot recover from a checkpoint, so a second run of a query writing to it would fail.)
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from _common import coordinator_url, spark_session

from coordinator_client.spark import NAME, register

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

TABLE = "examples.orders"


def main(url: str, work: Path = Path("examples-work")) -> dict[str, int]:
    """The changes delivered by this run, by row kind."""
    spark = spark_session("orders-changes")
    register(spark)
    counts: Counter[str] = Counter()

    def count(batch: DataFrame, batch_id: int) -> None:
        for row in batch.groupBy("rowkind").count().collect():
            counts[row["rowkind"]] += row["count"]

    changes = (
        spark.readStream.format(NAME)
        .option("url", url)
        .option("rowkind", "true")  # +I, -U, +U, -D: a primary-key table's deletes are rows too
        .option("start", "earliest")
        .option("consumer-id", "orders-audit")
        .load(TABLE)
    )
    query = (
        changes.writeStream.foreachBatch(count)
        .option("checkpointLocation", str(work / "orders-changes-checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    delivered = ", ".join(f"{kind} {n:,}" for kind, n in sorted(counts.items())) or "none"
    print(f"changes of {TABLE} since the last run: {delivered}")
    return dict(counts)


if __name__ == "__main__":
    main(coordinator_url())
