"""Building the next snapshot: a pure function of the previous snapshot, the plan and the manifest lists."""

from __future__ import annotations

import pytest

from coordinator.domain.committable import ResolvedCommittable
from coordinator.domain.plan import SnapshotPlan
from coordinator.domain.snapshot import WRITER_VERSION, ManifestLists, next_snapshot
from paimon_format.manifest import DataFileMeta, FileKind, ManifestEntry, SimpleStats
from paimon_format.snapshot import CommitKind, Snapshot

LISTS = ManifestLists(base=("manifest-list-base", 100), delta=("manifest-list-delta", 50))


def _entry(kind: FileKind, name: str, rows: int) -> ManifestEntry:
    meta = DataFileMeta(
        file_name=name,
        file_size=1000,
        row_count=rows,
        min_key=b"",
        max_key=b"",
        key_stats=SimpleStats.EMPTY,
        value_stats=SimpleStats.EMPTY,
        min_sequence_number=0,
        max_sequence_number=0,
        schema_id=0,
        level=0,
    )
    return ManifestEntry(kind, b"", 0, 1, meta)


def _previous(**fields: object) -> Snapshot:
    base: dict[str, object] = {
        "id": 4,
        "schema_id": 0,
        "base_manifest_list": "b",
        "delta_manifest_list": "d",
        "total_record_count": 100,
        "delta_record_count": 10,
        "commit_user": "earlier",
        "commit_identifier": 3,
        "commit_kind": CommitKind.APPEND,
        "time_millis": 1,
    }
    return Snapshot(**{**base, **fields})  # type: ignore[arg-type]


def _build(
    previous: Snapshot | None,
    plan: SnapshotPlan,
    lists: ManifestLists = LISTS,
    committable: ResolvedCommittable | None = None,
    schema_id: int = 0,
) -> Snapshot:
    return next_snapshot(
        previous,
        plan,
        lists,
        committable or ResolvedCommittable("job", 7),
        schema_id=schema_id,
        now_millis=1_700_000_000_000,
        snapshot_uuid="u-1",
    )


def _plan(
    kind: CommitKind, *entries: ManifestEntry, changelog: tuple[ManifestEntry, ...] = ()
) -> SnapshotPlan:
    return SnapshotPlan(kind, list(entries), list(changelog), check_bucket_count=True)


def test_the_first_snapshot_is_one_and_counts_its_rows() -> None:
    """Snapshot 1 of an empty table: ids, counts, lists, commit identity, time and uuid as given."""
    snapshot = _build(None, _plan(CommitKind.APPEND, _entry(FileKind.ADD, "a.parquet", 10)))
    assert (snapshot.id, snapshot.total_record_count, snapshot.delta_record_count) == (1, 10, 10)
    assert (snapshot.base_manifest_list, snapshot.base_manifest_list_size) == ("manifest-list-base", 100)
    assert (snapshot.delta_manifest_list, snapshot.delta_manifest_list_size) == ("manifest-list-delta", 50)
    assert (snapshot.commit_user, snapshot.commit_identifier, snapshot.commit_kind) == (
        "job",
        7,
        CommitKind.APPEND,
    )
    assert (snapshot.time_millis, snapshot.uuid, snapshot.writer_version) == (
        1_700_000_000_000,
        "u-1",
        WRITER_VERSION,
    )
    assert snapshot.changelog_manifest_list is None
    assert snapshot.changelog_record_count is None


def test_deletes_subtract_their_rows_from_the_total() -> None:
    """Paimon counts file rows: a compaction replacing 30 rows by 25 moves the total by -5."""
    plan = _plan(
        CommitKind.COMPACT,
        _entry(FileKind.DELETE, "old-1.parquet", 10),
        _entry(FileKind.DELETE, "old-2.parquet", 20),
        _entry(FileKind.ADD, "new.parquet", 25),
    )
    snapshot = _build(_previous(), plan)
    assert (snapshot.id, snapshot.delta_record_count, snapshot.total_record_count) == (5, -5, 95)


def test_changelog_lists_and_counts_only_when_written() -> None:
    """A changelog manifest list is named, sized and counted from the plan's changelog entries."""
    lists = ManifestLists(base=LISTS.base, delta=LISTS.delta, changelog=("manifest-list-cl", 30))
    plan = _plan(
        CommitKind.APPEND,
        _entry(FileKind.ADD, "a.parquet", 10),
        changelog=(_entry(FileKind.ADD, "cl.parquet", 4),),
    )
    snapshot = _build(_previous(), plan, lists)
    assert (snapshot.changelog_manifest_list, snapshot.changelog_manifest_list_size) == (
        "manifest-list-cl",
        30,
    )
    assert snapshot.changelog_record_count == 4


@pytest.mark.parametrize(
    ("previous_mark", "committed_mark", "expected"),
    [
        pytest.param(None, None, None, id="no watermark anywhere stays none"),
        pytest.param(None, 5, 5, id="the first watermark is taken"),
        pytest.param(9, None, 9, id="a commit without one keeps the old"),
        pytest.param(9, 5, 9, id="a smaller one never moves it back"),
        pytest.param(9, 12, 12, id="a larger one moves it on"),
    ],
)
def test_the_watermark_only_moves_forward(
    previous_mark: int | None, committed_mark: int | None, expected: int | None
) -> None:
    committable = ResolvedCommittable("job", 7, watermark=committed_mark)
    snapshot = _build(_previous(watermark=previous_mark), _plan(CommitKind.APPEND), committable=committable)
    assert snapshot.watermark == expected


def test_index_manifest_and_statistics_carry_over_within_a_schema() -> None:
    """The index manifest and next row id always carry over; statistics only while the schema stays."""
    previous = _previous(index_manifest="index-1", statistics="stats-1", next_row_id=42)
    same = _build(previous, _plan(CommitKind.APPEND))
    assert (same.index_manifest, same.statistics, same.next_row_id) == ("index-1", "stats-1", 42)
    changed = _build(previous, _plan(CommitKind.APPEND), schema_id=1)
    assert (changed.index_manifest, changed.statistics, changed.schema_id) == ("index-1", None, 1)


def test_properties_are_written_only_when_given() -> None:
    empty = _build(None, _plan(CommitKind.APPEND))
    assert empty.properties is None
    given = ResolvedCommittable("job", 7, properties={"source": "kafka"})
    assert _build(None, _plan(CommitKind.APPEND), committable=given).properties == {"source": "kafka"}
