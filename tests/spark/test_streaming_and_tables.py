"""Streaming replay, append tables (overwrite, compaction) and tables that pypaimon created."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coordinator_client import CommitResponse, CoordinatorClient
from coordinator_client.spark import compact, read, stream_sink, write
from tests.spark.tables import (
    assert_same_rows,
    data_files_on_storage,
    data_files_referenced,
)
from tests.support.paimon_files import create_table, pypaimon_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

EVENTS = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _drop_file(folder: Path, name: str, ids: range) -> None:
    rows = pa.table({"id": list(ids), "v": [f"event {i}" for i in ids]}, schema=EVENTS)
    pq.write_table(rows, folder / f"{name}.parquet")


def test_a_streaming_batch_replayed_after_a_restart_is_committed_once(
    spark: SparkSession, client: CoordinatorClient, warehouse: Path, tmp_path: Path
) -> None:
    table = create_table(client, "stream", "events", {"id": "BIGINT", "v": "STRING"}).id
    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    source.mkdir()
    _drop_file(source, "part-0", range(1_000))
    sink = stream_sink(table, client=client, commit_user="events-ingest")
    answers: list[tuple[int, CommitResponse]] = []

    def crash_after_commit(batch: DataFrame, batch_id: int) -> None:
        # The process dies after the coordinator committed the batch, before Spark recorded it.
        answers.append((batch_id, sink(batch, batch_id)))
        raise RuntimeError("driver crashed after the commit")

    def recording(batch: DataFrame, batch_id: int) -> None:
        answers.append((batch_id, sink(batch, batch_id)))

    def run(function: Any) -> None:
        stream = (
            spark.readStream.schema("id long, v string").option("maxFilesPerTrigger", 1).parquet(str(source))
        )
        query = (
            stream.writeStream.foreachBatch(function)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()

    with pytest.raises(Exception, match="driver crashed after the commit"):
        run(crash_after_commit)
    run(recording)  # restarted from the checkpoint: batch 0 again
    _drop_file(source, "part-1", range(1_000, 1_500))
    run(recording)

    assert [(i, a.deduplicated, [s.id for s in a.snapshots]) for i, a in answers] == [
        (0, False, [1]),
        (0, True, [1]),
        (1, False, [2]),
    ]
    expected = pa.table({"id": list(range(1_500)), "v": [f"event {i}" for i in range(1_500)]}, schema=EVENTS)
    assert_same_rows(pypaimon_table(warehouse, table), expected, ["id"], "pypaimon after the replay")
    assert [c.identifier for c in client.commit_history(table).commits] == [1, 0]
    location = client.get_table(table).location
    assert data_files_on_storage(location) == data_files_referenced(client, table)


@pytest.mark.stores("local", "s3")
def test_append_table_write_overwrite_compact(
    spark: SparkSession, client: CoordinatorClient, warehouse_location: str
) -> None:
    table = create_table(
        client, "logs", "lines", {"dt": "STRING", "n": "INT", "line": "STRING"}, partitionKeys=["dt"]
    ).id

    def lines(dt: str, start: int, count: int, text: str) -> DataFrame:
        return spark.range(start, start + count, numPartitions=3).selectExpr(
            f"'{dt}' as dt", "cast(id as int) as n", f"'{text} ' || id as line"
        )

    def rows(dt: str, start: int, count: int, text: str) -> list[dict[str, Any]]:
        return [{"dt": dt, "n": i, "line": f"{text} {i}"} for i in range(start, start + count)]

    write(lines("a", 0, 500, "first"), table, client=client)
    write(lines("b", 0, 500, "first"), table, client=client)
    write(lines("a", 500, 500, "more"), table, client=client)
    write(lines("b", 0, 200, "replaced"), table, client=client, mode="overwrite", partition={"dt": "b"})
    expected = rows("a", 0, 500, "first") + rows("a", 500, 500, "more") + rows("b", 0, 200, "replaced")
    schema = pa.schema([("dt", pa.string()), ("n", pa.int32()), ("line", pa.string())])
    want = pa.Table.from_pylist(expected, schema=schema)
    keys = ["dt", "n"]
    assert_same_rows(read(spark, table, client=client).toArrow(), want, keys, "our reader")
    partition_a = read(spark, table, client=client, partitions=[{"dt": "a"}]).toArrow()
    assert_same_rows(partition_a, want.filter(pa.compute.equal(want["dt"], "a")), keys, "partition a")

    before = len(client.live_files(table).files)
    response = compact(spark, table, client=client)
    assert response is not None
    assert [s.commit_kind for s in response.snapshots] == ["COMPACT"]
    after = client.live_files(table).files
    assert before > len(after) == 2  # one file per partition (bucket-unaware: bucket 0)
    assert compact(spark, table, client=client) is None  # nothing left to compact
    # The streamed plan after the compaction's DELETE entries; a partition named twice is read once.
    both = read(spark, table, client=client, partitions=[{"dt": "b"}, {"dt": "a"}, {"dt": "b"}]).toArrow()
    assert_same_rows(both, want, keys, "partitions b, a and b again, after compaction")
    assert_same_rows(pypaimon_table(warehouse_location, table), want, keys, "pypaimon after compaction")
    assert_same_rows(
        read(spark, table, client=client, snapshot=1).toArrow(), want.slice(0, 500), keys, "snapshot 1"
    )

    write(lines("a", 0, 10, "all new"), table, client=client, mode="overwrite")
    assert_same_rows(
        pypaimon_table(warehouse_location, table),
        pa.Table.from_pylist(rows("a", 0, 10, "all new"), schema=schema),
        keys,
        "after overwriting the table",
    )


def test_a_table_pypaimon_created_is_registered_written_and_compacted_from_spark(
    spark: SparkSession, client: CoordinatorClient, warehouse: Path
) -> None:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("legacy", False)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    catalog.create_table(
        "legacy.kv", Schema.from_pyarrow_schema(schema, primary_keys=["id"], options={"bucket": "2"}), False
    )
    outside = catalog.get_table("legacy.kv")
    builder = outside.new_batch_write_builder()
    writer = builder.new_write()
    writer.write_arrow(pa.table({"id": list(range(1_000)), "v": ["pypaimon"] * 1_000}, schema=schema))
    builder.new_commit().commit(writer.prepare_commit())
    writer.close()

    registered = client.register_table("legacy", "kv", str(warehouse / "legacy.db" / "kv"))
    assert registered.latest_snapshot_id == 1
    # Upsert half of pypaimon's keys and add as many new ones: same buckets, or pypaimon sees duplicates.
    updates = spark.range(500, 1_500).selectExpr("id", "'spark' as v")
    assert [s.id for s in write(updates, "legacy.kv", client=client).snapshots] == [2]
    assert compact(spark, "legacy.kv", client=client) is not None

    expected = pa.table(
        {"id": list(range(1_500)), "v": ["pypaimon"] * 500 + ["spark"] * 1_000}, schema=schema
    )
    for snapshot in (2, 3):
        assert_same_rows(
            pypaimon_table(warehouse, "legacy.kv", snapshot), expected, ["id"], f"pypaimon at {snapshot}"
        )
    assert_same_rows(read(spark, "legacy.kv", client=client).toArrow(), expected, ["id"], "our reader")
    assert {f.level for f in client.live_files("legacy.kv").files} == {5}
