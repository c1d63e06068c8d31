"""Acceptance of the data source's writes: `df.write.format("paimon-coordinator")` appends, upserts,
deletes by key and overwrites (whole table, a static partition, dynamic partitions) primary-key and append
tables; after every step pypaimon and the data source's own reader return the rows an independent pandas
model computes. Rows of one key spread over several Spark tasks: the later task's row wins."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from coordinator_client import CoordinatorClient
from coordinator_client.spark import NAME, compact, register
from coordinator_client.spark.layout import filesystem
from coordinator_client.spark.write_job import TASK_SEQUENCE_STRIDE
from tests.spark.tables import assert_same_rows, data_files_on_storage, data_files_referenced
from tests.support.paimon_files import create_table, pypaimon_table
from tests.support.served import LiveServer

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FIELDS = {"dt": "STRING NOT NULL", "id": "BIGINT NOT NULL", "name": "STRING", "qty": "INT"}
ARROW = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("qty", pa.int32())])
KEY = ["dt", "id"]
DAYS = ["2026-11-20", "2026-11-21", "2026-11-22"]


def _rows(ids: np.ndarray, label: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "dt": [DAYS[i % 3] for i in ids],
            "id": ids,
            "name": [f"{label}{n}" for n in range(len(ids))],
            "qty": pd.array([None if n % 17 == 0 else n % 1000 for n in range(len(ids))], dtype="Int32"),
        }
    )


def _sliced(spark: SparkSession, table: pa.Table, partitions: int) -> DataFrame:
    """`table` as a DataFrame of `partitions` contiguous slices, in order: the DataFrame's order is the
    model's, so the later of two rows of a key is in the same or a later Spark partition."""
    from pyspark.sql import functions as F

    n = table.num_rows
    order = pa.array(np.arange(n, dtype=np.int64))
    frame = spark.createDataFrame(table.append_column("__order", order).to_pandas())
    # Range partitioning by the row's place: slice i holds rows i*n/p .. (i+1)*n/p, in order.
    return (
        frame.repartitionByRange(partitions, "__order")
        .sortWithinPartitions("__order")
        .drop("__order")
        .select(*(F.col(c) for c in ARROW.names))
    )


def _upsert(model: pd.DataFrame, changes: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([model, changes]).drop_duplicates(subset=KEY, keep="last")


def _delete(model: pd.DataFrame, keys: pd.DataFrame) -> pd.DataFrame:
    gone = pd.MultiIndex.from_frame(keys[KEY])
    return model[~pd.MultiIndex.from_frame(model[KEY]).isin(gone)]


class Writer:
    """`df.write.format("paimon-coordinator")` against the test's coordinator."""

    def __init__(self, spark: SparkSession, server: LiveServer, table: str) -> None:
        register(spark)
        self.spark, self.url, self.table = spark, server.url, table

    def save(self, df: DataFrame, mode: str = "append", **options: str) -> None:
        df.write.format(NAME).option("url", self.url).options(**options).mode(mode).save(self.table)

    def read(self, **options: str) -> pa.Table:
        return (
            self.spark.read.format(NAME).option("url", self.url).options(**options).load(self.table).toArrow()
        )


def _check(writer: Writer, warehouse: str, model: pd.DataFrame, snapshot: int, what: str) -> None:
    want = pa.Table.from_pandas(model, schema=ARROW, preserve_index=False)
    assert_same_rows(pypaimon_table(warehouse, writer.table, snapshot), want, KEY, f"{what}: pypaimon")
    ours = writer.read(**{"snapshot-id": str(snapshot)})
    assert_same_rows(ours, want, KEY, f"{what}: the data source")


@pytest.mark.stores("local", "s3")
def test_a_primary_key_table_written_updated_deleted_overwritten_and_compacted(
    spark: SparkSession,
    live_server: LiveServer,
    client: CoordinatorClient,
    warehouse_location: str,
    store: str,
) -> None:
    n = 30_000 if store == "local" else 3_000
    table = create_table(
        client, "ds", "orders", FIELDS, partitionKeys=["dt"], primaryKeys=KEY, options={"bucket": "3"}
    ).id
    writer = Writer(spark, live_server, table)
    rng = np.random.default_rng(17)
    base = _rows(rng.permutation(n), "base-")
    # Drawn with replacement: keys repeat within the write, across its three Spark tasks.
    updates = _rows(rng.integers(0, n, n // 3), "update-")
    assert updates["id"].duplicated().sum() > n // 30
    deletes = _rows(rng.choice(n + 100, n // 10, replace=False), "delete-")
    day = DAYS[1]
    replacement = _rows(np.arange(n, n + 300) * 3 + 1, "replaced-")  # ids in the 2nd day only
    assert set(replacement["dt"]) == {day}

    model = base
    writer.save(_sliced(spark, _table(base), 3))
    _check(writer, warehouse_location, model, 1, "write")
    writer.save(_sliced(spark, _table(updates), 3))
    model = _upsert(model, updates)
    _check(writer, warehouse_location, model, 2, "update")
    writer.save(_sliced(spark, _table(deletes), 2), operation="delete")
    model = _delete(model, deletes)
    _check(writer, warehouse_location, model, 3, "delete")
    writer.save(_sliced(spark, _table(replacement), 2), "overwrite", **{"overwrite-partition": f"dt={day}"})
    model = pd.concat([model[model["dt"] != day], replacement])
    _check(writer, warehouse_location, model, 4, "overwrite one partition")
    answer = compact(spark, table, client=client)
    assert answer is not None
    [snapshot] = answer.snapshots
    assert snapshot.commit_kind == "COMPACT"
    _check(writer, warehouse_location, model, snapshot.id, "compaction")
    kinds = [s.commit_kind for s in reversed(client.list_snapshots(table).snapshots)]
    assert kinds == ["APPEND", "APPEND", "APPEND", "OVERWRITE", "COMPACT"]
    location = client.get_table(table).location
    assert data_files_on_storage(location) == data_files_referenced(client, table)


def test_an_append_table_appended_overwritten_and_compacted(
    spark: SparkSession, live_server: LiveServer, client: CoordinatorClient, warehouse_location: str
) -> None:
    table = create_table(client, "ds", "events", FIELDS, partitionKeys=["dt"]).id
    writer = Writer(spark, live_server, table)
    first, second = _rows(np.arange(9_000), "first-"), _rows(np.arange(9_000, 12_000), "second-")
    writer.save(_sliced(spark, _table(first), 3))
    writer.save(_sliced(spark, _table(second), 2))
    model = pd.concat([first, second])
    _check(writer, warehouse_location, model, 2, "two appends")

    static = _rows(np.arange(20_000, 20_030) * 3, "static-")  # all in the first day
    writer.save(_sliced(spark, _table(static), 1), "overwrite", **{"overwrite-partition": f"dt={DAYS[0]}"})
    model = pd.concat([model[model["dt"] != DAYS[0]], static])
    _check(writer, warehouse_location, model, 3, "static overwrite")

    dynamic = _rows(np.arange(30_000, 30_020) * 3 + 2, "dynamic-")  # the third day only
    writer.save(_sliced(spark, _table(dynamic), 1), "overwrite", partitionOverwriteMode="dynamic")
    model = pd.concat([model[model["dt"] != DAYS[2]], dynamic])
    _check(writer, warehouse_location, model, 4, "dynamic overwrite")

    answer = compact(spark, table, client=client)
    assert answer is not None
    assert [s.commit_kind for s in answer.snapshots] == ["COMPACT"]
    _check(writer, warehouse_location, model, 5, "compaction")

    everything = _rows(np.arange(40_000, 40_010), "all-")
    writer.save(_sliced(spark, _table(everything), 1), "overwrite")
    _check(writer, warehouse_location, everything, 6, "whole-table overwrite")
    # Append files are numbered per bucket without overlap, continuing after the live ones.
    files = client.live_files(table).files
    by_bucket: dict[str, list[tuple[int, int]]] = {}
    for f in files:
        by_bucket.setdefault(json.dumps(f.partition), []).append(
            (f.min_sequence_number, f.max_sequence_number)
        )
    for ranges in by_bucket.values():
        ranges.sort()
        assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges)), ranges


def test_of_a_key_in_several_tasks_the_later_task_wins_and_numbers_follow_the_task(
    spark: SparkSession, live_server: LiveServer, client: CoordinatorClient, warehouse_location: str
) -> None:
    table = create_table(client, "ds", "keys", FIELDS, primaryKeys=["id"], options={"bucket": "1"}).id
    writer = Writer(spark, live_server, table)
    # The same 100 keys in each of three slices; slice 2 is last in the DataFrame's order.
    rows = pd.concat([_rows(np.arange(100), f"slice{s}-") for s in range(3)], ignore_index=True)
    writer.save(_sliced(spark, _table(rows), 3))
    read = writer.read()
    assert sorted(read["name"].to_pylist()) == sorted(f"slice2-{n}" for n in range(100))
    assert_same_rows(pypaimon_table(warehouse_location, table), read, ["id"], "pypaimon")
    # Each task numbered its rows from the bucket's next number (0) plus its partition index x 2^32.
    starts = sorted(f.min_sequence_number for f in client.live_files(table).files)
    assert starts == [0, TASK_SEQUENCE_STRIDE, 2 * TASK_SEQUENCE_STRIDE]
    # A second write continues after the highest number.
    writer.save(_sliced(spark, _table(_rows(np.arange(5), "again-")), 1))
    newest = max(f.max_sequence_number for f in client.live_files(table).files)
    assert newest == 2 * TASK_SEQUENCE_STRIDE + 99 + 5


def _table(rows: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(rows, schema=ARROW, preserve_index=False)


def test_a_resent_write_commits_once_and_carries_its_snapshot_properties(
    spark: SparkSession, live_server: LiveServer, client: CoordinatorClient
) -> None:
    table = create_table(client, "ds", "once", FIELDS, partitionKeys=["dt"]).id
    writer = Writer(spark, live_server, table)
    df = _sliced(spark, _table(_rows(np.arange(600), "once-")), 2)
    options = {"commit-user": "nightly-load", "commit-identifier": "20261124", "snapshot.property.run": "r1"}
    writer.save(df, **options)
    writer.save(df, **options)  # a resend of the same job: the coordinator answers it with the first commit

    assert [s.id for s in client.list_snapshots(table).snapshots] == [1]
    assert writer.read().num_rows == 600
    location = client.get_table(table).location
    assert data_files_on_storage(location) == data_files_referenced(client, table)
    fs, root = filesystem(location)
    with fs.open_input_stream(f"{root}/snapshot/snapshot-1") as f:
        snapshot = json.loads(f.read())
    assert snapshot["commitUser"] == "nightly-load"
    assert snapshot["commitIdentifier"] == 20261124
    assert snapshot["properties"] == {"run": "r1"}


BAD_OPTIONS: list[tuple[str, str, dict[str, str], str]] = [
    ("append", "events", {"operation": "upsert"}, "'operation'"),
    ("append", "events", {"operation": "delete"}, "needs a primary-key table"),
    ("overwrite", "events", {"overwrite-partition": "dt"}, "'overwrite-partition': expected key=value"),
    ("overwrite", "events", {"overwrite-partition": "id=1"}, "'id' is not a partition key"),
    ("append", "events", {"overwrite-partition": "dt=a"}, "applies to mode('overwrite') only"),
    ("overwrite", "events", {"partitionOverwriteMode": "sometimes"}, "'partitionOverwriteMode'"),
    ("append", "events", {"commit-identifier": "7"}, "set commit-user"),
    (
        "append",
        "events",
        {"commit-user": "u", "commit-identifier": "x"},
        "'commit-identifier': expected an integer",
    ),
    ("overwrite", "keyed", {"operation": "delete"}, "cannot overwrite"),
    ("append", "events", {"timeout": "-1"}, "'timeout': must be positive"),
]


def test_bad_options_are_named_and_nothing_is_written(
    spark: SparkSession, live_server: LiveServer, client: CoordinatorClient
) -> None:
    from pyspark.errors import AnalysisException

    tables = {
        "events": create_table(client, "ds", "events", FIELDS, partitionKeys=["dt"]).id,
        "keyed": create_table(client, "ds", "keyed", FIELDS, primaryKeys=KEY, options={"bucket": "2"}).id,
    }
    df = _sliced(spark, _table(_rows(np.arange(10), "bad-")), 1)
    register(spark)
    for mode, name, options, message in BAD_OPTIONS:
        with pytest.raises(AnalysisException) as refused:
            df.write.format(NAME).option("url", live_server.url).options(**options).mode(mode).save(
                tables[name]
            )
        assert message in str(refused.value), (options, str(refused.value)[:2000])
    for table in tables.values():
        assert client.get_table(table).latest_snapshot_id is None
        assert data_files_on_storage(client.get_table(table).location) == set()


def test_sql_views_select_and_insert(
    spark: SparkSession, live_server: LiveServer, client: CoordinatorClient, warehouse_location: str
) -> None:
    table = create_table(client, "ds", "sql", FIELDS, primaryKeys=KEY, options={"bucket": "2"}).id
    register(spark)
    view = (
        f"CREATE OR REPLACE TEMPORARY VIEW orders USING `{NAME}` "
        f"OPTIONS (table '{table}', url '{live_server.url}')"
    )
    spark.sql(view)
    spark.sql("INSERT INTO orders VALUES ('2026-11-20', 1, 'one', 1), ('2026-11-20', 2, 'two', 2)")
    spark.sql("INSERT INTO orders VALUES ('2026-11-20', 2, 'deux', 22)")
    got = spark.sql("SELECT id, name, qty FROM orders WHERE id >= 1 ORDER BY id").collect()
    assert [tuple(r) for r in got] == [(1, "one", 1), (2, "deux", 22)]
    assert sorted(pypaimon_table(warehouse_location, table)["name"].to_pylist()) == ["deux", "one"]
    spark.sql("INSERT OVERWRITE orders VALUES ('2026-11-21', 3, 'three', 3)")
    # Spark plans a view's scan once, at its first query: a view made again reads the newest snapshot.
    spark.sql(view)
    assert [tuple(r) for r in spark.sql("SELECT id, name FROM orders").collect()] == [(3, "three")]
    kinds = [s.commit_kind for s in client.list_snapshots(table).snapshots]
    assert kinds == ["OVERWRITE", "APPEND", "APPEND"]


def test_a_stream_write_replayed_after_a_crash_between_commit_and_checkpoint_commits_once(
    spark: SparkSession, live_server: LiveServer, client: CoordinatorClient, tmp_path: Path
) -> None:
    """The crash is made as its aftermath: Spark writes a batch's offsets, commits the sink, then notes the
    batch in the checkpoint's `commits/`. Removing that note is what a crash between the two leaves; the
    restarted query runs the batch again with the same id, which must not add its rows twice."""
    table = create_table(client, "ds", "streamed", FIELDS, primaryKeys=KEY, options={"bucket": "2"}).id
    append = create_table(client, "ds", "streamed_log", FIELDS, partitionKeys=["dt"]).id
    inputs, checkpoints = tmp_path / "in", tmp_path / "checkpoints"
    inputs.mkdir()
    for i in range(3):
        _table(_rows(np.arange(i * 100, i * 100 + 100), f"file{i}-")).to_pandas().to_parquet(
            inputs / f"{i}.parquet"
        )
    register(spark)

    def run(target: str) -> None:
        source = (
            spark.readStream.schema("dt string, id long, name string, qty int")
            .option("maxFilesPerTrigger", 1)
            .parquet(str(inputs))
        )
        query = (
            source.writeStream.format(NAME)
            .option("url", live_server.url)
            .option("checkpointLocation", str(checkpoints / target))
            .trigger(availableNow=True)
            .start(target)
        )
        query.awaitTermination(300)
        assert query.exception() is None

    for target in (table, append):
        run(target)
        assert [s.id for s in client.list_snapshots(target).snapshots] == [3, 2, 1]
        last = checkpoints / target / "commits" / "2"
        assert last.exists()
        last.unlink()
        (last.parent / ".2.crc").unlink(missing_ok=True)  # Hadoop's checksum of the note goes with it
        run(target)  # replays batch 2
        assert last.exists(), "the restarted query did not replay the batch"
        assert [s.id for s in client.list_snapshots(target).snapshots] == [3, 2, 1]
        assert client.get_table(target).latest_snapshot_id == 3
        rows = Writer(spark, live_server, target).read()
        assert sorted(rows["id"].to_pylist()) == list(range(300))
        location = client.get_table(target).location
        assert data_files_on_storage(location) == data_files_referenced(client, target)
        users = {c.commit_user for c in client.commit_history(target).commits}
        assert len(users) == 1
        assert next(iter(users)).startswith("spark-stream-")
