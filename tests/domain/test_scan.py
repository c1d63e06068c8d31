"""The streamed scan plan's pure rules: manifest pruning by partition statistics, and the DELETE filter
that must agree with merge_entries on every order of ADD and DELETE entries."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.domain.live_files import merge_entries
from coordinator.domain.manifest_pruning import manifest_may_contain
from coordinator.domain.scan import Deletions, Position, live_adds
from coordinator.domain.table_schema import TableShape
from paimon_format.binary_row import EMPTY_ROW, encode_row
from paimon_format.manifest import ManifestEntry, ManifestFileMeta, SimpleStats
from tests.support.builders import ADD, DELETE, append_shape, entry, shape


def meta(
    shape_: TableShape,
    mins: Sequence[object],
    maxs: Sequence[object],
    nulls: Sequence[int | None] | None,
    *,
    added: int = 10,
    deleted: int = 0,
) -> ManifestFileMeta:
    stats = SimpleStats(
        encode_row(mins, shape_.partition_types),
        encode_row(maxs, shape_.partition_types),
        None if nulls is None else tuple(nulls),
    )
    return ManifestFileMeta("manifest-x-0", 100, added, deleted, stats, 0)


DT = append_shape()
TWO = shape({"dt": "DATE", "hr": "INT", "v": "STRING"}, partition_keys=["dt", "hr"])


@pytest.mark.parametrize(
    ("value", "expected"),
    [("a", True), ("b", True), ("c", True), ("0", False), ("d", False), ("bb", True), ("c0", False)],
)
def test_a_manifest_is_read_only_when_its_range_may_hold_the_value(value: str, expected: bool) -> None:
    assert manifest_may_contain(meta(DT, ["a"], ["c"], [0]), {0: value}, DT) is expected


def test_no_filter_reads_every_manifest() -> None:
    assert manifest_may_contain(meta(DT, ["a"], ["a"], [0]), {}, DT)


def test_nulls_decide_for_a_null_value_and_for_an_all_null_field() -> None:
    assert not manifest_may_contain(meta(DT, ["a"], ["c"], [0]), {0: None}, DT)
    assert manifest_may_contain(meta(DT, ["a"], ["c"], [3]), {0: None}, DT)
    assert manifest_may_contain(meta(DT, ["a"], ["c"], None), {0: None}, DT)  # counts unknown
    all_null = meta(DT, [None], [None], [10])
    assert not manifest_may_contain(all_null, {0: "a"}, DT)
    assert manifest_may_contain(all_null, {0: None}, DT)
    # no min/max and no null count: the writer kept no statistics, so nothing is proven
    assert manifest_may_contain(meta(DT, [None], [None], [0]), {0: "a"}, DT)


def test_every_field_of_the_spec_must_fit_and_a_prefix_is_enough() -> None:
    m = meta(TWO, [date(2024, 1, 1), 0], [date(2024, 1, 31), 11], [0, 0])
    assert manifest_may_contain(m, {0: date(2024, 1, 5), 1: 3}, TWO)
    assert not manifest_may_contain(m, {0: date(2024, 1, 5), 1: 12}, TWO)
    assert not manifest_may_contain(m, {0: date(2024, 2, 1)}, TWO)
    assert manifest_may_contain(m, {1: 11}, TWO)


def test_statistics_that_cannot_be_read_keep_the_manifest() -> None:
    foreign = ManifestFileMeta("m", 1, 1, 0, SimpleStats(EMPTY_ROW, EMPTY_ROW, ()), 0)
    assert manifest_may_contain(foreign, {0: "a"}, DT)
    garbage = ManifestFileMeta("m", 1, 1, 0, SimpleStats(b"\x00\x01", b"\x00", (0,)), 0)
    assert manifest_may_contain(garbage, {0: "a"}, DT)


def test_nan_bounds_never_prune() -> None:
    floats = shape({"f": "DOUBLE", "v": "STRING"}, partition_keys=["f"])
    assert manifest_may_contain(meta(floats, [float("nan")], [1.0], [0]), {0: 5.0}, floats)
    assert not manifest_may_contain(meta(floats, [0.0], [1.0], [0]), {0: 5.0}, floats)


def positioned(manifests: Sequence[Sequence[ManifestEntry]]) -> list[tuple[Position, ManifestEntry]]:
    return [((m, i), e) for m, entries in enumerate(manifests) for i, e in enumerate(entries)]


def streamed(manifests: Sequence[Sequence[ManifestEntry]]) -> list[ManifestEntry]:
    deletions = Deletions()
    for position, e in positioned(manifests):
        deletions.note(e, position)
    return list(live_adds(positioned(manifests), deletions))


def merged(manifests: Sequence[Sequence[ManifestEntry]]) -> list[ManifestEntry]:
    return [e for e in merge_entries(e for m in manifests for e in m) if e.kind == ADD]


def test_a_later_delete_cancels_an_add_and_an_earlier_one_does_not() -> None:
    a, b = entry(ADD, "a"), entry(ADD, "b")
    assert streamed([[a, b], [entry(DELETE, "a")]]) == [b]
    assert streamed([[entry(DELETE, "a")], [a]]) == [a]  # deleted, then added again
    assert streamed([[a, entry(DELETE, "a"), a]]) == [a]  # within one manifest, order counts too
    # another level or partition is another file
    assert streamed([[a], [entry(DELETE, "a", level=1), entry(DELETE, "a", dt="b")]]) == [a]


def test_deletions_remember_only_deletes() -> None:
    deletions = Deletions()
    deletions.note(entry(ADD, "a"), (0, 0))
    deletions.note(entry(DELETE, "b"), (2, 0))
    deletions.note(entry(DELETE, "b"), (1, 5))
    assert len(deletions) == 1
    assert deletions.cancels(entry(ADD, "b"), (1, 9))
    assert not deletions.cancels(entry(ADD, "b"), (2, 1))


# Histories as a committer makes them: a file is added at most once while live.
_names = st.sampled_from(["f1", "f2", "f3", "f4"])


@st.composite
def histories(draw: st.DrawFn) -> list[list[ManifestEntry]]:
    live: set[tuple[str, str]] = set()
    manifests: list[list[ManifestEntry]] = []
    for _ in range(draw(st.integers(1, 5))):
        entries = []
        for _ in range(draw(st.integers(0, 6))):
            name, dt = draw(_names), draw(st.sampled_from(["a", "b"]))
            if (name, dt) in live and draw(st.booleans()):
                live.discard((name, dt))
                entries.append(entry(DELETE, name, dt=dt))
            elif (name, dt) not in live:
                live.add((name, dt))
                entries.append(entry(ADD, name, dt=dt))
            else:
                entries.append(entry(DELETE, f"gone-{name}", dt=dt))  # an unmatched DELETE
        manifests.append(entries)
    return manifests


@settings(max_examples=300, deadline=None)
@given(histories())
def test_streaming_agrees_with_merge_entries(manifests: list[list[ManifestEntry]]) -> None:
    assert sorted(streamed(manifests), key=repr) == sorted(merged(manifests), key=repr)
