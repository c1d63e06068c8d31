"""Which files a maintenance action may delete: those only the snapshots and tags it removes referenced.

Expiration, rollback and tag deletion each collect two sets of references from the manifests: what the
snapshots and tags that go could read, and what the snapshots and tags that stay read. A file is deleted
only when nothing that stays references it, whatever kind of file the kept reference names it as (a
changelog file a kept snapshot reads as a data file stays too).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class FileReferences:
    """Absolute paths of the files some snapshots or tags reference, by kind."""

    data: frozenset[str] = frozenset()
    """Data files and their extra files."""
    changelog: frozenset[str] = frozenset()
    """Changelog files (written beside data files, named by the changelog manifests)."""
    manifests: frozenset[str] = frozenset()
    """Manifest lists, manifests and index manifests."""

    @classmethod
    def of(
        cls, *, data: Iterable[str] = (), changelog: Iterable[str] = (), manifests: Iterable[str] = ()
    ) -> FileReferences:
        return cls(frozenset(data), frozenset(changelog), frozenset(manifests))

    def paths(self) -> frozenset[str]:
        """Every referenced path, whatever its kind."""
        return self.data | self.changelog | self.manifests


def only_removed(removed: FileReferences, kept: FileReferences) -> FileReferences:
    """What the removed snapshots and tags referenced and nothing kept references: what may be deleted."""
    kept_paths = kept.paths()
    return FileReferences(
        data=removed.data - kept_paths,
        changelog=removed.changelog - kept_paths,
        manifests=removed.manifests - kept_paths,
    )
