"""A lost snapshot's changes as a committable again, read back from the manifests it wrote.

When a writer outside the coordinator overwrote a snapshot we had published and acknowledged, its
changes are no longer reachable from the table's head, but the delta and changelog manifests it wrote are
still on storage (nothing references them, so no expiry removed them). Committed again on top of the
outsider's snapshot, under the same commitUser and identifier, they bring the acknowledged rows back. The
usual conflict rules apply: a compaction or overwrite whose deleted files the outsider removed meanwhile
is rejected and stays lost (the history says `overwritten`).
"""

from __future__ import annotations

from coordinator.commit.member import Member
from coordinator.domain.committable import ResolvedCommittable
from coordinator.storage.fileio import FileIO
from coordinator.usecases.tables import Table, version_of
from paimon_format.manifest import ManifestEntry, decode_manifest, decode_manifest_list
from paimon_format.snapshot import CommitKind, Snapshot


def reapplication(fileio: FileIO, table: Table, lost: Snapshot) -> ResolvedCommittable:
    """The committable that makes `lost`'s file changes again (an overwrite as its exact file deletes)."""
    delta = _entries(fileio, table, lost.delta_manifest_list)
    changelog = _entries(fileio, table, lost.changelog_manifest_list) if lost.changelog_manifest_list else []
    compact = lost.commit_kind == CommitKind.COMPACT
    return ResolvedCommittable(
        commit_user=lost.commit_user,
        identifier=lost.commit_identifier,
        watermark=lost.watermark,
        append=[] if compact else delta,
        append_changelog=[] if compact else changelog,
        compact=delta if compact else [],
        compact_changelog=changelog if compact else [],
    )


def reapplying(table: Table, resolved: ResolvedCommittable) -> Member:
    """A group member nobody waits for: a lost commit's changes, decided like any other commit (the
    same file changes whatever the table's schema is now)."""

    def the_same(_table: Table, _now_millis: int) -> tuple[ResolvedCommittable, None]:
        return resolved, None

    return Member(resolved, None, the_same, version_of(table))


def _entries(fileio: FileIO, table: Table, manifest_list: str) -> list[ManifestEntry]:
    layout = table.layout
    metas = decode_manifest_list(fileio.read(layout.manifest(manifest_list)))
    return [e for m in metas for e in decode_manifest(fileio.read(layout.manifest(m.file_name)))]
