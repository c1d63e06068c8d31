"""Exactly-once and cleanup: task retries, failed jobs, rejected commits, racing compactions, bad input."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
import pytest

from coordinator_client import Conflict, CoordinatorClient, FileListResponse, WriteAborted
from coordinator_client.spark import compact, read, write
from tests.spark.tables import (
    assert_same_rows,
    data_files_on_storage,
    data_files_referenced,
)
from tests.support.paimon_files import create_table, pypaimon_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class FailFirstAttempt:
    """Test fault: the first attempt of the task passes rows on until the writer downstream has put a data
    file on storage, then fails (an exception, or the Python worker dying as in an OOM kill)."""

    table_folder: str
    marker: str
    how: str

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        failing = context is not None and context.attemptNumber() == 0
        passed = 0
        for batch in batches:
            yield batch
            passed += batch.num_rows
            if failing and passed >= 300_000:
                deadline = time.monotonic() + 60
                while not list(Path(self.table_folder).rglob("data-*.parquet")):
                    if time.monotonic() > deadline:
                        raise AssertionError("the writer put no file on storage")
                    time.sleep(0.05)
                Path(self.marker).write_text(self.how)
                if self.how == "crash":
                    os._exit(1)
                raise RuntimeError("injected task failure")


@pytest.mark.parametrize("how", ["exception", "crash"])
def test_a_failed_and_retried_task_leaves_no_duplicates_and_no_files(
    spark: SparkSession, client: CoordinatorClient, warehouse: Path, tmp_path: Path, how: str
) -> None:
    table = create_table(
        client, "t", "retried", {"id": "BIGINT", "v": "STRING"}, options={"bucket": "2", "bucket-key": "id"}
    ).id
    location = client.get_table(table).location
    marker = tmp_path / "failed-once"
    # One input partition: a single task, whose first attempt fails after its files hit storage.
    df = spark.range(0, 400_000, numPartitions=1).selectExpr("id", "cast(id as string) as v")
    faulty = df.mapInArrow(FailFirstAttempt(location, str(marker), how), df.schema)

    response = write(faulty, table, client=client)

    assert marker.read_text() == how, "the first attempt did not fail"
    assert [s.id for s in response.snapshots] == [1]
    rows = pypaimon_table(warehouse, table)
    assert rows.num_rows == 400_000
    assert sorted(rows["id"].to_pylist()) == list(range(400_000))
    assert data_files_on_storage(location) == data_files_referenced(client, table)


def test_a_failed_job_commits_nothing_deletes_its_files_and_says_why(
    spark: SparkSession, client: CoordinatorClient
) -> None:
    table = create_table(client, "t", "strict", {"id": "BIGINT", "v": "STRING NOT NULL"}).id
    location = client.get_table(table).location
    # 200,000 good rows get written before the first null arrives in the second task.
    df = spark.range(0, 400_000, numPartitions=2).selectExpr(
        "id", "case when id = 399999 then null else cast(id as string) end as v"
    )

    with pytest.raises(WriteAborted, match=r"column 'v' of t.strict is NOT NULL, but 1 row\(s\) are null"):
        write(df, table, client=client)

    assert client.get_table(table).latest_snapshot_id is None
    assert data_files_on_storage(location) == set()


def test_bad_arguments_are_rejected_before_anything_is_written(
    spark: SparkSession, client: CoordinatorClient
) -> None:
    append = create_table(client, "t", "plain", {"dt": "STRING", "id": "BIGINT"}, partitionKeys=["dt"]).id
    keyed = create_table(
        client,
        "t",
        "keyed",
        {"id": "BIGINT NOT NULL", "v": "STRING NOT NULL"},
        primaryKeys=["id"],
        options={"bucket": "2"},
    ).id
    rows = spark.createDataFrame([("a", 1)], "dt string, id long")
    cases: list[tuple[str, dict[str, Any], str]] = [
        (append, {"df": rows.withColumnRenamed("id", "idd")}, r"has no column\(s\) \['idd'\]"),
        (append, {"df": rows.select("id")}, r"lacks column\(s\) \['dt'\]"),
        (append, {"mode": "delete"}, "needs a primary-key table"),
        (append, {"mode": "upsert"}, "mode must be one of"),
        (append, {"partition": {"dt": "a"}}, "apply to mode='overwrite' only"),
        (append, {"mode": "overwrite", "partition": {"id": 1}}, "'id' is not a partition key"),
        (keyed, {"df": rows.select("id"), "mode": "delete"}, r"lacks column\(s\) \['v'\]"),
    ]
    for table, arguments, message in cases:
        arguments = {"df": rows, **arguments}
        with pytest.raises(ValueError, match=message):
            write(arguments.pop("df"), table, client=client, **arguments)
    for table in (append, keyed):
        assert client.get_table(table).latest_snapshot_id is None
        assert data_files_on_storage(client.get_table(table).location) == set()


class PlanTogether(CoordinatorClient):
    """The real client, except that the two compactions using it both wait, after reading the live files,
    until the other has read them too: both plan from the same snapshot, so their commits must race."""

    def __init__(self, url: str) -> None:
        super().__init__(url, timeout=120)
        self.barrier = threading.Barrier(2, timeout=60)

    def live_files(
        self,
        table_id: str,
        snapshot: int | None = None,
        partition: Mapping[str, Any] | None = None,
        *,
        scope: Literal["all", "delta"] = "all",
    ) -> FileListResponse:
        answer = super().live_files(table_id, snapshot, partition, scope=scope)
        self.barrier.wait()
        return answer


def test_of_two_racing_compactions_one_commits_and_the_other_leaves_nothing(
    spark: SparkSession, client: CoordinatorClient, live_server: Any, warehouse: Path
) -> None:
    table = create_table(
        client,
        "t",
        "raced",
        {"id": "BIGINT NOT NULL", "v": "STRING"},
        primaryKeys=["id"],
        options={"bucket": "1"},
    ).id
    for round_ in range(3):
        df = spark.range(0, 1_000).selectExpr("id", f"'round {round_} ' || id as v")
        write(df, table, client=client)
    racing = PlanTogether(live_server.url)
    outcomes: list[Any] = [None, None]

    def run(i: int) -> None:
        try:
            outcomes[i] = compact(spark, table, client=racing)
        except WriteAborted as error:
            outcomes[i] = error

    with racing:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)

    [won] = [o for o in outcomes if not isinstance(o, WriteAborted)]
    [lost] = [o for o in outcomes if isinstance(o, WriteAborted)]
    assert [s.commit_kind for s in won.snapshots] == ["COMPACT"]
    assert isinstance(lost.__cause__, Conflict)
    assert lost.__cause__.type == "DELETED_FILE_MISSING"
    assert "DELETED_FILE_MISSING" in str(lost)
    assert lost.deleted_files >= 1
    kinds = [s.commit_kind for s in client.list_snapshots(table).snapshots]
    assert sorted(kinds) == ["APPEND", "APPEND", "APPEND", "COMPACT"]
    location = client.get_table(table).location
    assert data_files_on_storage(location) == data_files_referenced(client, table)
    expected = pa.table(
        {"id": pa.array(range(1_000), pa.int64()), "v": [f"round 2 {i}" for i in range(1_000)]}
    )
    assert_same_rows(pypaimon_table(warehouse, table), expected, ["id"], "pypaimon after the race")
    assert_same_rows(
        read(spark, table, client=client).toArrow(), expected, ["id"], "our reader after the race"
    )
