"""Test support for the Spark tests: input files, expected rows and what a table holds on storage."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from coordinator_client import CoordinatorClient
from coordinator_client.spark.layout import filesystem

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def spark_frame(spark: SparkSession, rows: pa.Table, folder: Path, name: str) -> DataFrame:
    """`rows` as a Spark DataFrame in the same order (one Parquet file, one split)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.parquet"
    pq.write_table(rows, path)
    return spark.read.parquet(str(path))


def canonical(rows: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Rows sorted by `keys`, all fields nullable and without metadata, so two readers compare equal."""
    schema = pa.schema([pa.field(f.name, f.type) for f in rows.schema])
    rows = rows.cast(schema).combine_chunks()
    return rows.take(pc.sort_indices(rows, sort_keys=[(k, "ascending") for k in keys]))


def assert_same_rows(actual: pa.Table, expected: pa.Table, keys: Sequence[str], what: str) -> None:
    actual = canonical(actual.select(expected.column_names), keys)
    expected = canonical(expected, keys)
    assert actual.num_rows == expected.num_rows, (
        f"{what}: {actual.num_rows} rows, expected {expected.num_rows}"
    )
    if not actual.equals(expected):
        for name in expected.column_names:
            if not actual[name].equals(expected[name]):
                diff = pc.not_equal(actual[name], expected[name])
                first = pc.index(diff, True).as_py()
                raise AssertionError(
                    f"{what}: column {name} differs first at row {first}: "
                    f"{actual.slice(first, 1).to_pylist()} != {expected.slice(first, 1).to_pylist()}"
                )
        raise AssertionError(f"{what}: rows differ")


def data_files_on_storage(location: str) -> set[str]:
    """Data files under a table folder (local or S3), relative to it."""
    fs, root = filesystem(location)
    infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    return {
        i.path[len(root) :].lstrip("/")
        for i in infos
        if i.type == pafs.FileType.File and i.base_name.startswith("data-")
    }


def data_files_referenced(client: CoordinatorClient, table_id: str) -> set[str]:
    """Data files some snapshot of the table references, relative to its folder."""
    location = client.get_table(table_id).location
    referenced: set[str] = set()
    for snapshot in client.list_snapshots(table_id, limit=1000).snapshots:
        for f in client.live_files(table_id, snapshot.id).files:
            referenced.add(f.path.removeprefix(location).lstrip("/"))
    return referenced
