"""Which files maintenance may delete: what only the removed snapshots and tags referenced."""

from __future__ import annotations

import pytest

from coordinator.domain.file_references import FileReferences, only_removed

A, B, C = "/t/bucket-0/data-a.parquet", "/t/bucket-0/data-b.parquet", "/t/bucket-0/data-c.parquet"
CL = "/t/bucket-0/changelog-1.parquet"
M1, M2, ML = "/t/manifest/manifest-1", "/t/manifest/manifest-2", "/t/manifest/manifest-list-1"


@pytest.mark.parametrize(
    ("removed", "kept", "deletable"),
    [
        pytest.param(
            FileReferences.of(data=[A, B]),
            FileReferences.of(data=[B, C]),
            FileReferences.of(data=[A]),
            id="a data file a kept snapshot reads stays",
        ),
        pytest.param(
            FileReferences.of(data=[A], changelog=[CL], manifests=[M1, ML]),
            FileReferences(),
            FileReferences.of(data=[A], changelog=[CL], manifests=[M1, ML]),
            id="nothing kept: everything removed goes",
        ),
        pytest.param(
            FileReferences(),
            FileReferences.of(data=[A], manifests=[M1]),
            FileReferences(),
            id="nothing removed: nothing goes",
        ),
        pytest.param(
            FileReferences.of(manifests=[M1, M2, ML]),
            FileReferences.of(manifests=[M2]),
            FileReferences.of(manifests=[M1, ML]),
            id="a manifest a kept snapshot or tag lists stays",
        ),
        pytest.param(
            FileReferences.of(changelog=[CL]),
            FileReferences.of(data=[CL]),
            FileReferences(),
            id="a changelog file kept as a data file stays",
        ),
        pytest.param(
            FileReferences.of(data=[CL]),
            FileReferences.of(changelog=[CL]),
            FileReferences(),
            id="a data file kept as a changelog file stays",
        ),
        pytest.param(
            FileReferences.of(data=[A, B], changelog=[CL], manifests=[M1]),
            FileReferences.of(data=[A, B], changelog=[CL], manifests=[M1]),
            FileReferences(),
            id="everything removed is still kept: nothing goes",
        ),
    ],
)
def test_only_what_nothing_kept_references_may_be_deleted(
    removed: FileReferences, kept: FileReferences, deletable: FileReferences
) -> None:
    assert only_removed(removed, kept) == deletable


@pytest.mark.parametrize(
    ("removed", "kept"),
    [
        (FileReferences.of(data=[A, B, C], changelog=[CL], manifests=[M1, M2]), FileReferences.of(data=[B])),
        (FileReferences.of(data=[A], manifests=[M1, ML]), FileReferences.of(data=[A, C], manifests=[ML, M2])),
    ],
)
def test_what_may_be_deleted_was_removed_and_is_not_kept(
    removed: FileReferences, kept: FileReferences
) -> None:
    deletable = only_removed(removed, kept)
    assert deletable.data <= removed.data
    assert deletable.changelog <= removed.changelog
    assert deletable.manifests <= removed.manifests
    assert not deletable.paths() & kept.paths()
    # Whatever was removed is either deleted now or still kept: nothing is forgotten.
    assert removed.paths() == deletable.paths() | (removed.paths() & kept.paths())
