"""The digest of a commit's changes: the same changes in any order digest alike; any change of what the
commit does (a file, its size or row count, its list, the overwrite, watermark or properties) does not;
what the coordinator fills in itself (schema ids, creation times) does not count."""

from __future__ import annotations

from dataclasses import replace

from coordinator.domain.commit_digest import changes_digest
from coordinator.domain.committable import OverwriteTarget, ResolvedCommittable
from tests.support.builders import ADD, DELETE, entry, partition

A, B, C = entry(ADD, "data-a.parquet"), entry(ADD, "data-b.parquet", dt="b"), entry(DELETE, "data-c.parquet")
BASE = ResolvedCommittable("writer", 1, append=[A, B, C], properties={"k": "v"})


def test_the_order_of_messages_and_files_does_not_count() -> None:
    assert changes_digest(BASE) == changes_digest(replace(BASE, append=[C, B, A]))


def test_what_the_coordinator_fills_in_does_not_count() -> None:
    restamped = replace(A, file=replace(A.file, schema_id=3, creation_time=1700000000000))
    assert changes_digest(BASE) == changes_digest(replace(BASE, append=[restamped, B, C]))
    # Nor the name it was sent under: the name is what is compared beside the digest.
    assert changes_digest(BASE) == changes_digest(replace(BASE, commit_user="other", identifier=2))


def test_every_change_of_what_the_commit_does_counts() -> None:
    variants = [
        replace(BASE, append=[A, B]),
        replace(BASE, append=[A, B, C, entry(ADD, "data-d.parquet")]),
        replace(BASE, append=[replace(A, file=replace(A.file, file_size=A.file.file_size + 1)), B, C]),
        replace(BASE, append=[replace(A, file=replace(A.file, row_count=A.file.row_count + 1)), B, C]),
        replace(BASE, append=[replace(A, bucket=1), B, C]),
        replace(BASE, append=[replace(A, partition=partition("z")), B, C]),
        replace(BASE, append=[replace(A, file=replace(A.file, level=1)), B, C]),
        replace(BASE, append=[A, B], compact=[C]),
        replace(BASE, append=[A, B], append_changelog=[C]),
        replace(BASE, overwrite=OverwriteTarget(whole_table=True)),
        replace(BASE, overwrite=OverwriteTarget(partitions=frozenset([partition("a")]))),
        replace(BASE, watermark=5),
        replace(BASE, properties={"k": "w"}),
        replace(BASE, properties={}),
    ]
    digests = [changes_digest(v) for v in variants]
    assert changes_digest(BASE) not in digests
    assert len(set(digests)) == len(digests)
