"""A Spark write whose commit answer is lost: the coordinator holds the answer after the commit stands
(tests/support/held_answer.py) past the writer's client timeout. The writer must not take the lost answer
for a failure: it asks for the outcome, keeps its data files, and the table reads back with the rows; and when
nobody can say (the coordinator is gone), the files stay."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from coordinator.settings import Settings
from coordinator_client import CoordinatorClient
from coordinator_client.spark import NAME, read, register, write
from tests.spark.tables import assert_same_rows, data_files_on_storage, data_files_referenced
from tests.support.held_answer import HeldAnswer
from tests.support.paimon_files import create_table, pypaimon_table
from tests.support.served import LiveServer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def test_a_write_whose_answer_is_lost_keeps_its_files_and_reads_back(
    spark: SparkSession, live_server: LiveServer, client: CoordinatorClient, warehouse: Path
) -> None:
    table = create_table(client, "s", "lost", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"]).id
    df = spark.range(0, 3_000).selectExpr("cast(id % 3 as string) as dt", "id")

    with (
        HeldAnswer(live_server.services, table) as held,
        CoordinatorClient(live_server.url, timeout=5) as impatient,
    ):
        answer = write(df, table, client=impatient)
        # The write returned while the server still held its commit's answer: it learnt the outcome.
        assert held.reached.is_set()

    assert held.held == [1]
    assert [s.id for s in answer.snapshots] == [1]
    # Learnt by asking, not by sending again: the table has the one commit.
    assert [c.outcome for c in client.commit_history(table).commits] == ["committed"]
    location = client.get_table(table).location
    on_storage = data_files_on_storage(location)
    assert len(on_storage) >= 3  # one partition each at least
    assert on_storage == data_files_referenced(client, table)
    expected = pa.table({"dt": [str(i % 3) for i in range(3_000)], "id": pa.array(range(3_000), pa.int64())})
    assert_same_rows(read(spark, table, client=client).toArrow(), expected, ["id"], "our reader")
    assert_same_rows(pypaimon_table(warehouse, table), expected, ["id"], "pypaimon")


def test_a_data_source_write_whose_coordinator_goes_away_keeps_its_files_through_sparks_abort(
    spark: SparkSession,
    live_server: LiveServer,
    client: CoordinatorClient,
    settings: Settings,
    warehouse: Path,
) -> None:
    """Spark calls the writer's abort after its commit fails; the commit stands, so abort must not delete."""
    from pyspark.errors import AnalysisException

    table = create_table(client, "s", "gone", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"]).id
    location = client.get_table(table).location
    df = spark.range(0, 300).selectExpr("cast(id % 3 as string) as dt", "id")
    register(spark)

    def stop_server(held: HeldAnswer) -> None:
        if held.reached.wait(60):
            live_server.server.should_exit = True

    with HeldAnswer(live_server.services, table) as held:
        threading.Thread(target=stop_server, args=(held,), daemon=True).start()
        with pytest.raises(AnalysisException) as failed:
            df.write.format(NAME).option("url", live_server.url).option("timeout", "2").mode("append").save(
                table
            )
    live_server.thread.join(timeout=30)
    assert "WriteOutcomeUnknown" in str(failed.value)
    kept = data_files_on_storage(location)
    assert len(kept) >= 3  # one partition each at least: abort left them
    with LiveServer(settings) as restarted, CoordinatorClient(restarted.url, timeout=60) as again:
        assert [s.commit_kind for s in again.list_snapshots(table).snapshots] == ["APPEND"]
        assert data_files_referenced(again, table) == kept
    expected = pa.table({"dt": [str(i % 3) for i in range(300)], "id": pa.array(range(300), pa.int64())})
    assert_same_rows(pypaimon_table(warehouse, table), expected, ["id"], "pypaimon")
