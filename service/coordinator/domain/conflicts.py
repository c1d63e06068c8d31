"""Paimon's conflict detection, as pure functions over the live files and the delta of one snapshot.

The conflict matrix (checked in this order; the first failure wins):

| type                   | when                                                                 | retryable |
|------------------------|----------------------------------------------------------------------|-----------|
| BASE_SNAPSHOT_MOVED    | strict mode, or a proposed snapshot (REST): the table's latest        | yes       |
|                        | snapshot is not the writer's base                                    |           |
| BUCKET_COUNT_CHANGED   | an ADD's totalBuckets differs from the partition's live files or from | no        |
|                        | another ADD of the same partition (not checked for OVERWRITE)         |           |
| DUPLICATE_FILE         | the delta names a file twice, or adds a file that is already live     | no        |
| DELETED_FILE_MISSING   | the delta deletes a file that is not live (another commit removed it) | no        |
| LSM_KEY_RANGE_OVERLAP  | primary-key tables: after the delta, two files of one level >= 1 in   | no        |
|                        | one (partition, bucket) have overlapping key ranges                   |           |

Appends of level-0 files to the same bucket never conflict: level 0 may overlap, readers merge it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from coordinator.domain.live_files import LiveFiles
from paimon_format.manifest import FileKind, ManifestEntry
from paimon_format.snapshot import Snapshot

KeyDecoder = Callable[[bytes], tuple[object, ...]]

ConflictType = Literal[
    "BASE_SNAPSHOT_MOVED",
    "BUCKET_COUNT_CHANGED",
    "DELETED_FILE_MISSING",
    "DUPLICATE_FILE",
    "IDENTIFIER_REUSED",
    "LATEST_SNAPSHOT_MOVED",
    "LOCK_LOST",
    "LSM_KEY_RANGE_OVERLAP",
]
"""Why a commit is rejected: the five checks of the matrix above, and the three decided at the commit
point or on a resend (LATEST_SNAPSHOT_MOVED, LOCK_LOST, IDENTIFIER_REUSED). The same names as the wire's
ConflictType, which a conflict's answer carries (tests/domain/test_conflicts.py checks they agree)."""


@dataclass(eq=False)
class Conflict(Exception):  # not frozen: raising sets __traceback__
    """Why a snapshot cannot apply; `winning_snapshot_id` is the snapshot that got there first."""

    type: ConflictType
    message: str
    partition: bytes | None = None
    bucket: int | None = None
    files: tuple[str, ...] = ()
    winning_snapshot_id: int | None = None
    retryable: bool = False
    extra: dict[str, object] = field(default_factory=dict)


def check_base_snapshot(base_snapshot_id: int | None, latest_snapshot_id: int) -> None:
    """Strict mode: the writer planned on `base_snapshot_id`; any later snapshot is a conflict.

    Raises:
        Conflict: BASE_SNAPSHOT_MOVED.
    """
    if base_snapshot_id is not None and base_snapshot_id != latest_snapshot_id:
        raise Conflict(
            "BASE_SNAPSHOT_MOVED",
            f"the table moved from snapshot {base_snapshot_id} to {latest_snapshot_id}",
            winning_snapshot_id=latest_snapshot_id,
            retryable=True,
        )


def check_compare_and_set(head: Snapshot | None, snapshot_id: int, base_uuid: str | None) -> None:
    """A snapshot a client finished itself (Paimon's REST protocol) builds on the table's head: its id is
    the next one and its base is the head's uuid; a client or a head without a uuid (Paimon 1.x) is
    decided by the id alone.

    Raises:
        Conflict: BASE_SNAPSHOT_MOVED, retryable: the client rebases and proposes again.
    """
    head_id = head.id if head is not None else 0
    if head is None:
        same_base = base_uuid is None
    elif head.uuid is not None and base_uuid is not None:
        same_base = base_uuid == head.uuid
    else:
        same_base = True
    if same_base and snapshot_id == head_id + 1:
        return
    head_name = f"{head_id} ({head.uuid})" if head is not None and head.uuid else str(head_id)
    raise Conflict(
        "BASE_SNAPSHOT_MOVED",
        f"snapshot {snapshot_id} was built on {base_uuid or 'an empty table'}, but the table's latest "
        f"snapshot is {head_name}",
        winning_snapshot_id=head_id or None,
        retryable=True,
    )


def check_conflicts(
    live: LiveFiles,
    delta: Sequence[ManifestEntry],
    *,
    check_bucket_count: bool,
    decode_key: KeyDecoder | None,
) -> None:
    """Check one snapshot's delta against the live files it applies to.

    Raises:
        Conflict: BUCKET_COUNT_CHANGED, DUPLICATE_FILE, DELETED_FILE_MISSING or LSM_KEY_RANGE_OVERLAP.
    """
    if check_bucket_count:
        _check_bucket_count(live, delta)
    _check_files(live, delta)
    if decode_key is not None:
        _check_key_ranges(live, delta, decode_key)


def _check_bucket_count(live: LiveFiles, delta: Sequence[ManifestEntry]) -> None:
    seen: dict[bytes, int] = {}
    for entry in delta:
        if entry.kind != FileKind.ADD or entry.total_buckets <= 0:
            continue
        expected = seen.setdefault(
            entry.partition, live.total_buckets(entry.partition) or entry.total_buckets
        )
        if entry.total_buckets != expected:
            raise Conflict(
                "BUCKET_COUNT_CHANGED",
                f"total buckets of the partition changed from {expected} to {entry.total_buckets} "
                "without an overwrite",
                partition=entry.partition,
                bucket=entry.bucket,
                files=(entry.file.file_name,),
                winning_snapshot_id=live.snapshot_id or None,
            )


def _check_files(live: LiveFiles, delta: Sequence[ManifestEntry]) -> None:
    # One identifier per entry, made once: a big commit checks tens of thousands.
    idents = [entry.identifier for entry in delta]
    seen = set(idents)
    if len(seen) < len(idents):
        seen.clear()
        for entry, ident in zip(delta, idents, strict=True):
            if ident in seen:
                raise Conflict(
                    "DUPLICATE_FILE",
                    f"file {entry.file.file_name} appears twice in the commit",
                    partition=entry.partition,
                    bucket=entry.bucket,
                    files=(entry.file.file_name,),
                )
            seen.add(ident)
    live_entries = live.entries
    missing = [
        e
        for e, ident in zip(delta, idents, strict=True)
        if e.kind == FileKind.DELETE and ident not in live_entries
    ]
    if missing:
        winner = next(
            (live.removed_in[e.identifier] for e in missing if e.identifier in live.removed_in), None
        )
        first = missing[0]
        raise Conflict(
            "DELETED_FILE_MISSING",
            f"trying to delete file {first.file.file_name} which is not previously added"
            + (f" (snapshot {winner} removed it)" if winner is not None else ""),
            partition=first.partition,
            bucket=first.bucket,
            files=tuple(e.file.file_name for e in missing),
            winning_snapshot_id=winner if winner is not None else (live.snapshot_id or None),
        )
    duplicates = (
        [
            e
            for e, ident in zip(delta, idents, strict=True)
            if e.kind == FileKind.ADD and ident in live_entries
        ]
        if live_entries
        else []
    )
    if duplicates:
        first = duplicates[0]
        raise Conflict(
            "DUPLICATE_FILE",
            f"trying to add file {first.file.file_name} which is already added",
            partition=first.partition,
            bucket=first.bucket,
            files=tuple(e.file.file_name for e in duplicates),
            winning_snapshot_id=live.added_in.get(first.identifier),
        )


def _check_key_ranges(live: LiveFiles, delta: Sequence[ManifestEntry], decode_key: KeyDecoder) -> None:
    deleted = {e.identifier for e in delta if e.kind == FileKind.DELETE}
    added_by_bucket: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    for entry in delta:
        if entry.kind == FileKind.ADD and entry.file.level > 0:
            added_by_bucket.setdefault((entry.partition, entry.bucket), []).append(entry)
    for (partition, bucket), added in added_by_bucket.items():
        levels: dict[int, list[ManifestEntry]] = {}
        for entry in [*live.in_bucket(partition, bucket), *added]:
            if entry.file.level > 0 and entry.identifier not in deleted:
                levels.setdefault(entry.file.level, []).append(entry)
        new_levels = {e.file.level for e in added}
        for level in sorted(new_levels):
            runs = sorted(levels[level], key=lambda e: decode_key(e.file.min_key))
            for before, after in itertools.pairwise(runs):
                if decode_key(before.file.max_key) >= decode_key(after.file.min_key):
                    other = before if before not in added else after
                    raise Conflict(
                        "LSM_KEY_RANGE_OVERLAP",
                        f"LSM conflict: files {before.file.file_name} and {after.file.file_name} "
                        f"overlap in key range at level {level}",
                        partition=partition,
                        bucket=bucket,
                        files=(before.file.file_name, after.file.file_name),
                        winning_snapshot_id=live.added_in.get(other.identifier),
                    )
