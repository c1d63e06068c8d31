"""The table size the commit point records: deltas of ADD/DELETE entries, summed over snapshots, equal the
size of the live files computed from scratch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from coordinator.domain.table_stats import (
    EMPTY,
    NO_FILES,
    UNKNOWN,
    FileDelta,
    TableStats,
    combined,
    file_delta,
    stats_of_live,
)
from paimon_format.manifest import FileKind, ManifestEntry
from tests.support.builders import ADD, DELETE, data_file, partition


def add(name: str, size: int, *, dt: str = "a", bucket: int = 0) -> ManifestEntry:
    return ManifestEntry(ADD, partition(dt), bucket, 1, replace(data_file(name), file_size=size))


def delete(e: ManifestEntry) -> ManifestEntry:
    return replace(e, kind=DELETE)


A1, A2, A3 = add("a1", 100), add("a2", 250), add("a3", 7, dt="b")
C1 = add("c1", 320)

HISTORIES: dict[str, list[list[ManifestEntry]]] = {
    "appends": [[A1], [A2, A3], []],
    "compaction": [[A1, A2], [delete(A1), delete(A2), C1]],
    "overwrite of a partition": [[A1, A2, A3], [delete(A1), delete(A2), add("o1", 5)]],
    "overwrite of the table": [[A1, A3], [delete(A1), delete(A3)]],
    "delete everything then add": [[A1], [delete(A1)], [A2]],
}


def live_after(snapshots: Sequence[Sequence[ManifestEntry]]) -> list[ManifestEntry]:
    """The truth, computed from scratch: a DELETE cancels the ADD of the same file."""
    live: dict[tuple[bytes, int, str], ManifestEntry] = {}
    for delta in snapshots:
        for e in delta:
            named = (e.partition, e.bucket, e.file.file_name)
            if e.kind == FileKind.ADD:
                live[named] = e
            else:
                del live[named]
    return list(live.values())


@pytest.mark.parametrize("history", list(HISTORIES.values()), ids=list(HISTORIES))
def test_deltas_snapshot_by_snapshot_equal_the_live_files(history: list[list[ManifestEntry]]) -> None:
    stats = EMPTY
    for n, delta in enumerate(history, start=1):
        stats = stats.advanced(total_record_count=10 * n, delta=file_delta(delta))
        assert stats == stats_of_live(10 * n, live_after(history[:n]))


@pytest.mark.parametrize("history", list(HISTORIES.values()), ids=list(HISTORIES))
def test_a_group_of_snapshots_moves_by_its_combined_delta(history: list[list[ManifestEntry]]) -> None:
    at_once = EMPTY.advanced(99, combined(file_delta(d) for d in history))
    assert at_once == stats_of_live(99, live_after(history))


def test_add_counts_a_file_and_its_size_and_delete_takes_them_back() -> None:
    assert file_delta([A1, A2]) == FileDelta(2, 350)
    assert file_delta([delete(A1)]) == FileDelta(-1, -100)
    assert file_delta([]) == NO_FILES
    assert combined([]) == NO_FILES


def test_an_unknown_size_stays_unknown_but_the_record_count_is_known() -> None:
    after = UNKNOWN.advanced(42, FileDelta(3, 300))
    assert after == TableStats(42, None, None)
    assert not after.known
    assert EMPTY.known
