"""The benchmark writer's side of a table: parquet files in Paimon's layout and the commit messages
that describe them.

Only what the benchmark's shape needs (a bucket-unaware append table), built on the client package's
partition naming and type mapping, so the benchmark does not depend on the test suite.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from coordinator_client.format.partition_path import partition_path
from coordinator_client.format.types import parse_type
from coordinator_client.spark.layout import arrow_type


class AppendTable:
    """An append table as a writer knows it from the coordinator's TableResponse JSON."""

    def __init__(self, table: dict[str, Any], filesystem: pafs.FileSystem | None = None) -> None:
        """`filesystem` writes the data files (an object store); without it they go to local disk."""
        schema = table["schema"]
        self.filesystem = filesystem
        self.id: str = table["id"]
        self.location = Path(table["location"])
        self.fields = [(f["name"], parse_type(f["type"])) for f in schema["fields"]]
        self.types = dict(self.fields)
        self.partition_keys: list[str] = schema["partitionKeys"]
        self.arrow_schema = pa.schema([pa.field(n, arrow_type(t), t.nullable) for n, t in self.fields])

    def partition_dir(self, partition: dict[str, Any]) -> str:
        names = self.partition_keys
        return partition_path(names, [partition[n] for n in names], [self.types[n] for n in names])

    def append_file(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """One data file of rows sharing a partition, in bucket 0; returns its DataFile JSON."""
        partition = {k: rows[0][k] for k in self.partition_keys}
        directory = self.location / self.partition_dir(partition) / "bucket-0"
        file_name = f"data-{uuid.uuid4()}-0.parquet"
        arrow = pa.Table.from_pylist([dict(r) for r in rows], schema=self.arrow_schema)
        if self.filesystem is None:
            directory.mkdir(parents=True, exist_ok=True)
            pq.write_table(arrow, directory / file_name)
            size = (directory / file_name).stat().st_size
        else:
            path = f"{directory}/{file_name}"
            pq.write_table(arrow, path, filesystem=self.filesystem)
            size = self.filesystem.get_file_info(path).size
        return {"fileName": file_name, "fileSize": size, "rowCount": len(rows)}

    def message(self, row: dict[str, Any], **files: list[dict[str, Any]]) -> dict[str, Any]:
        """A commit message for the partition of `row` (bucket 0: the table is bucket-unaware)."""
        return {"partition": {k: row[k] for k in self.partition_keys}, "bucket": 0, **files}
