"""Before a commit is decided: every file it adds is on storage, with the size it declares.

A snapshot naming a file that is not there makes the whole table unreadable for every engine, and a
writer that put its files on the wrong filesystem finds out only then. One HEAD (or stat) per file
catches both. The checks run before the table lock is taken, so they cost the lock nothing. On an
object store they run concurrently, a bounded number at a time (latency hidden, no burst beyond the
bound); on local disk a stat takes microseconds and a thread hop costs more, so they run in turn
(10,000 files: about 0.03 s in turn, 0.17 s through the pool, measured here).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from coordinator.domain.committable import ResolvedCommittable
from coordinator.errors import DataFileMissing
from coordinator.storage.fileio import FileIO, LocalFileIO
from coordinator.usecases.tables import Table
from coordinator_client.format.manifest_model import FileKind
from coordinator_client.format.partition_path import bucket_dir

CONCURRENT_CHECKS = 32
"""Checks in flight at once: enough to hide an object store's latency, few enough not to be throttled."""


class FileChecks:
    def __init__(self, fileio: FileIO) -> None:
        self._fileio = fileio
        self._in_turn = isinstance(fileio, LocalFileIO)
        self._pool = ThreadPoolExecutor(CONCURRENT_CHECKS, thread_name_prefix="file-check")

    def verify(self, table: Table, resolved: ResolvedCommittable) -> None:
        """Raises:
        DataFileMissing: naming the first file (in the committable's order) that is absent or whose
            size differs, and how many are.
        StorageUnavailable: the store failed while checking.
        """
        expected = {
            table.layout.data_file(
                table.shape.partition_dir(e.partition), bucket_dir(e.bucket), e.file.file_name
            ): e.file.file_size
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
        found = dict(zip(paths, self._sizes(paths), strict=True))
        wrong = [p for p in paths if found[p] != expected[p]]
        if not wrong:
            return
        first = wrong[0]
        name = first.rsplit("/", 1)[-1]
        others = f" ({len(wrong) - 1} more files are missing or of another size)" if len(wrong) > 1 else ""
        if found[first] is None:
            problem = f"data file {name} is not on storage at {first}"
        else:
            problem = (
                f"data file {name} at {first} has {found[first]} bytes, the commit declares {expected[first]}"
            )
        raise DataFileMissing(f"{problem}{others}; nothing was committed", field="messages")

    def _sizes(self, paths: list[str]) -> list[int | None]:
        if self._in_turn or len(paths) == 1:  # no thread hop for the common one-file commit either
            return [self._fileio.size(p) for p in paths]
        return list(self._pool.map(self._fileio.size, paths))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
