"""The pure half of a streamed scan plan: which manifests a partition filter must read, and which ADD
entries are still live once the snapshot's DELETE entries are known.

A snapshot's live files are the ADD entries of its base and delta manifests, read in order, less each ADD
that a later DELETE with the same identifier cancels (Paimon's FileEntry.mergeEntries, the project's
`merge_entries`). Merging everything in memory costs the whole table; here the DELETE entries are noted
first (they sit in the few manifests with `num_deleted_files > 0`) with their position in the read order,
and the ADD entries are then streamed one manifest at a time: an ADD is live unless a DELETE of the same
file comes after it. For the same reason a file deleted and added again (an ADD after its DELETE) stays
live, as in `merge_entries`. One case differs: a file ADDed twice with no DELETE between (which the
commit path refuses as DUPLICATE_FILE, and Paimon's own merge rejects) would be listed twice here.

Manifests are pruned with the manifest list's partition statistics (domain.manifest_pruning): a
manifest whose statistics exclude the requested value is never read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from paimon_format.manifest import FileIdentifier, FileKind, ManifestEntry


class _Ordered(Protocol):
    def __lt__(self, other: object, /) -> bool: ...


Position = tuple[int, int]
"""Where an entry sits in a snapshot's read order: (index of its manifest, index within the manifest)."""


class Deletions:
    """The DELETE entries of a snapshot, each file's latest one with its position in the read order."""

    def __init__(self) -> None:
        self._latest: dict[FileIdentifier, Position] = {}

    def __len__(self) -> int:
        return len(self._latest)

    def note(self, entry: ManifestEntry, position: Position) -> None:
        """Remember a DELETE entry (ADD entries are ignored)."""
        if entry.kind != FileKind.DELETE:
            return
        ident = entry.identifier
        known = self._latest.get(ident)
        if known is None or known < position:
            self._latest[ident] = position

    def cancels(self, entry: ManifestEntry, position: Position) -> bool:
        """Whether a DELETE after `position` removes the file this ADD entry adds."""
        deleted_at = self._latest.get(entry.identifier)
        return deleted_at is not None and deleted_at > position


def live_adds(
    positioned: Iterable[tuple[Position, ManifestEntry]], deletions: Deletions
) -> Iterator[ManifestEntry]:
    """The ADD entries no later DELETE cancels, in read order."""
    for position, entry in positioned:
        if entry.kind == FileKind.ADD and not deletions.cancels(entry, position):
            yield entry
