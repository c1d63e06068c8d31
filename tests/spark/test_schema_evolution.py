"""ALTER TABLE seen from Spark: our reader and our compaction read files of older schemas by field id.

Rows written before an alter (added, renamed, widened and dropped columns) and after it are read by our
Spark reader, on local disk (Spark's Parquet reader) and S3 (pyarrow tasks), before and after a
compaction rewrites the old files under the new schema; pypaimon, the judge, agrees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from coordinator_client import CoordinatorClient
from coordinator_client.spark import compact, read, write
from tests.spark.tables import assert_same_rows
from tests.support.paimon_files import create_table, pypaimon_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CHANGES: list[dict[str, Any]] = [
    {"action": "addColumn", "fieldNames": ["qty"], "dataType": "BIGINT"},
    {"action": "renameColumn", "fieldNames": ["v"], "newName": "label"},
    {"action": "updateColumnType", "fieldNames": ["n"], "newDataType": "BIGINT"},
    {"action": "dropColumn", "fieldNames": ["gone"]},
    {"action": "updateColumnPosition", "move": {"fieldName": "qty", "type": "FIRST"}},
]
SCHEMA = pa.schema(
    [
        ("qty", pa.int64()),
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        ("label", pa.string()),
        ("n", pa.int64()),
    ]
)
KEYS = ["dt", "id"]


@pytest.mark.stores("local", "s3")
@pytest.mark.parametrize("primary_key", [True, False], ids=["primary-key", "append"])
def test_rows_of_every_schema_are_read_in_the_current_one_before_and_after_compaction(
    spark: SparkSession, client: CoordinatorClient, warehouse_location: str, primary_key: bool
) -> None:
    keys = {"primaryKeys": KEYS, "options": {"bucket": "2"}} if primary_key else {}
    fields = {"dt": "STRING NOT NULL", "id": "BIGINT NOT NULL", "v": "STRING", "n": "INT", "gone": "STRING"}
    table = create_table(client, "evolve", f"t_{int(primary_key)}", fields, partitionKeys=["dt"], **keys).id

    def before(start: int, count: int) -> DataFrame:
        return spark.range(start, start + count, numPartitions=2).selectExpr(
            "'a' as dt", "id", "'old ' || id as v", "cast(id as int) as n", "'x' as gone"
        )

    write(before(0, 300), table, client=client)
    altered = client.alter_table(table, CHANGES)
    assert [f.name for f in altered.schema_.fields] == SCHEMA.names
    after = spark.range(300, 400, numPartitions=2).selectExpr(
        "id * 2 as qty", "'a' as dt", "id", "'new ' || id as label", "id * 4294967296 as n"
    )
    write(after, table, client=client)

    old_rows = [{"qty": None, "dt": "a", "id": i, "label": f"old {i}", "n": i} for i in range(300)]
    new_rows = [
        {"qty": i * 2, "dt": "a", "id": i, "label": f"new {i}", "n": i * 4294967296} for i in range(300, 400)
    ]
    want = pa.Table.from_pylist(old_rows + new_rows, schema=SCHEMA)
    assert_same_rows(read(spark, table, client=client).toArrow(), want, KEYS, "our reader")
    assert_same_rows(
        read(spark, table, client=client, snapshot=1).toArrow(), want.slice(0, 300), KEYS, "at 1"
    )
    assert_same_rows(pypaimon_table(warehouse_location, table), want, KEYS, "pypaimon")

    assert compact(spark, table, client=client) is not None
    schema_ids = {f.schema_id for f in client.live_files(table).files}
    assert schema_ids == {altered.schema_.id}  # compaction wrote every file anew, in the current schema
    assert_same_rows(read(spark, table, client=client).toArrow(), want, KEYS, "our reader after compaction")
    assert_same_rows(pypaimon_table(warehouse_location, table), want, KEYS, "pypaimon after compaction")
