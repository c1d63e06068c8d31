"""The stream reader of the paimon-coordinator data source, called as Spark's driver-side worker calls it
(initialOffset, latestOffset, partitions, read, commit): what each start option delivers, the snapshots-per-
batch cap, compactions and overwrites skipped, older and newer file schemas, bad options, and the consumer
that holds off expiration, at points a running query cannot be stopped at. Real streaming queries:
test_datasource_stream_queries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from coordinator_client import CoordinatorClient
from coordinator_client.spark import compact, write
from coordinator_client.spark.layout import SparkTable
from coordinator_client.spark.options import Connection, OptionError
from coordinator_client.spark.read import spark_schema
from coordinator_client.spark.source import read_schema
from coordinator_client.spark.stream_read import ChangeReader
from tests.spark.changes import Change, Writer, stream_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _reader(client: CoordinatorClient, table: str, **options: str) -> ChangeReader:
    layout = SparkTable.of(client.get_table(table))
    options = {"rowkind": "true", **options}
    schema = spark_schema(read_schema(layout, options))
    return ChangeReader(Connection(table, client.base_url, None), layout, options, schema)


def _deliver(reader: ChangeReader, start: dict[str, Any], end: dict[str, Any]) -> list[Change]:
    rows = []
    for split in reader.partitions(start, end):
        for batch in reader.read(split):
            rows += [(r["rowkind"], r["id"], r["v"]) for r in batch.to_pylist()]
    return sorted(rows)


def _next_batch(reader: ChangeReader, start: dict[str, Any]) -> tuple[dict[str, Any], list[Change]]:
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    return end, _deliver(reader, start, end)


def test_each_start_option_delivers_what_paimon_would(spark: SparkSession, client: CoordinatorClient) -> None:
    table = stream_table(client, "starts", primary_key=True)
    writer = Writer(spark, client, table)
    assert _reader(client, table).initialOffset() == {"snapshot": 0}  # an empty table: all changes to come
    writer.commit([(1, "a"), (2, "b")])
    writer.commit([(2, "B"), (3, "c")])
    writer.commit([(1, "a")], delete=True)

    latest_full = _reader(client, table)
    start = latest_full.initialOffset()
    assert start == {"snapshot": 3, "full": True}
    end, rows = _next_batch(latest_full, start)
    assert end == {"snapshot": 3, "batch": {"from": 3, "full": True}}  # the start it was planned from
    assert rows == [("+I", 2, "B"), ("+I", 3, "c")] == sorted(writer.table_at(3))  # merged, as inserts

    earliest = _reader(client, table, start="earliest")
    assert earliest.initialOffset() == {"snapshot": 1, "full": True}
    end, rows = _next_batch(earliest, {"snapshot": 1, "full": True})
    # the table at 1, then the unmerged changes of 2 and 3: an update is an insert of a newer row
    assert end == {"snapshot": 3, "batch": {"from": 1, "full": True}}
    assert rows == sorted([("+I", 1, "a"), ("+I", 2, "b"), *writer.between(1, 3)])

    from_two = _reader(client, table, **{"snapshot-id": "2"})
    assert from_two.initialOffset() == {"snapshot": 1}
    assert _next_batch(from_two, {"snapshot": 1})[1] == sorted(writer.between(1, 3))
    with pytest.raises(OptionError, match=r"'snapshot-id': s\.starts has no snapshot 9"):
        _reader(client, table, **{"snapshot-id": "9"}).initialOffset()

    after_one = client.get_snapshot(table, 1).time_millis + 1
    assert client.get_snapshot(table, 2).time_millis > after_one
    from_time = _reader(client, table, timestamp=str(after_one))  # the snapshots committed after it
    assert from_time.initialOffset() == {"snapshot": 1}
    assert _next_batch(from_time, {"snapshot": 1})[1] == sorted(writer.between(1, 3))

    latest = _reader(client, table, start="latest")
    assert latest.initialOffset() == {"snapshot": 3}
    assert latest.latestOffset({"snapshot": 3}, ReadAllAvailable()) == {"snapshot": 3}  # nothing new
    writer.commit([(4, "d")])
    end, rows = _next_batch(latest, {"snapshot": 3})
    assert (end["snapshot"], rows) == (4, [("+I", 4, "d")])
    # a batch is planned from the start recorded in its end: Spark asks initialOffset() again for the
    # first batch of a query restarted before that batch was committed, and gets a later snapshot
    assert _deliver(
        latest_full, {"snapshot": 4, "full": True}, {"snapshot": 3, "batch": {"from": 3, "full": True}}
    ) == sorted(writer.table_at(3))


def test_a_batch_takes_at_most_max_snapshots_and_skips_compactions_and_overwrites(
    spark: SparkSession, client: CoordinatorClient
) -> None:
    table = stream_table(client, "capped", primary_key=False)
    writer = Writer(spark, client, table)
    for i in range(4):
        writer.commit([(i, f"v{i}")])
    compacted = compact(spark, table, client=client)
    assert compacted is not None
    overwrite = spark.createDataFrame([(100, "new")], "id long, v string")
    overwritten = write(overwrite, table, client=client, mode="overwrite").snapshots[0].id
    last = writer.commit([(6, "v6")])
    kinds = [client.get_snapshot(table, i).commit_kind for i in range(1, last + 1)]
    assert kinds == ["APPEND"] * 4 + ["COMPACT", "OVERWRITE", "APPEND"]
    assert (compacted.snapshots[0].id, overwritten, last) == (5, 6, 7)

    reader = _reader(client, table, start="earliest", **{"max-snapshots-per-batch": "2"})
    start = reader.initialOffset()
    batches = []
    while (end := reader.latestOffset(start, reader.getDefaultReadLimit())) != start:
        batches.append((start["snapshot"], end["snapshot"], _deliver(reader, start, end)))
        start = end
    assert [(a, b) for a, b, _ in batches] == [(1, 2), (2, 4), (4, 6), (6, 7)]
    assert batches[0][2] == sorted([("+I", 0, "v0"), ("+I", 1, "v1")])  # the full table at 1 counts as one
    assert batches[1][2] == sorted([("+I", 2, "v2"), ("+I", 3, "v3")])
    assert batches[2][2] == []  # the compaction and the overwrite deliver nothing
    assert batches[3][2] == [("+I", 6, "v6")]
    # Spark's ReadAllAvailable (Trigger.Once, a restart's catch-up) takes no notice of the cap
    assert reader.latestOffset({"snapshot": 2}, ReadAllAvailable())["snapshot"] == 7


@pytest.mark.stores("local", "s3")
def test_files_of_older_and_newer_schemas_are_read_in_the_readers_schema(
    spark: SparkSession, client: CoordinatorClient, store: str
) -> None:
    """A column added and one renamed between two commits: a reader planned after the alter reads the
    older file by field id (the new column null), one planned before it reads the newer file so too."""
    table = stream_table(client, f"evolved_{store}", primary_key=True)
    writer = Writer(spark, client, table)
    writer.commit([(1, "a"), (2, "b")])
    before = _reader(client, table, start="latest")
    before_start = before.initialOffset()
    changes = [
        {"action": "addColumn", "fieldNames": ["w"], "dataType": "BIGINT"},
        {"action": "renameColumn", "fieldNames": ["v"], "newName": "label"},
    ]
    client.alter_table(table, changes)
    frame = spark.createDataFrame([(2, "B", 20), (3, "c", 30)], "id long, label string, w long")
    write(frame, table, client=client)

    after = _reader(client, table, start="earliest")
    start = after.initialOffset()
    end = after.latestOffset(start, ReadAllAvailable())
    rows = sorted(
        (r["rowkind"], r["id"], r["label"], r["w"])
        for split in after.partitions(start, end)
        for batch in after.read(split)
        for r in batch.to_pylist()
    )
    assert rows == [("+I", 1, "a", None), ("+I", 2, "B", 20), ("+I", 2, "b", None), ("+I", 3, "c", 30)]
    assert _next_batch(before, before_start)[1] == [("+I", 2, "B"), ("+I", 3, "c")]


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"start": "newest"}, "start"),
        ({"start": "latest", "snapshot-id": "1"}, "snapshot-id"),
        ({"snapshot-id": "0"}, "snapshot-id"),
        ({"snapshot-id": "x"}, "snapshot-id"),
        ({"snapshot-id": "1", "timestamp": "0"}, "timestamp"),
        ({"timestamp": "yesterday"}, "timestamp"),
        ({"tag": "t1"}, "tag"),
        ({"max-snapshots-per-batch": "0"}, "max-snapshots-per-batch"),
        ({"consumer-id": "no/slash"}, "consumer-id"),
        ({"rowkind": "false"}, "rowkind"),
    ],
)
def test_bad_options_are_named_before_anything_is_read(
    client: CoordinatorClient, options: dict[str, str], option: str
) -> None:
    table = stream_table(client, "bad", primary_key=True)
    with pytest.raises(OptionError) as refused:
        _reader(client, table, **options)
    assert refused.value.option == option
    assert client.list_consumers(table).consumers == []


def test_a_consumer_keeps_unread_snapshots_through_expiration(
    spark: SparkSession, client: CoordinatorClient
) -> None:
    """The pending full read's snapshot and every later one survive an expiration that keeps only one
    snapshot; without the consumer the same expiration deletes them, and the read says why it fails."""
    for consumer in ("reader-1", None):
        table = stream_table(client, f"kept_{consumer is not None}", primary_key=True)
        writer = Writer(spark, client, table)
        writer.commit([(1, "a"), (2, "b")])
        options = {} if consumer is None else {"consumer-id": consumer}
        reader = _reader(client, table, **options)
        start = reader.initialOffset()  # the table at 1 is still to be delivered
        assert start == {"snapshot": 1, "full": True}
        for i in range(3):
            writer.commit([(10 + i, "x")])
        client.set_options(table, {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
        client.expire(table)
        kept = sorted(s.id for s in client.list_snapshots(table).snapshots)
        end = reader.latestOffset(start, ReadAllAvailable())
        if consumer is None:
            assert kept == [4]
            with pytest.raises(RuntimeError, match=r"expired before the query read it.*consumer-id"):
                reader.partitions(start, end)
            continue
        assert kept == [1, 2, 3, 4]
        assert [(c.consumer_id, c.next_snapshot_id) for c in client.list_consumers(table).consumers] == [
            (consumer, 1)
        ]
        assert _deliver(reader, start, end) == sorted(writer.between(0, 4))
        reader.commit(end)
        assert client.list_consumers(table).consumers[0].next_snapshot_id == 5
        # a new query of the same consumer (no checkpoint) goes on where it stands, as in Paimon
        assert _reader(client, table, **options).initialOffset() == {"snapshot": 4}
        client.expire(table)
        assert sorted(s.id for s in client.list_snapshots(table).snapshots) == [4]
