"""Compaction job: merge every bucket of examples.orders into one sorted file at the top level.

Run after batch_job.py: `python examples/compaction_job.py [http://127.0.0.1:8080]`.
"""

from __future__ import annotations

from _common import coordinator_client, coordinator_url, spark_session

from coordinator_client.spark import compact

TABLE = "examples.orders"


def main(url: str) -> int:
    spark = spark_session("orders-compaction")
    with coordinator_client(url) as client:
        before = len(client.live_files(TABLE).files)
        response = compact(spark, TABLE, client=client)
        after = len(client.live_files(TABLE).files)
        if response is None:
            print(f"{TABLE} is already compact ({after} files)")
        else:
            print(f"compacted {TABLE}: {before} files -> {after}, snapshot {response.snapshots[0].id}")
        return after


if __name__ == "__main__":
    main(coordinator_url())
