"""The benchmark writer's side of a table: parquet files in Paimon's layout and the commit messages
that describe them.

Only what the benchmark's shape needs (a bucket-unaware append table), built on the client package's
partition naming and type mapping, so the benchmark does not depend on the test suite.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from coordinator_client.spark.layout import arrow_type, filesystem
from paimon_format.partition_path import partition_path
from paimon_format.types import parse_type


class AppendTable:
    """An append table as a writer knows it from the coordinator's TableResponse JSON."""

    def __init__(self, table: dict[str, Any]) -> None:
        """Data files go where the table's location says: a local folder, or an object store (`s3://...`,
        its endpoint and credentials from the query or the AWS_* environment variables, as pyarrow finds
        them)."""
        schema = table["schema"]
        self.id: str = table["id"]
        self.location: str = table["location"]
        # The table's root as a path of its filesystem: a local path, or `bucket/...` on S3.
        self.filesystem, self.root = filesystem(self.location)
        self.local = isinstance(self.filesystem, pafs.LocalFileSystem)
        self.fields = [(f["name"], parse_type(f["type"])) for f in schema["fields"]]
        self.types = dict(self.fields)
        self.partition_keys: list[str] = schema["partitionKeys"]
        self.arrow_schema = pa.schema([pa.field(n, arrow_type(t), t.nullable) for n, t in self.fields])

    def partition_dir(self, partition: dict[str, Any]) -> str:
        names = self.partition_keys
        return partition_path(names, [partition[n] for n in names], [self.types[n] for n in names])

    def bucket_dir(self, partition: dict[str, Any]) -> str:
        """The folder of the partition's bucket 0, as a path of `filesystem`."""
        return f"{self.root}/{self.partition_dir(partition)}/bucket-0"

    def append_file(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """One data file of rows sharing a partition, in bucket 0; returns its DataFile JSON."""
        directory = self.bucket_dir({k: rows[0][k] for k in self.partition_keys})
        file_name = f"data-{uuid.uuid4()}-0.parquet"
        path = f"{directory}/{file_name}"
        arrow = pa.Table.from_pylist([dict(r) for r in rows], schema=self.arrow_schema)
        if self.local:  # an object store has no folders to make (a marker object would be one more PUT)
            self.filesystem.create_dir(directory)
        pq.write_table(arrow, path, filesystem=self.filesystem)
        size = self.filesystem.get_file_info(path).size
        return {"fileName": file_name, "fileSize": size, "rowCount": len(rows)}

    def message(self, row: dict[str, Any], **files: list[dict[str, Any]]) -> dict[str, Any]:
        """A commit message for the partition of `row` (bucket 0: the table is bucket-unaware)."""
        return {"partition": {k: row[k] for k in self.partition_keys}, "bucket": 0, **files}
