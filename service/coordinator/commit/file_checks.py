"""Before a commit is decided: every file it adds is on storage and is what the commit says it is.

A snapshot naming a file that is not there makes the whole table unreadable for every engine, and a
writer that put its files on the wrong filesystem finds out only then. A file that is there but not what
its entry says is worse, because nothing fails: readers trust the entry. A 5-row file declared with
500,000 rows makes the table's statistics lie; an ORC file in a parquet table, or a file whose columns
are not its schema's, is read wrongly or not at all. So each file a native commit adds (new, changelog
and compacted files) is read once, by range: its tail (an Avro file's head), which gives its size on
storage and its footer, whose row count must be the declared rowCount and whose columns those of its
schema; its name and magic bytes must show the format the table writes. Every failure names the file's
place in the request (`messages[0].newFiles[2]`). A REST proposal's files, found in the client's own
manifests (written by engines whose layouts vary: thin data files, data evolution, blob files), are
checked for their existence and size only, as before.

The checks run before the table lock is taken, so they cost the lock nothing. On an object store they
run concurrently, a bounded number at a time (latency hidden, no burst beyond the bound); on local disk
a read and a footer parse take tens of microseconds, and threads would only contend for the GIL, so they
run in turn. bench/file_checks.py measures what this costs beside a size-only pass.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import tee
from typing import NamedTuple

from coordinator.domain.added_files import AddedFile
from coordinator.domain.committable import ResolvedCommittable
from coordinator.domain.data_file_shape import data_file_columns, data_file_format
from coordinator.errors import (
    DataFileMissing,
    DataFileSizeMismatch,
    FileFormatMismatch,
    RowCountMismatch,
    SchemaMismatch,
)
from coordinator.storage.data_footers import format_of, read_end, read_footer
from coordinator.storage.fileio import FileIO, FileRange, LocalFileIO
from coordinator.usecases.tables import Table, Tables, version_of
from paimon_format.manifest import FileKind, ManifestEntry
from paimon_format.partition_path import bucket_dir
from paimon_format.schema import TableSchema

CONCURRENT_CHECKS = 64
"""Reads in flight at once (per process): enough to hide an object store's latency, few enough not to be
throttled. A ranged GET waits longer than the HEAD that was enough before footers were read: on SeaweedFS
10,000 GETs took about 1.5 times as long as 10,000 HEADs, 32 in flight each; 64 GETs in flight take about
as long as 32 HEADs did (bench/file_checks.py)."""
CHANGELOG_LISTS = ("changelogFiles", "compactChangelogFiles")
SCHEMAS_KEPT = 1024
"""Older schemas kept parsed, per (table uuid, schema id): a schema file never changes once recorded."""


class _Checked(NamedTuple):
    """A file to check: where it is, what the commit says of it, what its schema says it must be."""

    path: str
    file: AddedFile
    claim: _Claim | str
    """A string when its schema cannot be read: the problem."""


@dataclass(frozen=True)
class _Claim:
    """What a file must be: its format and columns, from the schema it claims."""

    file_format: str
    columns: frozenset[str]
    schema_id: int


class FileChecks:
    def __init__(self, fileio: FileIO, tables: Tables | None = None) -> None:
        """`tables`: to look at a table again when a file sent without its schemaId does not match the
        schema this process last knew (another replica may have altered the table since)."""
        self._fileio = fileio
        self._tables = tables
        self._in_turn = isinstance(fileio, LocalFileIO)
        self._pool = ThreadPoolExecutor(CONCURRENT_CHECKS, thread_name_prefix="file-check")
        self._schemas: dict[tuple[str, int], TableSchema] = {}

    def verify(self, table: Table, resolved: ResolvedCommittable) -> None:
        """Raises:
        DataFileMissing, DataFileSizeMismatch, RowCountMismatch, FileFormatMismatch, SchemaMismatch:
            naming the first file (in the committable's order) that is not what it claims, and how many
            are not.
        StorageUnavailable: the store failed while checking.
        """
        if resolved.added is None:
            self._verify_sizes(table, resolved)
            return
        if not resolved.added:
            return
        failure = self._first_failure(table, resolved.added)
        if (
            failure is not None
            and self._tables is not None
            and not all(a.schema_declared for a in resolved.added)
        ):
            current = self._tables.get(table.id)
            if version_of(current) != version_of(table):
                # Files sent without a schemaId are checked against the table's current schema; the
                # commit is resolved against it again under the lock as well.
                failure = self._first_failure(current, resolved.added)
        if failure is not None:
            raise failure

    def _first_failure(self, table: Table, added: Sequence[AddedFile]) -> DataFileMissing | None:
        claims: dict[tuple[int, int, bool], _Claim | str] = {}

        def checked() -> Iterator[_Checked]:
            for file in added:
                entry = file.entry
                schema_id = entry.file.schema_id if file.schema_declared else table.shape.schema.id
                changelog = file.where[1] in CHANGELOG_LISTS
                key = (schema_id, entry.file.level, changelog)
                claim = claims.get(key)
                if claim is None:
                    claim = claims[key] = self._claim(table, schema_id, entry.file.level, changelog)
                yield _Checked(_path(table, entry), file, claim)

        # Made one at a time and dropped once judged, the checks leave nothing behind but failures: a
        # list of 10,000 of them would wake the garbage collector over the whole commit's objects.
        if self._in_turn or len(added) == 1:  # no thread hop for the common one-file commit either
            failures = (self._judge(c, self._read(c)) for c in checked())
        else:
            # The reads wait on the store, concurrently; the footers are parsed here as they arrive, in
            # order, rather than in the pool, where they would only contend for the GIL.
            ahead, behind = tee(checked())
            reads = self._pool.map(self._read, ahead)
            failures = (self._judge(c, end) for c, end in zip(behind, reads, strict=True))
        wrong = [f for f in failures if f is not None]
        if not wrong:
            return None
        first = wrong[0]
        others = f" ({len(wrong) - 1} more files are not what the commit says)" if len(wrong) > 1 else ""
        return type(first)(f"{first.message}{others}; nothing was committed", field=first.field)

    def _read(self, checked: _Checked) -> FileRange | None:
        """The end of the file its footer is in (and its size): one ranged read. Nothing is read for a
        file whose name or schema is wrong already."""
        claim = checked.claim
        if isinstance(claim, str) or not checked.file.entry.file.file_name.endswith(f".{claim.file_format}"):
            return None
        return read_end(self._fileio, checked.path, claim.file_format)

    def _judge(self, checked: _Checked, end: FileRange | None) -> DataFileMissing | None:
        """The problem with one file, or None. A long footer costs a second ranged read."""
        path, file, claim = checked
        meta, field = file.entry.file, file.field
        name = meta.file_name
        if isinstance(claim, str):  # its schema cannot be read
            return SchemaMismatch(f"data file {name}: {claim}", field=field)
        wanted = claim.file_format
        if not name.endswith(f".{wanted}"):
            return FileFormatMismatch(
                f"data file {name} is not named .{wanted}: the table writes {wanted} (file.format)",
                field=field,
            )
        if end is None:
            return DataFileMissing(f"data file {name} is not on storage at {path}", field=field)
        if end.size != meta.file_size:
            return DataFileSizeMismatch(
                f"data file {name} at {path} has {end.size} bytes, the commit declares {meta.file_size}",
                field=field,
            )
        found = format_of(end)
        if found != wanted:
            shown = f"an {found} file" if found else "of no format Paimon writes"
            return FileFormatMismatch(
                f"data file {name} at {path} is not a {wanted} file: its bytes are {shown}", field=field
            )
        try:
            footer = read_footer(self._fileio, path, end, wanted)
        except ValueError as unreadable:
            return FileFormatMismatch(f"data file {name} at {path}: {unreadable}", field=field)
        if footer.row_count is not None and footer.row_count != meta.row_count:
            return RowCountMismatch(
                f"data file {name} holds {footer.row_count} rows, the commit declares rowCount "
                f"{meta.row_count}",
                field=field,
            )
        columns = set(footer.columns)
        if columns != claim.columns or len(columns) != len(footer.columns):
            return SchemaMismatch(_columns_problem(name, footer.columns, claim, file), field=field)
        return None

    def _claim(self, table: Table, schema_id: int, level: int, changelog: bool) -> _Claim | str:
        schema = self._schema(table, schema_id)
        if schema is None:
            return f"its schema {schema_id} is not on storage"
        return _Claim(
            data_file_format(schema, level, changelog=changelog),
            frozenset(data_file_columns(schema)),
            schema_id,
        )

    def _schema(self, table: Table, schema_id: int) -> TableSchema | None:
        """Schema `schema_id` of the table (no later than its current one, which the commit's resolution
        made sure of): the current one at hand, an older one read from storage once."""
        if schema_id == table.shape.schema.id:
            return table.shape.schema
        key = (table.uuid, schema_id)
        schema = self._schemas.get(key)
        if schema is None:
            try:
                schema = TableSchema.from_json(self._fileio.read(table.layout.schema(schema_id)).decode())
            except FileNotFoundError:
                return None
            if len(self._schemas) >= SCHEMAS_KEPT:
                self._schemas.clear()
            self._schemas[key] = schema
        return schema

    def _verify_sizes(self, table: Table, resolved: ResolvedCommittable) -> None:
        """A REST proposal's files: on storage, of their size (see the module docstring)."""
        expected = {
            _path(table, e): e.file.file_size
            for entries in (
                resolved.append,
                resolved.append_changelog,
                resolved.compact,
                resolved.compact_changelog,
            )
            for e in entries
            if e.kind == FileKind.ADD
        }
        if not expected:
            return
        paths = list(expected)
        if self._in_turn or len(paths) == 1:
            sizes = [self._fileio.size(p) for p in paths]
        else:
            sizes = list(self._pool.map(self._fileio.size, paths))
        found = dict(zip(paths, sizes, strict=True))
        wrong = [p for p in paths if found[p] != expected[p]]
        if not wrong:
            return
        first = wrong[0]
        name = first.rsplit("/", 1)[-1]
        others = f" ({len(wrong) - 1} more files are missing or of another size)" if len(wrong) > 1 else ""
        field = "snapshot.deltaManifestList"  # where the proposal names its files
        if found[first] is None:
            problem = f"data file {name} is not on storage at {first}"
            raise DataFileMissing(f"{problem}{others}; nothing was committed", field=field)
        problem = (
            f"data file {name} at {first} has {found[first]} bytes, the commit declares {expected[first]}"
        )
        raise DataFileSizeMismatch(f"{problem}{others}; nothing was committed", field=field)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _path(table: Table, entry: ManifestEntry) -> str:
    return table.layout.data_file(
        table.shape.partition_dir(entry.partition), bucket_dir(entry.bucket), entry.file.file_name
    )


def _columns_problem(name: str, found: Sequence[str], claim: _Claim, file: AddedFile) -> str:
    extra = [c for c in found if c not in claim.columns]
    missing = sorted(claim.columns - set(found))
    repeated = sorted({c for c in found if list(found).count(c) > 1})
    parts = []
    if extra:
        parts.append(f"columns that schema {claim.schema_id} does not have: {', '.join(extra)}")
    if missing:
        parts.append(f"no column {', '.join(missing)} of schema {claim.schema_id}")
    if repeated:
        parts.append(f"column {', '.join(repeated)} more than once")
    hint = "" if file.schema_declared else " (sent without schemaId: the table's current schema)"
    return f"data file {name} has {'; '.join(parts)}{hint}"
