"""Paimon data files written on an executor, and the DataFileMeta each one goes back to the driver with.

One RollingFileWriter writes the rows of one (partition, bucket) that one task produces, in the order it
is given them (primary-key rows arrive sorted by key), into Parquet files that roll over at the table's
target file size. Rows are buffered into large row groups: Spark hands Arrow batches of 10,000 rows,
which would otherwise make as many small row groups.

Every file name carries the write's id. A task attempt that fails deletes what it wrote; the driver
sweeps files of its write id that no successful attempt reported (an attempt killed outright, a
speculative duplicate), so nothing uncommitted is left behind.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from coordinator_client.spark.layout import (
    DELETE,
    KEY_PREFIX,
    SEQUENCE_NUMBER,
    UPDATE_BEFORE,
    VALUE_KIND,
    SparkTable,
)
from coordinator_client.spark.merge import newest_per_key, split_last_key
from paimon_format.values import to_json_value

ROW_GROUP_ROWS = 128 * 1024
FILE_COLUMN = "file"
"""The one string column of a writing task's output: one JSON WrittenFile per row."""


def file_prefix(write_id: str) -> str:
    """Start of the names of every data file one write (or compaction) creates."""
    return f"data-{write_id}-"


@dataclass(frozen=True)
class WrittenFile:
    """A data file a task wrote: where it sits and its DataFileModel JSON (camelCase keys)."""

    partition: dict[str, Any]
    bucket: int
    directory: str
    meta: dict[str, Any]

    def to_json(self) -> str:
        return json.dumps(
            {
                "partition": self.partition,
                "bucket": self.bucket,
                "directory": self.directory,
                "meta": self.meta,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> WrittenFile:
        data = json.loads(text)
        return cls(data["partition"], data["bucket"], data["directory"], data["meta"])

    @property
    def path(self) -> str:
        return f"{self.directory}/{self.meta['fileName']}"


def written_files_batch(files: Sequence[WrittenFile]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {FILE_COLUMN: [f.to_json() for f in files]}, schema=pa.schema([(FILE_COLUMN, pa.string())])
    )


@dataclass
class RollingFileWriter:
    """Data files of one (partition, bucket) from one task, rolled at the target file size.

    Rows must already have the data-file schema (primary-key tables: `_KEY_*`, `_SEQUENCE_NUMBER` and
    `_VALUE_KIND` first) and be in their final order.
    """

    layout: SparkTable
    fs: pafs.FileSystem
    root: str
    partition_values: tuple[object, ...]
    bucket: int
    prefix: str
    level: int = 0
    done: list[WrittenFile] = field(default_factory=list)
    _pending: list[pa.Table] = field(default_factory=list)
    _pending_rows: int = 0
    _open: _OpenFile | None = None

    def __post_init__(self) -> None:
        self.directory = self.layout.bucket_path(self.partition_values, self.bucket)
        self.partition_json = {
            n: to_json_value(v, self.layout.types[n])
            for n, v in zip(self.layout.partition_keys, self.partition_values, strict=True)
        }

    def write(self, rows: pa.Table) -> None:
        self._pending.append(rows)
        self._pending_rows += rows.num_rows
        if self._pending_rows >= ROW_GROUP_ROWS:
            self._flush(final=False)

    def close(self) -> list[WrittenFile]:
        """Finish the last file; returns every file this writer completed."""
        self._flush(final=True)
        if self._open is not None:
            self.done.append(self._finish(self._open))
            self._open = None
        return self.done

    def abort(self) -> None:
        """Delete every file this writer created (best effort: the driver's sweep is the backstop)."""
        paths = [f"{self.root}/{f.path}" for f in self.done]
        if self._open is not None:
            self._open.writer.close()
            self._open.stream.close()
            paths.append(self._open.path)
            self._open = None
        for path in paths:
            try:
                self.fs.delete_file(path)
            except OSError:
                pass
        self.done.clear()

    def _flush(self, *, final: bool) -> None:
        if not self._pending:
            return
        # Left chunked: Parquet writes a chunked table as one row group without a copy.
        rows = pa.concat_tables(self._pending)
        self._pending.clear()
        self._pending_rows = 0
        if self.layout.has_primary_key:
            # A file holds each key once (the newest row); the last key may go on in the next rows.
            if not final:
                rows, carried = split_last_key(self.layout, rows)
                self._pending, self._pending_rows = [carried], carried.num_rows
            rows = newest_per_key(self.layout, rows)
        if rows.num_rows == 0:
            return
        if self._open is None:
            self._open = self._start()
        self._open.add(rows)
        if self._open.stream.tell() >= self.layout.target_file_size:
            self.done.append(self._finish(self._open))
            self._open = None

    def _start(self) -> _OpenFile:
        name = f"{self.prefix}{uuid.uuid4().hex}-0.parquet"
        directory = f"{self.root}/{self.directory}"
        self.fs.create_dir(directory, recursive=True)
        path = f"{directory}/{name}"
        stream = self.fs.open_output_stream(path)
        codec, level = self.layout.compression
        writer = pq.ParquetWriter(stream, self.layout.file_schema, compression=codec, compression_level=level)
        return _OpenFile(name, path, stream, writer)

    def _finish(self, file: _OpenFile) -> WrittenFile:
        file.writer.close()
        size = file.stream.tell()
        file.stream.close()
        return WrittenFile(
            self.partition_json, self.bucket, self.directory, file.meta(self.layout, size, self.level)
        )


@dataclass
class _OpenFile:
    name: str
    path: str
    stream: Any
    writer: pq.ParquetWriter
    rows: int = 0
    first: pa.Table | None = None
    last: pa.Table | None = None
    key_min: list[Any] = field(default_factory=list)
    key_max: list[Any] = field(default_factory=list)
    sequence: tuple[int, int] | None = None
    deletes: int = 0

    def add(self, rows: pa.Table) -> None:
        self.writer.write_table(rows, row_group_size=rows.num_rows)
        if self.first is None:
            self.first = rows.slice(0, 1)
        self.last = rows.slice(rows.num_rows - 1, 1)
        self.rows += rows.num_rows
        if SEQUENCE_NUMBER not in rows.column_names:
            return
        self._fold_key_stats(rows)
        low, high = pc.min_max(rows[SEQUENCE_NUMBER]).values()
        seq = (low.as_py(), high.as_py())
        self.sequence = (
            seq if self.sequence is None else (min(self.sequence[0], seq[0]), max(self.sequence[1], seq[1]))
        )
        kinds = rows[VALUE_KIND]
        self.deletes += pc.sum(pc.or_(pc.equal(kinds, DELETE), pc.equal(kinds, UPDATE_BEFORE))).as_py() or 0

    def _fold_key_stats(self, rows: pa.Table) -> None:
        keys = [c for c in rows.column_names if c.startswith(KEY_PREFIX)]
        for i, name in enumerate(keys):
            low, high = (s.as_py() for s in pc.min_max(rows[name]).values())
            if i == len(self.key_min):
                self.key_min.append(low)
                self.key_max.append(high)
            else:
                self.key_min[i] = min(self.key_min[i], low)
                self.key_max[i] = max(self.key_max[i], high)

    def meta(self, layout: SparkTable, size: int, level: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "fileName": self.name,
            "fileSize": size,
            "rowCount": self.rows,
            "level": level,
            "schemaId": layout.schema.id,  # written with the current schema: readers evolve it later
        }
        if not layout.has_primary_key or self.first is None or self.last is None or self.sequence is None:
            return out
        types = layout.key_types

        def key_of(row: pa.Table) -> list[Any]:
            names = [KEY_PREFIX + k for k in layout.key_names]
            return [to_json_value(row[n][0].as_py(), t) for n, t in zip(names, types, strict=True)]

        out.update(
            minKey=key_of(self.first),
            maxKey=key_of(self.last),
            keyStats={
                "minValues": [to_json_value(v, t) for v, t in zip(self.key_min, types, strict=True)],
                "maxValues": [to_json_value(v, t) for v, t in zip(self.key_max, types, strict=True)],
                "nullCounts": [0] * len(types),
            },
            minSequenceNumber=self.sequence[0],
            maxSequenceNumber=self.sequence[1],
            deleteRowCount=self.deletes,
        )
        return out
