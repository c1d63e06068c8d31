"""A table's size as the database records it at each commit point: records, live data files, their bytes.

The overview, the dashboard and the table list answer from these numbers, never from storage. They move
with the table's head in the same transaction: the record count is the new snapshot's
`totalRecordCount`; the file count and bytes move by the snapshot's delta entries (an ADD adds a file
and its size, a DELETE removes one). Changelog files are not data files and do not count.

A number that is not known (a table recorded before revision 0005, until the start-up backfill reaches
it) is None, and stays None under deltas: a delta on top of an unknown size is still unknown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from paimon_format.manifest import FileKind, ManifestEntry


@dataclass(frozen=True)
class FileDelta:
    """How a snapshot's delta changes the live data files: their count and their total size."""

    files: int = 0
    bytes: int = 0

    def __add__(self, other: FileDelta) -> FileDelta:
        return FileDelta(self.files + other.files, self.bytes + other.bytes)


NO_FILES = FileDelta()


def file_delta(entries: Iterable[ManifestEntry]) -> FileDelta:
    """The change a snapshot's delta entries make to the live files: +1 and +size per ADD, -1 and -size
    per DELETE."""
    files = size = 0
    for entry in entries:
        sign = 1 if entry.kind == FileKind.ADD else -1
        files += sign
        size += sign * entry.file.file_size
    return FileDelta(files, size)


def combined(deltas: Iterable[FileDelta]) -> FileDelta:
    """Several snapshots' deltas, one after the other, as one."""
    total = NO_FILES
    for delta in deltas:
        total += delta
    return total


@dataclass(frozen=True)
class TableStats:
    """A table's size at its latest snapshot; None where it is not known."""

    total_record_count: int | None
    file_count: int | None
    file_bytes: int | None

    def advanced(self, total_record_count: int, delta: FileDelta) -> TableStats:
        """The size after snapshots whose last one counts `total_record_count` and whose deltas sum to
        `delta`."""
        return TableStats(
            total_record_count,
            None if self.file_count is None else self.file_count + delta.files,
            None if self.file_bytes is None else self.file_bytes + delta.bytes,
        )

    @property
    def known(self) -> bool:
        return None not in (self.total_record_count, self.file_count, self.file_bytes)


EMPTY = TableStats(0, 0, 0)
"""A table without snapshots."""

UNKNOWN = TableStats(None, None, None)


def stats_of_live(total_record_count: int, live: Iterable[ManifestEntry]) -> TableStats:
    """The size of a snapshot from all its live entries (registration, rollback, the backfill)."""
    delta = file_delta(live)
    return TableStats(total_record_count, delta.files, delta.bytes)
