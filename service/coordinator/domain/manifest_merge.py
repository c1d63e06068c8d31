"""Paimon's manifest merge (ManifestFileMerger, legacy mode), so the base manifest list stays bounded.

Full compaction when the manifests that must change (those with deletes, or smaller than the target
size) add up to `manifest.full-compaction-threshold-size`: every manifest touching a deleted file is
rewritten with ADD/DELETE pairs cancelled. Otherwise a minor merge: walk the manifests in order, merge
each run that reaches the target size, and merge the tail only if at least `manifest.merge-min-count`
manifests are left. Reading and writing manifests is done by the caller's callbacks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from coordinator.domain.live_files import merge_entries
from coordinator_client.format.manifest import FileKind, ManifestEntry, ManifestFileMeta
from coordinator_client.format.memory_size import MIB, parse_memory_size

ReadManifest = Callable[[ManifestFileMeta], list[ManifestEntry]]
WriteManifests = Callable[[list[ManifestEntry]], list[ManifestFileMeta]]


@dataclass(frozen=True)
class MergeOptions:
    target_file_size: int = 8 * MIB
    merge_min_count: int = 30
    full_compaction_threshold_size: int = 16 * MIB

    @classmethod
    def from_table_options(cls, options: Mapping[str, str]) -> MergeOptions:
        """Read Paimon's option names, with Paimon's defaults."""
        return cls(
            target_file_size=parse_memory_size(options.get("manifest.target-file-size", "8 mb")),
            merge_min_count=int(options.get("manifest.merge-min-count", "30")),
            full_compaction_threshold_size=parse_memory_size(
                options.get("manifest.full-compaction-threshold-size", "16 mb")
            ),
        )


def merge_manifests(
    manifests: Sequence[ManifestFileMeta],
    options: MergeOptions,
    read: ReadManifest,
    write: WriteManifests,
) -> list[ManifestFileMeta]:
    """The base manifest list for the next snapshot, merged where Paimon's thresholds say so."""
    full = _try_full_compaction(manifests, options, read, write)
    if full is not None:
        return full
    return _minor_compaction(manifests, options, read, write)


def _must_change(meta: ManifestFileMeta, options: MergeOptions) -> bool:
    return meta.num_deleted_files > 0 or meta.file_size < options.target_file_size


def _minor_compaction(
    manifests: Sequence[ManifestFileMeta], options: MergeOptions, read: ReadManifest, write: WriteManifests
) -> list[ManifestFileMeta]:
    result: list[ManifestFileMeta] = []
    candidates: list[ManifestFileMeta] = []
    total = 0
    for meta in manifests:
        total += meta.file_size
        candidates.append(meta)
        if total >= options.target_file_size:
            result.extend(_merge_group(candidates, read, write))
            candidates, total = [], 0
    if len(candidates) >= options.merge_min_count:
        result.extend(_merge_group(candidates, read, write))
    else:
        result.extend(candidates)
    return result


def _merge_group(
    group: Sequence[ManifestFileMeta], read: ReadManifest, write: WriteManifests
) -> list[ManifestFileMeta]:
    if len(group) == 1:
        return [group[0]]
    merged = merge_entries(e for meta in group for e in read(meta))
    return write(merged) if merged else []


def _try_full_compaction(
    manifests: Sequence[ManifestFileMeta], options: MergeOptions, read: ReadManifest, write: WriteManifests
) -> list[ManifestFileMeta] | None:
    changing = sum(m.file_size for m in manifests if _must_change(m, options))
    if changing < options.full_compaction_threshold_size:
        return None
    deleted = {
        e.identifier
        for m in manifests
        if m.num_deleted_files > 0
        for e in read(m)
        if e.kind == FileKind.DELETE
    }
    kept: list[ManifestFileMeta] = []
    rewrite: list[ManifestFileMeta] = []
    for meta in manifests:
        # A large manifest without deletes whose files are all still live needs no rewrite.
        if not _must_change(meta, options) and not any(e.identifier in deleted for e in read(meta)):
            kept.append(meta)
        else:
            rewrite.append(meta)
    survivors = [
        e for m in rewrite for e in read(m) if e.kind == FileKind.ADD and e.identifier not in deleted
    ]
    return kept + (write(survivors) if survivors else [])
