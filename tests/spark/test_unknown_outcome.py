"""A Spark write whose commit answer is lost: the coordinator holds the answer after the commit stands
(tests/held_answer.py) past the writer's client timeout. The writer must not take the lost answer for a
failure: it asks for the outcome, keeps its data files, and the table reads back with the rows."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from coordinator_client import CoordinatorClient
from coordinator_client.spark import read, write
from tests.conftest import LiveServer
from tests.held_answer import HeldAnswer
from tests.paimon_files import create_table, pypaimon_table
from tests.spark.tables import assert_same_rows, data_files_on_storage, data_files_referenced

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
