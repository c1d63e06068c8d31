"""Spark jobs writing several tables in one multi-table transaction (`coordinator_client.spark.transaction`):
batch, a failing job, and a streaming foreachBatch whose batch id is the transaction's identifier."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from coordinator_client import CoordinatorClient
from coordinator_client.spark import transaction
from tests.spark.tables import data_files_on_storage, data_files_referenced
from tests.support.paimon_files import create_table, pypaimon_rows
from tests.support.served import LiveServer

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

FACT = {"dt": "STRING", "id": "BIGINT", "customer": "BIGINT"}
DIM = {"id": "BIGINT", "name": "STRING"}


def _tables(client: CoordinatorClient) -> tuple[str, str]:
    fact = create_table(client, "tx", "orders", FACT, partitionKeys=["dt"]).id
    dim = create_table(client, "tx", "customers", DIM, primaryKeys=["id"], options={"bucket": "2"}).id
    return fact, dim


def _orders(spark: SparkSession, ids: range) -> DataFrame:
    return spark.createDataFrame([("2024-01-01", i, i % 7) for i in ids], "dt string, id long, customer long")


def _customers(spark: SparkSession, ids: range) -> DataFrame:
    return spark.createDataFrame([(i, f"c{i}") for i in ids], "id long, name string")


def test_a_job_writes_a_fact_and_its_dimension_in_one_transaction(
    spark: SparkSession, client: CoordinatorClient, warehouse: Path
) -> None:
    fact, dim = _tables(client)
    with transaction(client, commit_user="nightly", identifier=1) as tx:
        tx.write(_orders(spark, range(100)), fact)
        tx.write(_customers(spark, range(7)), dim)
        # Nothing is visible before the block ends.
        assert client.get_table(fact).latest_snapshot_id is None
    assert tx.response is not None
    assert [(t.table, [s.id for s in t.snapshots]) for t in tx.response.tables] == [(fact, [1]), (dim, [1])]
    assert sorted(r["id"] for r in pypaimon_rows(warehouse, fact)) == list(range(100))
    assert pypaimon_rows(warehouse, dim) == [{"id": i, "name": f"c{i}"} for i in range(7)]
    for table in (fact, dim):
        (record,) = client.commit_history(table).commits
        assert record.details == {"transaction": [fact, dim]}
        assert data_files_on_storage(client.get_table(table).location) == data_files_referenced(client, table)


def test_a_job_failing_after_its_first_write_leaves_neither_table_changed_nor_files(
    spark: SparkSession, client: CoordinatorClient, warehouse: Path
) -> None:
    fact, dim = _tables(client)
    location = client.get_table(fact).location
    written: list[set[str]] = []

    def job() -> None:
        with transaction(client) as tx:
            tx.write(_orders(spark, range(100)), fact)
            written.append(data_files_on_storage(location))
            raise RuntimeError("the job failed before writing the dimension")

    with pytest.raises(RuntimeError, match="dimension"):
        job()
    assert written[0]  # the fact's files had been written, waiting for the commit
    assert client.get_table(fact).latest_snapshot_id is None
    assert client.get_table(dim).latest_snapshot_id is None
    assert pypaimon_rows(warehouse, fact) == []
    assert data_files_on_storage(location) == set()


def test_a_stream_commits_each_batch_to_both_tables_once_also_when_a_batch_is_replayed(
    spark: SparkSession, live_server: LiveServer, client: CoordinatorClient, warehouse: Path, tmp_path: Path
) -> None:
    fact, dim = _tables(client)
    inputs = tmp_path / "in"
    inputs.mkdir()
    for i in range(3):
        frame: pd.DataFrame = _orders(spark, range(i * 10, i * 10 + 10)).toPandas()
        frame.to_parquet(inputs / f"{i}.parquet")

    def sink(batch: DataFrame, batch_id: int) -> None:
        with transaction(client, commit_user="orders-stream", identifier=batch_id) as tx:
            tx.write(batch, fact)
            tx.write(batch.selectExpr("customer AS id", "concat('c', customer) AS name").distinct(), dim)

    source = spark.readStream.schema("dt string, id long, customer long").option("maxFilesPerTrigger", 1)
    query = (
        source.parquet(str(inputs))
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    assert query.exception() is None
    assert [s.id for s in client.list_snapshots(fact).snapshots] == [3, 2, 1]
    # Batch 1 again, as a restart from a checkpoint that missed its commit would run it.
    sink(spark.read.parquet(str(inputs / "1.parquet")), 1)
    assert [s.id for s in client.list_snapshots(fact).snapshots] == [3, 2, 1]
    assert [s.id for s in client.list_snapshots(dim).snapshots] == [3, 2, 1]
    assert sorted(r["id"] for r in pypaimon_rows(warehouse, fact)) == list(range(30))
    for table in (fact, dim):
        assert data_files_on_storage(client.get_table(table).location) == data_files_referenced(client, table)
