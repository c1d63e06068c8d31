"""Paimon's manifest merge (ManifestFileMerger), so the base manifest list stays bounded.

Manifests are written rolled at `manifest.target-file-size` (each one but the last reaches it), so a
manifest below the target is genuinely small. Full compaction when the manifests that must change
(those with deletes, or small ones) add up to `manifest.full-compaction-threshold-size`: only the
manifests whose partition statistics and bucket range may hold a deleted file are read, and only those
that do hold one are rewritten, with ADD/DELETE pairs cancelled. Otherwise a minor merge: walk the
manifests that must change in order, merge each run that reaches the target size, and merge the tail
only if at least `manifest.merge-min-count` are left. Unlike Paimon's minor merge, a full-size manifest
of ADDs lying between small ones is passed over instead of rewritten with them. So an append that
deletes nothing never reads a full-size manifest. The caller's callbacks read and write manifests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from coordinator.domain.live_files import merge_entries
from coordinator.domain.manifest_pruning import FileKeys
from coordinator.domain.table_schema import TableShape
from paimon_format.manifest import FileKind, ManifestEntry, ManifestFileMeta
from paimon_format.memory_size import MIB, parse_memory_size

ReadManifest = Callable[[ManifestFileMeta], list[ManifestEntry]]
WriteManifests = Callable[[list[ManifestEntry]], list[ManifestFileMeta]]
Concatenate = Callable[[Sequence[ManifestFileMeta]], list[ManifestFileMeta] | None]
"""Join manifests of ADDs without reading their entries; None when it cannot."""


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
    shape: TableShape,
    concatenate: Concatenate | None = None,
) -> list[ManifestFileMeta]:
    """The base manifest list for the next snapshot, merged where Paimon's thresholds say so.

    `write` rolls its output at the target size; `shape` reads the partition statistics; a minor
    merge of manifests without DELETEs (nothing to cancel) uses `concatenate` when given.
    """
    full = _try_full_compaction(manifests, options, read, write, shape)
    if full is not None:
        return full
    return _minor_compaction(manifests, options, read, write, concatenate)


def _must_change(meta: ManifestFileMeta, options: MergeOptions) -> bool:
    return meta.num_deleted_files > 0 or meta.file_size < options.target_file_size


def _minor_compaction(
    manifests: Sequence[ManifestFileMeta],
    options: MergeOptions,
    read: ReadManifest,
    write: WriteManifests,
    concatenate: Concatenate | None,
) -> list[ManifestFileMeta]:
    # Only manifests that must change are merged; a full-size manifest of ADDs stays where it is, so
    # appends never rewrite one. Each merged run lands where its last member was: its entries only move
    # later past manifests of ADDs, which keeps every DELETE after the ADD it cancels.
    result: list[ManifestFileMeta] = []
    candidates: list[ManifestFileMeta] = []
    total = 0
    for meta in manifests:
        if not _must_change(meta, options):
            result.append(meta)
            continue
        total += meta.file_size
        candidates.append(meta)
        if total >= options.target_file_size:
            result.extend(_merge_group(candidates, read, write, concatenate))
            candidates, total = [], 0
    if len(candidates) >= options.merge_min_count:
        result.extend(_merge_group(candidates, read, write, concatenate))
    else:
        result.extend(candidates)
    return result


def _merge_group(
    group: Sequence[ManifestFileMeta],
    read: ReadManifest,
    write: WriteManifests,
    concatenate: Concatenate | None = None,
) -> list[ManifestFileMeta]:
    if len(group) == 1:
        return [group[0]]
    if concatenate is not None and all(m.num_deleted_files == 0 for m in group):
        joined = concatenate(group)
        if joined is not None:
            return joined
    merged = merge_entries(e for meta in group for e in read(meta))
    return write(merged) if merged else []


def _try_full_compaction(
    manifests: Sequence[ManifestFileMeta],
    options: MergeOptions,
    read: ReadManifest,
    write: WriteManifests,
    shape: TableShape,
) -> list[ManifestFileMeta] | None:
    must_change = [m for m in manifests if _must_change(m, options)]
    if sum(m.file_size for m in must_change) < options.full_compaction_threshold_size:
        return None
    with_deletes = {m.file_name: read(m) for m in must_change if m.num_deleted_files > 0}
    deletes = [e for entries in with_deletes.values() for e in entries if e.kind == FileKind.DELETE]
    deleted = {e.identifier for e in deletes}
    touched = FileKeys(((e.partition, e.bucket) for e in deletes), shape)
    changing = {m.file_name for m in must_change}
    kept: list[ManifestFileMeta] = []
    survivors: list[ManifestEntry] = []
    for meta in manifests:
        # A full-size manifest without deletes is read only if its statistics admit a deleted file,
        # and rewritten only if it really holds one.
        if meta.file_name not in changing and not (touched and touched.may_be_in(meta)):
            kept.append(meta)
            continue
        entries = with_deletes.get(meta.file_name)
        if entries is None:
            entries = read(meta)
        if meta.file_name in changing or any(e.identifier in deleted for e in entries):
            survivors.extend(e for e in entries if e.kind == FileKind.ADD and e.identifier not in deleted)
        else:
            kept.append(meta)
    return kept + (write(survivors) if survivors else [])
