"""Streaming reads of the paimon-coordinator data source: what each micro-batch delivers, restarts from the
checkpoint, the start options, the snapshots-per-batch cap and the consumer that holds off expiration.

The reader's own calls (initialOffset, latestOffset, partitions, read, commit) are made directly in some
tests, as Spark's driver-side worker makes them, to pin down offsets and expiration races that a running
query cannot be stopped at; the acceptance tests run real streaming queries.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from coordinator_client import CoordinatorClient
from coordinator_client.spark import write
from coordinator_client.spark.layout import SparkTable
from coordinator_client.spark.options import Connection, OptionError
from coordinator_client.spark.read import spark_schema
from coordinator_client.spark.source import read_schema, register
from coordinator_client.spark.stream_read import ChangeReader
from tests.paimon_files import create_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Change = tuple[str, int, str | None]
"""(rowkind, id, v): one delivered row."""
FORMAT = "paimon-coordinator"


def _table(client: CoordinatorClient, name: str, primary_key: bool) -> str:
    if primary_key:
        fields = {"id": "BIGINT NOT NULL", "v": "STRING"}
        return create_table(client, "s", name, fields, primaryKeys=["id"], options={"bucket": "2"}).id
    return create_table(client, "s", name, {"id": "BIGINT", "v": "STRING"}).id


class Writer:
    """Commits changes with the functional writer and remembers what each snapshot changed."""

    def __init__(self, spark: SparkSession, client: CoordinatorClient, table: str) -> None:
        self.spark, self.client, self.table = spark, client, table
        self.changes: dict[int, list[Change]] = {}

    def commit(self, rows: list[tuple[int, str]], *, delete: bool = False) -> int:
        frame = self.spark.createDataFrame(rows, "id long, v string")
        answer = write(frame, self.table, client=self.client, mode="delete" if delete else "append")
        (snapshot,) = [s.id for s in answer.snapshots]
        self.changes[snapshot] = [("-D" if delete else "+I", i, v) for i, v in rows]
        return snapshot

    def between(self, after: int, last: int) -> list[Change]:
        """The changes of snapshots after..last."""
        return [c for s in range(after + 1, last + 1) for c in self.changes.get(s, [])]

    def table_at(self, snapshot: int) -> list[Change]:
        """The table at `snapshot` as inserts: newest row per key, deleted keys gone."""
        rows: dict[int, Change] = {}
        for c in self.between(0, snapshot):
            if c[0] == "-D":
                rows.pop(c[1], None)
            else:
                rows[c[1]] = c
        return list(rows.values())


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
    table = _table(client, "starts", primary_key=True)
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
    with pytest.raises(OptionError, match=r"'snapshot-id': snapshot 9 of s\.starts does not exist"):
        _reader(client, table, **{"snapshot-id": "9"}).initialOffset()

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
    table = _table(client, "capped", primary_key=False)
    writer = Writer(spark, client, table)
    for i in range(5):
        writer.commit([(i, f"v{i}")])
    overwrite = spark.createDataFrame([(100, "new")], "id long, v string")
    overwritten = write(overwrite, table, client=client, mode="overwrite").snapshots[0].id
    last = writer.commit([(6, "v6")])
    assert client.get_snapshot(table, overwritten).commit_kind == "OVERWRITE"

    reader = _reader(client, table, start="earliest", **{"max-snapshots-per-batch": "2"})
    start = reader.initialOffset()
    batches = []
    while (end := reader.latestOffset(start, reader.getDefaultReadLimit())) != start:
        batches.append((start["snapshot"], end["snapshot"], _deliver(reader, start, end)))
        start = end
    assert [(a, b) for a, b, _ in batches] == [(1, 2), (2, 4), (4, 6), (6, 7)]
    assert batches[0][2] == sorted([("+I", 0, "v0"), ("+I", 1, "v1")])  # the full table at 1 counts as one
    assert batches[2][2] == [("+I", 4, "v4")]  # the overwrite (6) delivers nothing
    assert batches[3][2] == [("+I", 6, "v6")]
    assert last == 7
    # Spark's ReadAllAvailable (Trigger.Once, a restart's catch-up) takes no notice of the cap
    assert reader.latestOffset({"snapshot": 2}, ReadAllAvailable())["snapshot"] == 7


@pytest.mark.stores("local", "s3")
def test_files_of_older_and_newer_schemas_are_read_in_the_readers_schema(
    spark: SparkSession, client: CoordinatorClient, store: str
) -> None:
    """A column added and one renamed between two commits: a reader planned after the alter reads the
    older file by field id (the new column null), one planned before it reads the newer file so too."""
    table = _table(client, f"evolved_{store}", primary_key=True)
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
        ({"max-snapshots-per-batch": "0"}, "max-snapshots-per-batch"),
        ({"consumer-id": "no/slash"}, "consumer-id"),
        ({"rowkind": "false"}, "rowkind"),
    ],
)
def test_bad_options_are_named_before_anything_is_read(
    client: CoordinatorClient, options: dict[str, str], option: str
) -> None:
    table = _table(client, f"bad_{abs(hash(str(options))) % 10_000}", primary_key=True)
    with pytest.raises(OptionError) as refused:
        _reader(client, table, **options)
    assert refused.value.option == option
    assert client.list_consumers(table).consumers == []


def test_a_primary_key_table_needs_rowkind_and_says_why(
    spark: SparkSession, client: CoordinatorClient
) -> None:
    table = _table(client, "kinds", primary_key=True)
    register(spark)
    query = spark.readStream.format(FORMAT).option("url", client.base_url).load(table)
    with pytest.raises(Exception, match=r"option 'rowkind': s\.kinds has a primary key.*updates and deletes"):
        query.writeStream.format("memory").queryName("kinds").start().awaitTermination(60)


def test_a_consumer_keeps_unread_snapshots_through_expiration(
    spark: SparkSession, client: CoordinatorClient
) -> None:
    """The pending full read's snapshot and every later one survive an expiration that keeps only one
    snapshot; without the consumer the same expiration deletes them, and the read says why it fails."""
    for consumer in ("reader-1", None):
        table = _table(client, f"kept_{consumer is not None}", primary_key=True)
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
        client.expire(table)
        assert sorted(s.id for s in client.list_snapshots(table).snapshots) == [4]


# ---------------------------------------------------------------- streaming queries


class Collector:
    """A foreachBatch sink that keeps every micro-batch's rows by batch id (it runs in this process)."""

    def __init__(self) -> None:
        self.batches: dict[int, list[Change]] = {}

    def __call__(self, frame: DataFrame, batch_id: int) -> None:
        rows = [(r["rowkind"], r["id"], r["v"]) for r in frame.collect()]
        assert batch_id not in self.batches or self.batches[batch_id] == sorted(rows)  # a replay is equal
        self.batches[batch_id] = sorted(rows)


def _start(
    spark: SparkSession,
    client: CoordinatorClient,
    table: str,
    checkpoint: Path,
    sink: Collector,
    **options: str,
) -> Any:
    trigger = options.pop("trigger", "availableNow")
    stream = spark.readStream.format(FORMAT).option("url", client.base_url).option("rowkind", "true")
    for key, value in options.items():
        stream = stream.option(key, value)
    writer = stream.load(table).writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
    if trigger == "processingTime":
        return writer.trigger(processingTime="1 second").start()
    return writer.trigger(availableNow=True).start()


def _wait_until(condition: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


def _offsets(query: Any) -> dict[int, tuple[str, str]]:
    """Each batch of a query run: (startOffset, endOffset) of the source, as Spark reported them."""
    import json

    out = {}
    for progress in query.recentProgress:
        source = progress["sources"][0]
        if source["endOffset"] is not None and progress["numInputRows"] is not None:
            start = source["startOffset"]
            out[progress["batchId"]] = (
                None if start is None else json.loads(start),
                json.loads(source["endOffset"]),
            )
    return out


@pytest.mark.parametrize("primary_key", [True, False], ids=["primary-key", "append"])
def test_a_streaming_query_delivers_every_change_once_across_two_restarts(
    spark: SparkSession, client: CoordinatorClient, tmp_path: Path, primary_key: bool
) -> None:
    """The issue's acceptance: a query reads while another job appends and upserts in 10 commits; each
    micro-batch holds the changes of its snapshots; stopped and restarted from its checkpoint twice, the
    union of what it delivered is every change exactly once; its consumer kept what it had not read."""
    register(spark)
    table = _table(client, f"accept_{primary_key}", primary_key)
    writer = Writer(spark, client, table)
    writer.commit([(i, "v0") for i in range(5)])  # before the query: the full table as its first batch
    checkpoint, sink = tmp_path / "checkpoint", Collector()
    offsets: dict[int, tuple[Any, Any]] = {}

    def changes(round_: int) -> None:
        """Commit `round_`: upserts of earlier keys and new keys (deletes too on a primary-key table)."""
        writer.commit([(round_, f"v{round_}"), (100 + round_, "new")])
        if primary_key and round_ % 3 == 0:
            writer.commit([(round_ + 1, None)], delete=True)

    # run 1, while the other job commits
    query = _start(
        spark, client, table, checkpoint, sink, trigger="processingTime", **{"consumer-id": "acceptance"}
    )
    _wait_until(lambda: 0 in _offsets(query), "the first batch")  # the full table at the first snapshot
    other = threading.Thread(target=lambda: [changes(r) for r in range(1, 5)])
    other.start()
    other.join()
    latest = client.latest_snapshot(table).id
    _wait_until(
        lambda: any(end["snapshot"] == latest for _, end in _offsets(query).values()), "run 1 to catch up"
    )
    offsets |= _offsets(query)
    query.stop()
    # stopped: three more commits, and an expiration that would take them if the consumer let it
    for r in range(5, 8):
        changes(r)
    client.set_options(table, {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    client.expire(table)
    retained = [s.id for s in client.list_snapshots(table).snapshots]
    assert min(retained) <= latest + 1 < client.latest_snapshot(table).id  # unread snapshots kept
    # run 2: restarted from the checkpoint, Trigger.AvailableNow
    query = _start(spark, client, table, checkpoint, sink, **{"consumer-id": "acceptance"})
    query.awaitTermination(120)
    offsets |= _offsets(query)
    # run 3: restarted again, while the last commits come in
    query = _start(
        spark, client, table, checkpoint, sink, trigger="processingTime", **{"consumer-id": "acceptance"}
    )
    for r in range(8, 11):
        changes(r)
    latest = client.latest_snapshot(table).id
    _wait_until(
        lambda: any(end["snapshot"] == latest for _, end in _offsets(query).values()), "run 3 to catch up"
    )
    offsets |= _offsets(query)
    query.stop()

    assert len(writer.changes) >= 11
    delivered = [c for batch in sink.batches.values() for c in batch]
    first = min(writer.changes)
    assert Counter(delivered) == Counter(writer.table_at(first) + writer.between(first, latest))  # all, once
    for batch_id, rows in sink.batches.items():
        start, end = offsets[batch_id]
        start = start or {"snapshot": first, "full": True}  # Spark reports no start for a first batch
        assert end["batch"] == {"from": start["snapshot"], "full": start.get("full", False)}
        expected = writer.table_at(start["snapshot"]) if start.get("full") else []
        assert rows == sorted(expected + writer.between(start["snapshot"], end["snapshot"])), batch_id


def test_a_first_batch_that_failed_is_replayed_alike_after_a_commit(
    spark: SparkSession, client: CoordinatorClient, tmp_path: Path
) -> None:
    """Measured: Spark asks initialOffset() again for the first batch of a query restarted before that
    batch was committed. A snapshot committed in between is still delivered once, as a change."""
    register(spark)
    table = _table(client, "replayed", primary_key=False)
    writer = Writer(spark, client, table)
    writer.commit([(1, "a"), (2, "b")])
    checkpoint, sink = tmp_path / "checkpoint", Collector()

    def failing(frame: DataFrame, batch_id: int) -> None:
        raise RuntimeError("the sink failed in the first batch")

    stream = (
        spark.readStream.format(FORMAT).option("url", client.base_url).option("rowkind", "true").load(table)
    )
    query = stream.writeStream.foreachBatch(failing).option("checkpointLocation", str(checkpoint))
    with pytest.raises(Exception, match="the sink failed in the first batch"):
        query.trigger(availableNow=True).start().awaitTermination(120)
    writer.commit([(3, "c")])
    _start(spark, client, table, checkpoint, sink).awaitTermination(120)
    assert sink.batches == {0: [("+I", 1, "a"), ("+I", 2, "b")], 1: [("+I", 3, "c")]}
