"""What a data file says about itself: its format, row count and columns, from as few bytes as its format
allows.

Parquet and ORC keep all of it at their end, so one ranged read of the tail (which also gives the file's
size) is usually all it takes: parquet ends with its footer, the footer's length and `PAR1`; ORC with
its postscript, which ends with `ORC` and the postscript's length byte. Avro keeps its schema at its
head (`Obj\\x01`, then the header) and counts rows only block by block through the whole file, so an Avro
file's row count is not read (that would read the file). pyarrow parses the parquet and ORC footers and
fastavro the Avro header; this module only finds their bytes.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import IO, cast

import fastavro
import pyarrow as pa
import pyarrow.orc as pa_orc
import pyarrow.parquet as pq

from coordinator.errors import StorageUnavailable
from coordinator.storage.fileio import FileIO, FileRange

END_BYTES = 16 * 1024
"""Bytes read at a file's end (or an Avro file's head). ORC's own reader asks for its last 16 KiB first;
a parquet footer of a few dozen columns fits too. A longer footer costs one more ranged read."""
MAX_FOOTER_BYTES = 64 * 1024 * 1024
"""More metadata than this is a damaged length field, not a footer: the file is refused, not read."""
PARQUET_MAGIC = b"PAR1"
ORC_MAGIC = b"ORC"
AVRO_MAGIC = b"Obj\x01"
FORMATS = ("parquet", "orc", "avro")


@dataclass(frozen=True)
class Footer:
    """What a data file's own metadata says."""

    row_count: int | None
    """None for Avro, which keeps no count of its rows in one place."""
    columns: tuple[str, ...]
    """The top-level column names, in the file's order."""


def read_end(fileio: FileIO, path: str, file_format: str) -> FileRange | None:
    """The bytes in which a file of `file_format` keeps its metadata (its head for Avro, else its
    tail), with the file's size; None when the file is not on storage. One read."""
    if file_format == "avro":
        return fileio.read_range(path, 0, END_BYTES)
    return fileio.read_tail(path, END_BYTES)


def format_of(end: FileRange) -> str | None:
    """The format the magic bytes of `end` (from read_end) show, if they show one of FORMATS."""
    data = end.data
    if end.offset == 0 and data.startswith(AVRO_MAGIC):
        return "avro"
    if end.offset + len(data) != end.size:
        return None  # a head that is not Avro's
    if data.endswith(PARQUET_MAGIC) and end.size >= 12:
        return "parquet"
    if data[-4:-1] == ORC_MAGIC:
        return "orc"
    return None


def read_footer(fileio: FileIO, path: str, end: FileRange, file_format: str) -> Footer:
    """The footer of the file at `path` whose end (from read_end) shows `file_format`.

    Raises:
        ValueError: the footer is not readable as `file_format` (a truncated or damaged file).
        StorageUnavailable: the store failed while a long footer was read.
    """
    source = _RangedFile(fileio, path, end)
    try:
        if file_format == "parquet":
            return _parquet(source, end)
        if file_format == "orc":
            orc = pa_orc.ORCFile(source)
            return Footer(orc.nrows, tuple(orc.schema.names))
        schema = fastavro.reader(cast(IO[bytes], source)).writer_schema
    except StorageUnavailable:
        raise
    except Exception as unreadable:  # a damaged file can fail a parser in any of many ways
        if source.failure is not None:
            raise source.failure from None  # the store failed, not the file (a reader wrapped it)
        raise ValueError(f"not a readable {file_format} file ({unreadable})") from None
    if not isinstance(schema, dict) or not isinstance(schema.get("fields"), list):
        raise ValueError("not a readable avro file (its schema is not a record)")
    return Footer(None, tuple(str(f["name"]) for f in schema["fields"]))


def _parquet(source: _RangedFile, end: FileRange) -> Footer:
    footer_length = int.from_bytes(end.data[-8:-4], "little")
    framed_length = footer_length + 8  # the footer, its length and the closing magic
    if framed_length > end.size - len(PARQUET_MAGIC):
        raise ValueError(f"a footer of {footer_length} bytes in a file of {end.size}")
    # Only the footer's bytes (one more read when it is longer than the end read first). Framed by
    # the leading magic they are a parquet file to pyarrow, which then reads nothing but the footer;
    # the footer's offsets point into the real file and are not followed.
    source.seek(-framed_length, io.SEEK_END)
    metadata = pq.read_metadata(pa.BufferReader(PARQUET_MAGIC + source.read(framed_length)))
    schema = metadata.schema
    leaves = [schema.column(i) for i in range(metadata.num_columns)]
    if all(leaf.path == leaf.name for leaf in leaves):  # flat: each leaf is a top-level column
        columns = tuple(leaf.name for leaf in leaves)
    else:  # nested columns: their top-level names from the Arrow schema (slower, exact)
        columns = tuple(schema.to_arrow_schema().names)
    return Footer(metadata.num_rows, columns)


class _RangedFile(io.RawIOBase):
    """A read-only file of the real size over the bytes read first; a read of other bytes (a footer
    longer than that) reads them from storage. Footer readers seek from the end, so they see the real
    file's geometry."""

    def __init__(self, fileio: FileIO, path: str, known: FileRange) -> None:
        super().__init__()
        self._fileio = fileio
        self._path = path
        self._known = known
        self._position = 0
        self._fetched = 0
        self.failure: StorageUnavailable | None = None
        """A failure of the store while reading, which a reader may have wrapped in its own error."""

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._known.size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def read(self, size: int | None = -1) -> bytes:
        left = max(0, self._known.size - self._position)
        length = left if size is None or size < 0 else min(size, left)
        start = self._position - self._known.offset
        if start >= 0 and start + length <= len(self._known.data):
            chunk = self._known.data[start : start + length]
        else:
            chunk = self._fetch(self._position, length)
        self._position += len(chunk)
        return chunk

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        chunk = self.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def _fetch(self, offset: int, length: int) -> bytes:
        self._fetched += length
        if self._fetched > MAX_FOOTER_BYTES:  # a damaged length field, not a footer: do not read on
            raise ValueError(f"metadata longer than {MAX_FOOTER_BYTES} bytes")
        try:
            more = self._fileio.read_range(self._path, offset, length)
        except StorageUnavailable as failed:
            self.failure = failed
            raise
        if more is None or more.size != self._known.size:
            raise ValueError("the file changed while its footer was read")
        return more.data
