"""A table that only Paimon's own engine writes, through the REST catalog, read by our Spark reader: rows
pypaimon committed before and after it added a column through REST (old files read null in it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange

from coordinator_client import CoordinatorClient
from coordinator_client.spark import read
from tests.spark.tables import assert_same_rows
from tests.support.rest_writers import create_rest_table, rest_catalog, write_rows
from tests.support.served import LiveServer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BEFORE = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
AFTER = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("score", pa.float64())])


def test_our_reader_reads_what_pypaimon_committed_through_rest_across_an_alter(
    spark: SparkSession, client: CoordinatorClient, live_server: LiveServer
) -> None:
    catalog = rest_catalog(live_server.url)
    create_rest_table(catalog, "rest.events", BEFORE, primary_keys=["id"], options={"bucket": "2"})
    old = [{"id": i, "v": f"old {i}"} for i in range(50)]
    write_rows(catalog.get_table("rest.events"), pa.Table.from_pylist(old, schema=BEFORE))
    catalog.alter_table("rest.events", [SchemaChange.add_column("score", AtomicType("DOUBLE"))])
    new = [{"id": i, "v": f"new {i}", "score": i / 2} for i in range(40, 80)]  # 40-49 replace old rows
    write_rows(catalog.get_table("rest.events"), pa.Table.from_pylist(new, schema=AFTER))

    want = pa.Table.from_pylist([{**r, "score": None} for r in old[:40]] + new, schema=AFTER)
    assert_same_rows(read(spark, "rest.events", client=client).toArrow(), want, ["id"], "our reader")
    assert client.get_table("rest.events").schema_.id == 1
