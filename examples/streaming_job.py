"""Streaming job: a file source into an append table, exactly once across restarts.

`df.writeStream.format("paimon-coordinator")`: each micro-batch is one commit, identified by the query's
checkpoint and the batch id. Run it twice: the second run resumes from the checkpoint, and a batch the
first run committed is never committed again.
`python examples/streaming_job.py [http://127.0.0.1:8080]`; it keeps its input and checkpoint in
./examples-work.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from _common import coordinator_client, coordinator_url, spark_session

from coordinator_client import NotFound
from coordinator_client.spark import NAME, register

TABLE = "examples.events"


def main(url: str, work: Path = Path("examples-work")) -> int:
    source, checkpoint = work / "events-source", work / "events-checkpoint"
    source.mkdir(parents=True, exist_ok=True)
    start = len(list(source.glob("*.parquet"))) * 1_000
    for n in range(start, start + 3_000, 1_000):  # three new input files per run
        ids = list(range(n, n + 1_000))
        pq.write_table(pa.table({"id": ids, "kind": ["click"] * 1_000}), source / f"events-{n:09d}.parquet")

    spark = spark_session("events-stream")
    register(spark)
    with coordinator_client(url) as client:
        try:
            client.get_table(TABLE)
        except NotFound:
            client.create_table(
                {
                    "database": "examples",
                    "name": "events",
                    "fields": [{"name": "id", "type": "BIGINT"}, {"name": "kind", "type": "STRING"}],
                }
            )
        events = (
            spark.readStream.schema("id long, kind string")
            .option("maxFilesPerTrigger", 1)
            .parquet(str(source))
        )
        query = (
            events.writeStream.format(NAME)
            .option("url", url)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start(TABLE)
        )
        query.awaitTermination()
        count = spark.read.format(NAME).option("url", url).load(TABLE).count()
        print(f"{TABLE} holds {count:,} events from {len(list(source.glob('*.parquet')))} input files")
        return count


if __name__ == "__main__":
    main(coordinator_url())
