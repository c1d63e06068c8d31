"""Which snapshots one committable becomes (domain/plan.py), and the record counts they carry."""

from __future__ import annotations

from dataclasses import replace

import pytest

from coordinator.domain.committable import OverwriteTarget, ResolvedCommittable, resolve_committable
from coordinator.domain.plan import plan_snapshots, record_count_delta, with_live_metadata
from coordinator_client.models import CommitRequest
from paimon_format.binary_row import encode_row
from paimon_format.manifest import FileKind, ManifestEntry
from paimon_format.snapshot import CommitKind
from tests.support.builders import ADD, DELETE, append_shape, data_file, deleted, entry, live, shape

APPEND_SHAPE = append_shape()
A1 = entry(ADD, "a1.parquet", dt="a")
A2 = entry(ADD, "a2.parquet", dt="a")
B1 = entry(ADD, "b1.parquet", dt="b")
C1 = entry(ADD, "c1.parquet", dt="c")
NEW_A = entry(ADD, "new-a.parquet", dt="a")
NEW_B = entry(ADD, "new-b.parquet", dt="b")
CHANGELOG = entry(ADD, "changelog-1.parquet", dt="a")


def resolved(**parts: object) -> ResolvedCommittable:
    return ResolvedCommittable("writer", 1, **parts)  # type: ignore[arg-type]


def names(entries: list[ManifestEntry]) -> list[tuple[FileKind, str]]:
    return [(e.kind, e.file.file_name) for e in entries]


@pytest.mark.parametrize(
    ("target", "new", "replaced"),
    [
        pytest.param(
            OverwriteTarget(whole_table=True), [NEW_A],
            ["a1.parquet", "a2.parquet", "b1.parquet", "c1.parquet"],
            id="a table overwrite deletes every live file",
        ),
        pytest.param(
            OverwriteTarget(partitions=frozenset({NEW_A.partition, NEW_B.partition})), [NEW_A, NEW_B],
            ["a1.parquet", "a2.parquet", "b1.parquet"],
            id="a dynamic overwrite deletes the live files of the new files' partitions only",
        ),
        pytest.param(
            OverwriteTarget(spec={0: "c"}), [], ["c1.parquet"],
            id="a static overwrite without new files empties its partition",
        ),
    ],
)  # fmt: skip
def test_overwrite_replaces_the_target(
    target: OverwriteTarget, new: list[ManifestEntry], replaced: list[str]
) -> None:
    files = live([A1, A2, B1, C1])
    plans = plan_snapshots(resolved(append=new, overwrite=target), files, APPEND_SHAPE)
    assert len(plans) == 1
    plan = plans[0]
    assert plan.kind == CommitKind.OVERWRITE
    assert plan.check_bucket_count is False
    assert names(plan.entries) == [(DELETE, n) for n in replaced] + [(ADD, e.file.file_name) for e in new]


def test_a_static_overwrite_matches_a_prefix_of_the_partition_keys() -> None:
    """On (dt, hr), `{"dt": "a"}` replaces every hour of day a, and nothing of day b."""
    two_level = shape({"dt": "STRING", "hr": "INT", "v": "STRING"}, partition_keys=["dt", "hr"])
    types = two_level.partition_types
    a0, a1, b0 = (
        ManifestEntry(ADD, encode_row(values, types), 0, -1, data_file(f"{values[0]}{values[1]}.parquet"))
        for values in (["a", 0], ["a", 1], ["b", 0])
    )
    request = CommitRequest.model_validate(
        {"commitUser": "writer", "overwrite": {"mode": "static", "partition": {"dt": "a"}}}
    )
    target = resolve_committable(request, two_level, now_millis=0).overwrite
    assert target is not None
    plans = plan_snapshots(resolved(overwrite=target), live([a0, a1, b0]), two_level)
    assert names(plans[0].entries) == [(DELETE, "a0.parquet"), (DELETE, "a1.parquet")]


def test_an_overwrite_drops_changelog_and_deleted_files() -> None:
    """Paimon writes no changelog for an overwrite; its own DELETEs are subsumed by the replacement."""
    files = live([A1, B1])
    committable = resolved(
        append=[NEW_A, deleted(B1)],
        append_changelog=[CHANGELOG],
        overwrite=OverwriteTarget(partitions=frozenset({NEW_A.partition})),
    )
    [plan] = plan_snapshots(committable, files, APPEND_SHAPE)
    assert plan.changelog == []
    assert names(plan.entries) == [(DELETE, "a1.parquet"), (ADD, "new-a.parquet")]


def test_an_overwrite_of_nothing_with_nothing_writes_no_snapshot() -> None:
    target = OverwriteTarget(partitions=frozenset({NEW_B.partition}))
    assert plan_snapshots(resolved(overwrite=target), live([A1]), APPEND_SHAPE) == []


@pytest.mark.parametrize(
    ("committable", "kinds"),
    [
        pytest.param(resolved(), [], id="an empty committable writes no snapshot"),
        pytest.param(resolved(append=[NEW_A]), [CommitKind.APPEND], id="new files make one APPEND"),
        pytest.param(
            resolved(append=[NEW_A, deleted(A1)]), [CommitKind.OVERWRITE],
            id="deletes in the append part make the snapshot an OVERWRITE",
        ),
        pytest.param(
            resolved(append_changelog=[CHANGELOG]), [CommitKind.APPEND],
            id="changelog files alone still make an APPEND",
        ),
        pytest.param(
            resolved(compact=[deleted(A1), NEW_A]), [CommitKind.COMPACT], id="a compaction makes one COMPACT",
        ),
        pytest.param(
            resolved(compact_changelog=[CHANGELOG]), [CommitKind.COMPACT],
            id="compaction changelog alone still makes a COMPACT",
        ),
        pytest.param(
            resolved(append=[NEW_B], compact=[deleted(A1), NEW_A]), [CommitKind.APPEND, CommitKind.COMPACT],
            id="APPEND and COMPACT of one committable become two snapshots, APPEND first",
        ),
        pytest.param(
            resolved(append=[NEW_A], overwrite=OverwriteTarget(whole_table=True), compact=[deleted(B1)]),
            [CommitKind.OVERWRITE, CommitKind.COMPACT],
            id="an OVERWRITE also comes before a COMPACT",
        ),
    ],
)  # fmt: skip
def test_commit_kinds_in_order(committable: ResolvedCommittable, kinds: list[CommitKind]) -> None:
    plans = plan_snapshots(committable, live([A1, B1]), APPEND_SHAPE)
    assert [p.kind for p in plans] == kinds


def test_append_and_compact_keep_their_own_entries_and_changelog() -> None:
    compact_changelog = entry(ADD, "changelog-2.parquet", dt="a")
    committable = resolved(
        append=[NEW_B],
        append_changelog=[CHANGELOG],
        compact=[deleted(A1), NEW_A],
        compact_changelog=[compact_changelog],
    )
    append, compact = plan_snapshots(committable, live([A1]), APPEND_SHAPE)
    assert (append.entries, append.changelog, append.check_bucket_count) == ([NEW_B], [CHANGELOG], True)
    assert (compact.entries, compact.changelog, compact.check_bucket_count) == (
        [deleted(A1), NEW_A],
        [compact_changelog],
        True,
    )


@pytest.mark.parametrize(
    ("entries", "delta"),
    [
        pytest.param([], 0, id="nothing changes nothing"),
        pytest.param([entry(ADD, "x.parquet", rows=7)], 7, id="an ADD counts its rows"),
        pytest.param([entry(DELETE, "x.parquet", rows=7)], -7, id="a DELETE subtracts its rows"),
        pytest.param(
            [entry(DELETE, "x.parquet", rows=7), entry(ADD, "y.parquet", rows=5)], -2,
            id="a compaction to fewer rows counts the difference",
        ),
    ],
)  # fmt: skip
def test_record_count_delta(entries: list[ManifestEntry], delta: int) -> None:
    assert record_count_delta(entries) == delta


def test_with_live_metadata_repeats_the_live_add_in_a_delete() -> None:
    """A writer's DELETE may carry less than the ADD did; the manifest repeats what is live."""
    full = entry(ADD, "a.parquet", rows=40)
    thin = replace(deleted(full), file=replace(full.file, row_count=0, file_size=0))
    unknown = entry(DELETE, "unknown.parquet", rows=3)
    added = entry(ADD, "b.parquet", rows=2)
    out = with_live_metadata([thin, unknown, added], live([full]))
    assert out == [deleted(full), unknown, added]
    assert record_count_delta(out) == -40 - 3 + 2


def test_a_static_spec_compares_decoded_partition_values() -> None:
    target = OverwriteTarget(spec={0: "a"})
    assert target.matches(A1.partition, APPEND_SHAPE) is True
    assert target.matches(B1.partition, APPEND_SHAPE) is False
