"""A writing task's data files, one set per (partition, bucket) its rows fall in.

Rows come in whatever order and partitioning the DataFrame has. Append rows go straight to a rolling
writer per bucket. Primary-key rows are numbered as they come (see write_job for the numbering), buffered
per bucket, and written as sorted runs: each run sorted by key, then sequence number, and holding each key
once (its newest row), which is what Paimon's readers expect of a data file. The buffer is the table's
`write-buffer-size` (256 MB by default, as in Paimon) for the whole task: when full, the largest bucket's
rows go out as a run, and a bucket may end with several level-0 files whose keys overlap, as a Paimon
writer's flushes do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from coordinator_client.spark.committing import delete_files
from coordinator_client.spark.data_files import RollingFileWriter, WrittenFile
from coordinator_client.spark.layout import KEY_PREFIX, SEQUENCE_NUMBER, SparkTable
from coordinator_client.spark.tasks import Group, buckets, conform, groups, with_system_columns
from paimon_format.memory_size import parse_memory_size

DEFAULT_WRITE_BUFFER = "256 mb"


@dataclass
class _Buffered:
    """Numbered primary-key rows of one bucket, not yet written."""

    tables: list[pa.Table] = field(default_factory=list)
    nbytes: int = 0


class BucketWriters:
    """The files one task writes. `numbering` (primary-key tables): each bucket directory's next sequence
    number and this task's offset, the number of its first row in a bucket being their sum (0 + offset
    for a bucket with no live file); None for append tables, whose numbers the driver assigns."""

    def __init__(
        self, layout: SparkTable, prefix: str, kind: int, numbering: tuple[Mapping[str, int], int] | None
    ) -> None:
        self.layout = layout
        self.prefix = prefix
        self.kind = kind
        self.numbering = numbering
        self.fs, self.root = layout.filesystem()
        self.limit = parse_memory_size(layout.schema.options.get("write-buffer-size", DEFAULT_WRITE_BUFFER))
        self._appending: dict[Group, RollingFileWriter] = {}
        self._buffered: dict[Group, _Buffered] = {}
        self._next: dict[Group, int] = {}
        self._buffered_bytes = 0
        self._done: list[WrittenFile] = []
        self._open: RollingFileWriter | None = None

    def add(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        rows = conform(self.layout, batch)
        for group, part in groups(self.layout, rows, buckets(self.layout, rows)):
            if self.numbering is None:
                self._append(group, part)
            else:
                self._buffer(group, part)

    def close(self) -> list[WrittenFile]:
        """Write what is buffered and finish every file; returns them all."""
        for group in list(self._buffered):
            self._flush(group)
        for writer in self._appending.values():
            self._done.extend(writer.close())
        self._appending.clear()
        return self._done

    def abort(self) -> None:
        """Delete every file this task wrote (the driver's sweep is the backstop for a killed task)."""
        writers = [*self._appending.values(), *([self._open] if self._open is not None else [])]
        for writer in writers:
            writer.abort()
        delete_files(self.layout, [f.path for f in self._done])
        self._done.clear()

    def _writer(self, group: Group) -> RollingFileWriter:
        return RollingFileWriter(self.layout, self.fs, self.root, group[0], group[1], self.prefix)

    def _append(self, group: Group, part: pa.Table) -> None:
        writer = self._appending.get(group)
        if writer is None:
            writer = self._appending[group] = self._writer(group)
        writer.write(part)

    def _buffer(self, group: Group, part: pa.Table) -> None:
        assert self.numbering is not None
        if group not in self._next:
            next_sequence, offset = self.numbering
            self._next[group] = next_sequence.get(self.layout.bucket_path(group[0], group[1]), 0) + offset
        numbered = with_system_columns(self.layout, part, self._next[group], self.kind)
        self._next[group] += part.num_rows
        buffered = self._buffered.setdefault(group, _Buffered())
        buffered.tables.append(numbered)
        buffered.nbytes += numbered.nbytes
        self._buffered_bytes += numbered.nbytes
        while self._buffered_bytes > self.limit and self._buffered:
            self._flush(max(self._buffered, key=lambda g: self._buffered[g].nbytes))

    def _flush(self, group: Group) -> None:
        """Write one bucket's buffered rows as a sorted run: sorted by key, then sequence number."""
        buffered = self._buffered.pop(group)
        self._buffered_bytes -= buffered.nbytes
        rows = pa.concat_tables(buffered.tables)
        keys = [KEY_PREFIX + k for k in self.layout.key_names]
        order = pc.sort_indices(rows, sort_keys=[(k, "ascending") for k in [*keys, SEQUENCE_NUMBER]])
        self._open = self._writer(group)
        self._open.write(rows.take(order))
        self._done.extend(self._open.close())
        self._open = None
