"""Acceptance: a primary-key table (4 buckets, 2 partitions) written, updated, deleted from and compacted
from Spark through the coordinator. After every step, our reader and pypaimon return exactly the rows that
plain pandas computes from the inputs, at the latest snapshot and at every earlier one."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from coordinator_client import CoordinatorClient
from coordinator_client.models import CommitResponse
from coordinator_client.spark import compact, read, write
from tests.spark.tables import (
    assert_same_rows,
    data_files_on_storage,
    data_files_referenced,
    spark_frame,
)
from tests.support.paimon_files import create_table, pypaimon_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.slow

SIZES = {"local": (1_000_000, 200_000, 10_000), "s3": (20_000, 4_000, 500)}
"""Rows written, updated (drawn with replacement) and deleted; on S3 each object costs a round trip."""
KEY = ["dt", "id"]
FIELDS = {
    "dt": "STRING NOT NULL",
    "id": "BIGINT NOT NULL",
    "name": "STRING",
    "amount": "DECIMAL(12, 2)",
    "qty": "INT",
    "day": "DATE",
}
ARROW = pa.schema(
    [
        ("dt", pa.string()),
        ("id", pa.int64()),
        ("name", pa.string()),
        ("amount", pa.decimal128(12, 2)),
        ("qty", pa.int32()),
        ("day", pa.date32()),
    ]
)


def _rows(ids: np.ndarray, label: str, rng: np.random.Generator) -> pd.DataFrame:
    n = len(ids)
    cents = rng.integers(-(10**8), 10**8, n)
    missing = rng.random(n) < 0.05
    qty = rng.integers(0, 1000, n).astype(object)
    qty[missing] = None
    return pd.DataFrame(
        {
            "dt": np.where(ids % 2 == 0, "2026-11-20", "2026-11-21"),
            "id": ids,
            "name": [f"{label}{i}" for i in range(n)],
            "amount": [Decimal(int(c)).scaleb(-2) for c in cents],
            "qty": qty,
            "day": pd.to_datetime(rng.integers(19000, 21000, n), unit="D").date,
        }
    )


def _arrow(frame: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(frame, schema=ARROW, preserve_index=False)


def _upsert(model: pd.DataFrame, changes: pd.DataFrame) -> pd.DataFrame:
    """Later rows of a key replace earlier ones, in input order: what the table must then hold."""
    return pd.concat([model, changes]).drop_duplicates(subset=KEY, keep="last")


def _delete(model: pd.DataFrame, keys: pd.DataFrame) -> pd.DataFrame:
    gone = pd.MultiIndex.from_frame(keys[KEY])
    return model[~pd.MultiIndex.from_frame(model[KEY]).isin(gone)]


@pytest.mark.stores("local", "s3")
def test_write_update_delete_compact_read_back_at_every_snapshot(
    spark: SparkSession, client: CoordinatorClient, warehouse_location: str, store: str, tmp_path: Path
) -> None:
    rows_, updates_, deletes_ = SIZES[store]
    table = create_table(
        client, "sales", "orders", FIELDS, partitionKeys=["dt"], primaryKeys=KEY, options={"bucket": "4"}
    ).id
    rng = np.random.default_rng(7)
    base = _rows(rng.permutation(rows_), "base-", rng)
    # Drawn with replacement: about 1 in 10 keys (19,000 of a million) is updated several times in one write.
    updates = _rows(rng.integers(0, rows_, updates_), "update-", rng)
    # A few keys that never existed: deleting them is a no-op.
    deletes = _rows(rng.choice(rows_ + 1_000, deletes_, replace=False), "delete-", rng)[KEY]
    assert updates["id"].duplicated().sum() > updates_ // 20

    inputs = tmp_path / "inputs"
    key_rows = pa.Table.from_pandas(
        deletes, schema=ARROW.remove(5).remove(4).remove(3).remove(2), preserve_index=False
    )
    models: dict[int, pd.DataFrame] = {}
    steps: list[tuple[str, Callable[[], CommitResponse | None]]] = [
        ("write", lambda: write(spark_frame(spark, _arrow(base), inputs, "base"), table, client=client)),
        (
            "update",
            lambda: write(spark_frame(spark, _arrow(updates), inputs, "updates"), table, client=client),
        ),
        (
            "delete",
            lambda: write(
                spark_frame(spark, key_rows, inputs, "deletes"), table, client=client, mode="delete"
            ),
        ),
        ("compact", lambda: compact(spark, table, client=client)),
    ]
    expected = base
    for step, run in steps:
        response = run()
        assert response is not None
        [snapshot] = response.snapshots
        assert snapshot.commit_kind == ("COMPACT" if step == "compact" else "APPEND")
        if step == "update":
            expected = _upsert(expected, updates)
        elif step == "delete":
            expected = _delete(expected, deletes)
        models[snapshot.id] = expected
        for snapshot_id, model in models.items():
            want = _arrow(model)
            ours = read(spark, table, client=client, snapshot=snapshot_id).toArrow()
            assert_same_rows(ours, want, KEY, f"after {step}, our reader at snapshot {snapshot_id}")
            theirs = pypaimon_table(warehouse_location, table, snapshot_id)
            assert_same_rows(theirs, want, KEY, f"after {step}, pypaimon at snapshot {snapshot_id}")

    assert sorted(models) == [1, 2, 3, 4]
    assert len(models[4]) == rows_ - (deletes["id"] < rows_).sum()
    # After the compaction every bucket is one file at the top level, with no delete rows left.
    files = client.live_files(table).files
    assert {(f.level, f.delete_row_count) for f in files} == {(5, 0)}
    assert len(files) == 8
    # Every data file on storage belongs to some snapshot: the four jobs left nothing behind.
    location = client.get_table(table).location
    assert data_files_on_storage(location) == data_files_referenced(client, table)
