"""The conflict matrix of `coordinator.domain.conflicts`, one row per case, without a server.

Each row is (live files, delta, check options) -> the conflict type and the winning snapshot it names,
or None when the delta applies. The id states the expected outcome. tests/commit/test_conflicts.py keeps
the same rules over HTTP, with pypaimon as the reader.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import get_args

import pytest

from coordinator.domain import conflicts
from coordinator.domain.conflicts import Conflict, KeyDecoder, check_base_snapshot, check_conflicts
from coordinator.domain.live_files import LiveFiles
from coordinator_client import models
from paimon_format.manifest import ManifestEntry
from tests.support.builders import ADD, DELETE, deleted, entry, live, pk_shape

DECODE_KEY: KeyDecoder = pk_shape().decode_key

# Snapshot 1 adds three level-0 files with keys 1..10 to partition a (2 buckets); snapshot 2 removes
# `gone`; snapshot 3 adds a level-1 run of keys 1..10 in bucket 0.
A1 = entry(ADD, "a1.parquet", keys=(1, 10))
A2 = entry(ADD, "a2.parquet", bucket=1, keys=(1, 10))
GONE = entry(ADD, "gone.parquet", keys=(1, 10))
RUN = entry(ADD, "run.parquet", level=1, keys=(1, 10))
LIVE = (A1, A2, GONE), (deleted(GONE),), (RUN,)


@dataclass(frozen=True)
class Expected:
    type: str
    winning_snapshot_id: int | None


def _check(delta: Sequence[ManifestEntry], files: LiveFiles, *, bucket_count: bool, keys: bool) -> None:
    check_conflicts(files, delta, check_bucket_count=bucket_count, decode_key=DECODE_KEY if keys else None)


MATRIX = [
    # BUCKET_COUNT_CHANGED
    pytest.param(
        [entry(ADD, "n.parquet", total_buckets=4)], True, False, Expected("BUCKET_COUNT_CHANGED", 3),
        id="an ADD with 4 buckets to a partition live with 2 conflicts",
    ),
    pytest.param(
        [entry(ADD, "n.parquet", total_buckets=4)], False, False, None,
        id="an OVERWRITE (no bucket check) may change the bucket count",
    ),
    pytest.param(
        [entry(ADD, "n1.parquet", dt="b", total_buckets=2),
         entry(ADD, "n2.parquet", dt="b", total_buckets=3)],
        True, False, Expected("BUCKET_COUNT_CHANGED", 3),
        id="two ADDs to one new partition with different bucket counts conflict",
    ),
    pytest.param(
        [entry(ADD, "n.parquet", dt="b", total_buckets=4)], True, False, None,
        id="a new partition may choose its own bucket count",
    ),
    pytest.param(
        [entry(ADD, "n.parquet", total_buckets=-1)], True, False, None,
        id="a bucket-unaware ADD (totalBuckets -1) is not checked",
    ),
    pytest.param(
        [entry(DELETE, "a1.parquet", total_buckets=4)], True, False, None,
        id="a DELETE's bucket count is not checked",
    ),
    # DUPLICATE_FILE
    pytest.param(
        [entry(ADD, "n.parquet"), entry(ADD, "n.parquet")], True, False, Expected("DUPLICATE_FILE", None),
        id="a delta naming one file twice conflicts",
    ),
    pytest.param(
        [A1], True, False, Expected("DUPLICATE_FILE", 1),
        id="adding a live file conflicts and names the snapshot that added it",
    ),
    pytest.param(
        [entry(ADD, "a1.parquet", bucket=1)], True, False, None,
        id="the same file name in another bucket is another file",
    ),
    pytest.param(
        [entry(ADD, "a1.parquet", level=1)], True, False, None,
        id="the same file name at another level is another file",
    ),
    # DELETED_FILE_MISSING
    pytest.param(
        [entry(DELETE, "never.parquet")], True, False, Expected("DELETED_FILE_MISSING", 3),
        id="deleting a file that was never live conflicts with the latest snapshot",
    ),
    pytest.param(
        [deleted(GONE)], True, False, Expected("DELETED_FILE_MISSING", 2),
        id="deleting a file another commit removed names that commit's snapshot",
    ),
    pytest.param(
        [deleted(A1), deleted(A2)], True, False, None,
        id="deleting live files applies",
    ),
    # LSM_KEY_RANGE_OVERLAP (primary-key tables)
    pytest.param(
        [entry(ADD, "o.parquet", level=1, keys=(5, 20))], True, True, Expected("LSM_KEY_RANGE_OVERLAP", 3),
        id="a level-1 file overlapping a live level-1 run of its bucket conflicts",
    ),
    pytest.param(
        [entry(ADD, "o.parquet", level=1, keys=(10, 20))], True, True, Expected("LSM_KEY_RANGE_OVERLAP", 3),
        id="key ranges that share their boundary key overlap",
    ),
    pytest.param(
        [entry(ADD, "o.parquet", level=1, keys=(11, 20))], True, True, None,
        id="adjacent key ranges at one level apply",
    ),
    pytest.param(
        [entry(ADD, "o.parquet", level=0, keys=(5, 20))], True, True, None,
        id="a level-0 file may overlap the level-0 files of its bucket",
    ),
    pytest.param(
        [entry(ADD, "o.parquet", level=2, keys=(5, 20))], True, True, None,
        id="overlap across levels applies",
    ),
    pytest.param(
        [entry(ADD, "o.parquet", bucket=1, level=1, keys=(5, 20))], True, True, None,
        id="overlap with a run of another bucket applies",
    ),
    pytest.param(
        [deleted(RUN), entry(ADD, "o.parquet", level=1, keys=(5, 20))], True, True, None,
        id="a compaction replacing the run it overlaps applies",
    ),
    pytest.param(
        [entry(ADD, "o1.parquet", level=3, keys=(1, 5)), entry(ADD, "o2.parquet", level=3, keys=(5, 9))],
        True, True, Expected("LSM_KEY_RANGE_OVERLAP", None),
        id="two new files of one level overlapping each other conflict",
    ),
    pytest.param(
        [entry(ADD, "o.parquet", level=1, keys=(5, 20))], True, False, None,
        id="append tables (no key decoder) have no key-range check",
    ),
    # The first failure wins, in the docstring's order.
    pytest.param(
        [A1, entry(ADD, "n.parquet", total_buckets=4)], True, False, Expected("BUCKET_COUNT_CHANGED", 3),
        id="a bucket-count change is reported before a duplicate file",
    ),
    pytest.param(
        [A1, entry(DELETE, "never.parquet")], True, False, Expected("DELETED_FILE_MISSING", 3),
        id="a missing delete is reported before adding a live file",
    ),
    pytest.param(
        [A1, entry(ADD, "o.parquet", level=1, keys=(5, 20))], True, True, Expected("DUPLICATE_FILE", 1),
        id="a duplicate file is reported before a key-range overlap",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("delta", "bucket_count", "keys", "expected"), MATRIX)
def test_conflict_matrix(
    delta: list[ManifestEntry], bucket_count: bool, keys: bool, expected: Expected | None
) -> None:
    files = live(*LIVE)
    if expected is None:
        _check(delta, files, bucket_count=bucket_count, keys=keys)
        return
    with pytest.raises(Conflict) as raised:
        _check(delta, files, bucket_count=bucket_count, keys=keys)
    assert (raised.value.type, raised.value.winning_snapshot_id) == (
        expected.type,
        expected.winning_snapshot_id,
    )
    assert raised.value.retryable is False


@pytest.mark.parametrize(
    ("base", "latest", "moved"),
    [
        pytest.param(None, 7, False, id="without a base snapshot the check is off"),
        pytest.param(7, 7, False, id="a base equal to the latest snapshot applies"),
        pytest.param(6, 7, True, id="a base behind the latest snapshot conflicts, retryably"),
        pytest.param(0, 7, True, id="a base of 0 on a table that has snapshots conflicts"),
    ],
)
def test_base_snapshot(base: int | None, latest: int, moved: bool) -> None:
    if not moved:
        check_base_snapshot(base, latest)
        return
    with pytest.raises(Conflict) as raised:
        check_base_snapshot(base, latest)
    assert raised.value.type == "BASE_SNAPSHOT_MOVED"
    assert raised.value.winning_snapshot_id == latest
    assert raised.value.retryable is True


def test_a_conflict_names_the_partition_bucket_and_files() -> None:
    """The structured reason a client shows: which (partition, bucket) and which files collided."""
    overlapping = entry(ADD, "o.parquet", level=1, keys=(5, 20))
    with pytest.raises(Conflict) as raised:
        _check([overlapping], live(*LIVE), bucket_count=True, keys=True)
    assert raised.value.partition == RUN.partition
    assert raised.value.bucket == 0
    assert raised.value.files == ("run.parquet", "o.parquet")


def test_every_missing_delete_is_listed() -> None:
    delta = [entry(DELETE, "x.parquet"), deleted(A1), entry(DELETE, "y.parquet")]
    with pytest.raises(Conflict) as raised:
        _check(delta, live(*LIVE), bucket_count=True, keys=False)
    assert raised.value.files == ("x.parquet", "y.parquet")


def test_an_empty_table_accepts_any_first_delta() -> None:
    delta = [entry(ADD, "n.parquet", level=1, keys=(1, 2)), entry(ADD, "m.parquet", dt="b", total_buckets=8)]
    _check(delta, LiveFiles(), bucket_count=True, keys=True)
    files = LiveFiles()
    files.apply(delta, 1)
    assert len(files) == 2


def test_the_conflict_types_are_the_wire_s() -> None:
    """The domain names its conflicts itself; a conflict's answer carries the name as the wire's type."""
    assert get_args(conflicts.ConflictType) == get_args(models.ConflictType)
