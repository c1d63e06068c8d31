"""merge_manifests (domain/manifest_merge.py) over an in-memory manifest store, at its thresholds.

The store sizes a manifest as it is told (or ENTRY_SIZE per entry when written by a merge), so each test
places its manifests exactly at, below or above a threshold. Whatever a merge does, the live files it
describes must stay the same: every test checks that too.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from coordinator.domain.live_files import merge_entries
from coordinator.domain.manifest_merge import MergeOptions, merge_manifests
from paimon_format.manifest import (
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
)
from paimon_format.manifest_meta import manifest_file_meta, partition_stats
from paimon_format.memory_size import MIB, parse_memory_size
from tests.support.builders import ADD, DELETE, append_shape, entry

ENTRY_SIZE = 10
TARGET = 100
OPTIONS = MergeOptions(target_file_size=TARGET, merge_min_count=3, full_compaction_threshold_size=10_000)


SHAPE = append_shape()


class ManifestStore:
    """Manifests in a dict: the read and write callbacks the commit path would back by storage.

    Manifest list entries carry real partition statistics and bucket ranges; `reads` records which
    manifests a merge opened."""

    def __init__(self, target: int = TARGET) -> None:
        self.files: dict[str, list[ManifestEntry]] = {}
        self.writes = 0
        self.reads: list[str] = []
        self.joined = 0
        self._per_manifest = target // ENTRY_SIZE

    def add(self, entries: Sequence[ManifestEntry], size: int) -> ManifestFileMeta:
        name = f"manifest-{len(self.files)}"
        self.files[name] = list(entries)
        stats = partition_stats(
            (e.partition for e in entries), SHAPE.decode_partition, SHAPE.encode_partition, 1
        )
        return manifest_file_meta(name, size, entries, 0, stats)

    def read(self, meta: ManifestFileMeta) -> list[ManifestEntry]:
        self.reads.append(meta.file_name)
        return self.files[meta.file_name]

    def write(self, entries: list[ManifestEntry]) -> list[ManifestFileMeta]:
        """Rolled like the real store: each manifest but the last reaches the target size."""
        self.writes += 1
        n = self._per_manifest
        return [
            self.add(entries[i : i + n], ENTRY_SIZE * len(entries[i : i + n]))
            for i in range(0, len(entries), n)
        ]

    def concatenate(self, group: Sequence[ManifestFileMeta]) -> list[ManifestFileMeta]:
        """Joined as they are, as the real store copies Avro blocks; `joined` counts the calls."""
        self.joined += 1
        return [
            self.add([e for m in group for e in self.files[m.file_name]], sum(m.file_size for m in group))
        ]

    def live(self, manifests: Sequence[ManifestFileMeta]) -> set[str]:
        merged = merge_entries(e for m in manifests for e in self.files[m.file_name])
        return {e.file.file_name for e in merged if e.kind == FileKind.ADD}

    def merge(
        self, manifests: list[ManifestFileMeta], options: MergeOptions, *, join: bool = False
    ) -> list[ManifestFileMeta]:
        before = self.live(manifests)
        concatenate = self.concatenate if join else None
        merged = merge_manifests(manifests, options, self.read, self.write, SHAPE, concatenate)
        assert self.live(merged) == before, "the merge changed the live files"
        return merged


def adds(prefix: str, count: int = 1) -> list[ManifestEntry]:
    return [entry(ADD, f"{prefix}-{i}.parquet") for i in range(count)]


@pytest.mark.parametrize(
    ("sizes", "merged"),
    [
        pytest.param([50, 49], False, id="a run one byte short of the target size stays as it is"),
        pytest.param([50, 50], True, id="a run reaching the target size exactly is merged"),
        pytest.param([50, 51], True, id="a run above the target size is merged"),
    ],
)
def test_minor_merge_at_the_target_file_size(sizes: list[int], merged: bool) -> None:
    store = ManifestStore()
    manifests = [store.add(adds(f"f{i}"), size) for i, size in enumerate(sizes)]
    result = store.merge(manifests, OPTIONS)
    assert (result != manifests, len(result)) == ((True, 1) if merged else (False, 2))
    assert store.writes == (1 if merged else 0)


@pytest.mark.parametrize(
    ("count", "merged"),
    [
        pytest.param(2, False, id="a small tail below merge-min-count stays as it is"),
        pytest.param(3, True, id="a small tail of exactly merge-min-count is merged"),
        pytest.param(4, True, id="a small tail above merge-min-count is merged"),
    ],
)
def test_minor_merge_of_the_tail_at_merge_min_count(count: int, merged: bool) -> None:
    store = ManifestStore()
    manifests = [store.add(adds(f"f{i}"), ENTRY_SIZE) for i in range(count)]
    result = store.merge(manifests, OPTIONS)
    assert len(result) == (1 if merged else count)


def test_minor_merge_merges_each_run_and_keeps_a_short_tail() -> None:
    store = ManifestStore()
    manifests = [store.add(adds(f"f{i}"), 40) for i in range(5)]
    result = store.merge(manifests, OPTIONS)
    # 40 + 40 + 40 reaches 100: one merged manifest; the last two (80) are fewer than merge-min-count.
    assert result[1:] == manifests[3:]
    assert store.read(result[0]) == [e for m in manifests[:3] for e in store.read(m)]


def test_a_manifest_reaching_the_target_alone_is_not_rewritten() -> None:
    store = ManifestStore()
    manifests = [store.add(adds("big", 3), TARGET), store.add(adds("small"), 10)]
    assert store.merge(manifests, OPTIONS) == manifests
    assert store.writes == 0


def test_minor_merge_cancels_an_add_and_its_delete() -> None:
    store = ManifestStore()
    x = entry(ADD, "x.parquet")
    manifests = [store.add([x], 50), store.add([entry(DELETE, "x.parquet"), *adds("y")], 50)]
    [merged] = store.merge(manifests, OPTIONS)
    assert [(e.kind, e.file.file_name) for e in store.read(merged)] == [(ADD, "y-0.parquet")]


def test_a_minor_merge_of_adds_only_joins_the_manifests_without_reading_them() -> None:
    store = ManifestStore()
    manifests = [store.add(adds(f"f{i}", 4), 40) for i in range(3)]
    [joined] = store.merge(manifests, OPTIONS, join=True)
    assert (store.joined, store.reads, store.writes) == (1, [], 0)
    assert joined.file_size == 120


def test_a_minor_merge_with_a_delete_reads_and_cancels_instead_of_joining() -> None:
    store = ManifestStore()
    manifests = [store.add(adds("x"), 50), store.add([entry(DELETE, "x-0.parquet"), *adds("y")], 50)]
    [merged] = store.merge(manifests, OPTIONS, join=True)
    assert store.joined == 0
    assert [e.file.file_name for e in store.read(merged)] == ["y-0.parquet"]


def test_a_merge_that_cancels_everything_writes_no_manifest() -> None:
    store = ManifestStore()
    manifests = [store.add(adds("x"), 50), store.add([entry(DELETE, "x-0.parquet")], 50)]
    assert store.merge(manifests, OPTIONS) == []
    assert store.writes == 0


FULL = MergeOptions(target_file_size=TARGET, merge_min_count=30, full_compaction_threshold_size=200)


@pytest.mark.parametrize(
    ("delete_manifest_size", "full"),
    [
        pytest.param(199, False, id="manifests to change one byte short of the threshold: minor merge"),
        pytest.param(200, True, id="manifests to change exactly at the threshold: full compaction"),
        pytest.param(201, True, id="manifests to change above the threshold: full compaction"),
    ],
)
def test_full_compaction_at_its_threshold(delete_manifest_size: int, full: bool) -> None:
    """A big manifest holds x; a manifest deleting x is the only one that must change."""
    store = ManifestStore()
    big = store.add([entry(ADD, "x.parquet"), *adds("y", 2)], 150)
    deletes = store.add([entry(DELETE, "x.parquet")], delete_manifest_size)
    result = store.merge([big, deletes], FULL)
    if not full:
        assert result == [big, deletes]
        return
    [rewritten] = result
    assert [(e.kind, e.file.file_name) for e in store.read(rewritten)] == [
        (ADD, "y-0.parquet"),
        (ADD, "y-1.parquet"),
    ]


@pytest.mark.parametrize(
    ("small_size", "full"),
    [
        pytest.param(TARGET - 1, True, id="a manifest below the target size must change: full compaction"),
        pytest.param(TARGET, False, id="a manifest at the target size need not change: minor merge"),
    ],
)
def test_the_target_size_decides_which_manifests_must_change(small_size: int, full: bool) -> None:
    store = ManifestStore()
    small = store.add([entry(ADD, "x.parquet"), *adds("y")], small_size)
    deletes = store.add([entry(DELETE, "x.parquet")], 150)
    result = store.merge([small, deletes], FULL)
    assert len(result) == (1 if full else 2)
    assert store.writes == (1 if full else 0)


def test_full_compaction_keeps_big_manifests_whose_files_are_all_live() -> None:
    store = ManifestStore()
    untouched = store.add(adds("kept", 3), 150)
    touched = store.add([entry(ADD, "x.parquet"), *adds("y")], 150)
    deletes = store.add([entry(DELETE, "x.parquet")], 250)
    result = store.merge([untouched, touched, deletes], FULL)
    assert result[0] is untouched
    assert [e.file.file_name for m in result[1:] for e in store.read(m)] == ["y-0.parquet"]


def test_full_compaction_that_leaves_nothing_writes_nothing() -> None:
    store = ManifestStore()
    manifests = [store.add(adds("x"), 10), store.add([entry(DELETE, "x-0.parquet")], 200)]
    assert store.merge(manifests, FULL) == []
    assert store.writes == 0


def test_full_compaction_reads_only_manifests_whose_statistics_admit_a_delete() -> None:
    store = ManifestStore()
    other_partition = store.add([entry(ADD, f"b{i}.parquet", dt="b") for i in range(10)], TARGET)
    other_partitions = store.add([entry(ADD, f"c{i}.parquet", dt=dt) for i, dt in enumerate("cde")], TARGET)
    holder = store.add([entry(ADD, "x.parquet"), *adds("a", 9)], TARGET)
    other_bucket = store.add([entry(ADD, f"y{i}.parquet", bucket=1) for i in range(10)], TARGET)
    deletes = store.add([entry(DELETE, "x.parquet")], 250)
    result = store.merge([other_partition, other_partitions, holder, other_bucket, deletes], FULL)
    # Partitions b, c-e and bucket 1 cannot hold a file of (a, bucket 0): never opened, kept as they are.
    assert sorted(store.reads) == sorted([deletes.file_name, holder.file_name])
    assert result[:3] == [other_partition, other_partitions, other_bucket]
    assert [e.file.file_name for m in result[3:] for e in store.read(m)] == [
        f"a-{i}.parquet" for i in range(9)
    ]


def test_200_commits_never_rewrite_a_full_manifest_that_no_delete_touches() -> None:
    """A streaming job's day: each commit appends 25 files to the day's partition (a full manifest and
    a half), every tenth commit also compacts five files written 19 commits before into one. The merge
    runs before each commit as on the commit path."""
    options = MergeOptions(target_file_size=TARGET, merge_min_count=5, full_compaction_threshold_size=300)
    store = ManifestStore()
    base: list[ManifestFileMeta] = []
    live: list[str] = []
    full_size_reads_without_deletes = 0
    for commit in range(200):
        day = f"d{commit // 20:02d}"
        delta = [entry(ADD, f"{commit}-{i}.parquet", dt=day) for i in range(25)]
        if commit % 10 == 9 and commit >= 19:
            victims = [name for name in live if name.startswith(f"{commit - 19}-")][:5]
            earlier = f"d{(commit - 19) // 20:02d}"
            delta += [entry(DELETE, name, dt=earlier) for name in victims]
            delta.append(entry(ADD, f"{commit}-compacted.parquet", dt=earlier))
        before = {m.file_name: m for m in base}
        deleted = {e.identifier for m in base for e in store.files[m.file_name] if e.kind == FileKind.DELETE}
        store.reads.clear()
        base = store.merge(base, options)
        after = {m.file_name for m in base}
        for name in set(before) - after:
            meta = before[name]
            if meta.file_size >= TARGET and meta.num_deleted_files == 0:
                assert any(e.identifier in deleted for e in store.files[name]), f"{name} rewritten untouched"
        if not deleted:
            full_size_reads_without_deletes += sum(
                1 for n in store.reads if n in before and before[n].file_size >= TARGET
            )
        base += store.write(delta)
        live = sorted(store.live(base))
        # Bounded: the full manifests the live files need, plus a short tail of small ones.
        assert len(base) <= len(live) * ENTRY_SIZE // TARGET + options.merge_min_count + 4
    assert full_size_reads_without_deletes == 0
    compactions = len(range(19, 200, 10))
    assert len(live) == 200 * 25 + compactions - 5 * compactions


def test_merge_options_read_paimon_option_names_and_defaults() -> None:
    assert MergeOptions.from_table_options({}) == MergeOptions(8 * MIB, 30, 16 * MIB)
    options = {
        "manifest.target-file-size": "2 kb",
        "manifest.merge-min-count": "5",
        "manifest.full-compaction-threshold-size": "1MB",
    }
    assert MergeOptions.from_table_options(options) == MergeOptions(2048, 5, MIB)


@pytest.mark.parametrize(
    ("text", "size"),
    [("1024", 1024), ("8 mb", 8 * MIB), ("16MB", 16 * MIB), ("2 kb", 2048), ("1g", 1024 * MIB), (" 3 b ", 3)],
)
def test_parse_memory_size(text: str, size: int) -> None:
    assert parse_memory_size(text) == size


@pytest.mark.parametrize("text", ["", "mb", "1.5 mb", "-1", "8 parsecs"])
def test_parse_memory_size_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a memory size"):
        parse_memory_size(text)
