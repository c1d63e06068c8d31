"""Which snapshots one committable becomes: APPEND (or OVERWRITE) first, COMPACT second, as in Paimon."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from coordinator.domain.committable import ResolvedCommittable
from coordinator.domain.live_files import LiveFiles
from coordinator.domain.table_schema import TableShape
from paimon_format.manifest import FileKind, ManifestEntry
from paimon_format.snapshot import CommitKind


@dataclass(frozen=True)
class SnapshotPlan:
    kind: CommitKind
    entries: list[ManifestEntry]
    changelog: list[ManifestEntry]
    check_bucket_count: bool


def plan_snapshots(resolved: ResolvedCommittable, live: LiveFiles, shape: TableShape) -> list[SnapshotPlan]:
    """The snapshots to write, one per kind the committable asks for, in order; the first one's entries
    see `live` as it is now."""
    plans: list[SnapshotPlan] = []
    for kind in resolved.kinds:
        if kind == CommitKind.COMPACT:
            plans.append(SnapshotPlan(kind, resolved.compact, resolved.compact_changelog, True))
        elif resolved.overwrite is not None:
            target = resolved.overwrite
            replaced = [replace(e, kind=FileKind.DELETE) for e in live if target.matches(e.partition, shape)]
            entries = replaced + [e for e in resolved.append if e.kind == FileKind.ADD]
            if entries:
                # Paimon drops changelog files of an overwrite: it has no row-level changes to stream.
                plans.append(SnapshotPlan(kind, entries, [], check_bucket_count=False))
        else:
            plans.append(SnapshotPlan(kind, resolved.append, resolved.append_changelog, True))
    return plans


def with_live_metadata(entries: Sequence[ManifestEntry], live: LiveFiles) -> list[ManifestEntry]:
    """DELETE entries repeat the live ADD's full metadata, so readers and record counts see the real file."""
    out = []
    for entry in entries:
        if entry.kind == FileKind.DELETE:
            current = live.entries.get(entry.identifier)
            if current is not None:
                entry = replace(current, kind=FileKind.DELETE)
        out.append(entry)
    return out


def record_count_delta(entries: Sequence[ManifestEntry]) -> int:
    """Rows added minus rows deleted: Paimon counts file rows, not live keys."""
    return sum(e.file.row_count if e.kind == FileKind.ADD else -e.file.row_count for e in entries)
