"""Streaming queries over the paimon-coordinator data source (spark.readStream ... writeStream): every
change delivered once across restarts from the checkpoint, while another job commits; a replayed first
batch; a primary-key table read without rowkind refused."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from coordinator_client import CoordinatorClient
from coordinator_client.spark.source import register
from tests.spark.changes import Change, Writer, stream_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FORMAT = "paimon-coordinator"


def test_a_primary_key_table_needs_rowkind_and_says_why(
    spark: SparkSession, client: CoordinatorClient
) -> None:
    table = stream_table(client, "kinds", primary_key=True)
    register(spark)
    query = spark.readStream.format(FORMAT).option("url", client.base_url).load(table)
    with pytest.raises(Exception, match=r"option 'rowkind': s\.kinds has a primary key.*updates and deletes"):
        query.writeStream.format("memory").queryName("kinds").start().awaitTermination(60)


class Collector:
    """A foreachBatch sink that keeps every micro-batch's rows by batch id (it runs in this process)."""

    def __init__(self) -> None:
        self.batches: dict[int, list[Change]] = {}
        self.failed: dict[int, list[Change]] = {}
        self.fail_next = False
        """Fail the next batch after reading it, as a query killed before it committed the batch."""

    def __call__(self, frame: DataFrame, batch_id: int) -> None:
        rows = sorted((r["rowkind"], r["id"], r["v"]) for r in frame.collect())
        if self.fail_next:
            self.fail_next = False
            self.failed[batch_id] = rows
            raise RuntimeError(f"killed in batch {batch_id}")
        assert batch_id not in self.batches or self.batches[batch_id] == rows  # a replay is equal
        self.batches[batch_id] = rows


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


Offset = dict[str, Any]
"""The source's offset as Spark reports it (a JSON object)."""


def _offsets(query: Any) -> dict[int, tuple[Offset | None, Offset]]:
    """Each batch of a query run: (startOffset, endOffset) of the source, as Spark reported them."""
    out: dict[int, tuple[Offset | None, Offset]] = {}
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
def test_a_streaming_query_delivers_every_change_once_across_a_kill_and_a_restart(
    spark: SparkSession, client: CoordinatorClient, tmp_path: Path, primary_key: bool
) -> None:
    """The issue's acceptance: a query reads while another job appends and upserts in 10 commits; each
    micro-batch holds the changes of its snapshots; killed in a batch (its sink fails) and restarted from
    its checkpoint, then stopped and restarted again, the union of what it delivered is every change
    exactly once; its consumer kept what it had not read through an expiration."""
    register(spark)
    table = stream_table(client, f"accept_{primary_key}", primary_key)
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

    def more_changes() -> None:
        for r in range(1, 5):
            changes(r)

    other = threading.Thread(target=more_changes)
    other.start()
    other.join()
    latest = client.latest_snapshot(table).id
    _wait_until(
        lambda: any(end["snapshot"] == latest for _, end in _offsets(query).values()), "run 1 to catch up"
    )
    offsets |= _offsets(query)
    # killed: the batch of round 5 fails after Spark logged its offsets, before it was committed
    sink.fail_next = True
    changes(5)
    with pytest.raises(Exception, match="killed in batch"):
        query.awaitTermination(120)
    # down: two more commits, and an expiration that would take them if the consumer let it
    for r in range(6, 8):
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
    ((killed, rows),) = sink.failed.items()
    assert sink.batches[killed] == rows  # the killed batch was delivered again, alike
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
    table = stream_table(client, "replayed", primary_key=False)
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
