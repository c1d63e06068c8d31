"""Every file a proposed snapshot (Paimon's REST protocol) names, read and checked before the lock.

A REST writer wrote its manifests itself, so nothing in them has been checked: each name, count and
layout the coordinator will read (domain/proposed_entries) and every name it will join onto a folder of
the table (domain/table_paths) is checked here, and a refusal names the entry where the writer finds it:

    snapshot.baseManifestList / deltaManifestList / changelogManifestList   the list's own name
    snapshot.deltaManifestList[i].fileName                                   the i-th manifest of the list
    snapshot.deltaManifestList[i].entries[j].fileName                        its j-th entry (from 0)
    snapshot.indexManifest.entries[j].fileName                               an index file
    snapshot.statistics                                                      the statistics file

What is read: both manifest lists and the changelog list, the delta and changelog manifests (this
commit's), and of the base list only the manifests that the snapshot it says it builds on does not
have (a Java writer merges manifests itself; pypaimon's base list is the head's, which were checked when
they were committed). So a commit reads what is new in it, not the whole table. When that snapshot
cannot be trusted (not on storage, another uuid), every base manifest is read. The index manifest is
read when it is not the base's.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import fastavro

from coordinator.domain.proposed_entries import EntryRules
from coordinator.domain.table_paths import check_name, external_problem, inside, with_naming
from coordinator.errors import InvalidRequest, PathOutsideTable, StorageUnavailable
from coordinator.usecases.manifests import ManifestStore
from coordinator.usecases.tables import Table
from paimon_format.manifest import ManifestEntry, ManifestFileMeta
from paimon_format.snapshot import Snapshot


@dataclass(frozen=True)
class ProposalFiles:
    """What a proposal's manifest lists hold, every file in them checked."""

    base: list[ManifestFileMeta]
    delta: list[ManifestFileMeta]
    entries: list[ManifestEntry]
    """The delta manifests' entries: what the snapshot changes."""


def read_proposal_files(
    snapshot: Snapshot, base_snapshot_uuid: str | None, table: Table, manifests: ManifestStore
) -> ProposalFiles:
    """Read and check every file `snapshot` names (see the module docstring).

    Raises:
        InvalidRequest, PathOutsideTable: naming the field.
        StorageUnavailable: the store failed while reading.
    """
    reader = _Reader(table, manifests, EntryRules.of(table.shape))
    trusted = reader.trusted_base(snapshot, base_snapshot_uuid)
    if snapshot.statistics is not None:
        check_name(snapshot.statistics, "snapshot.statistics", "statistics file")
    base = reader.metas(snapshot.base_manifest_list, "snapshot.baseManifestList")
    for i, meta in enumerate(base):
        if trusted is None or meta.file_name not in trusted.manifests:
            reader.entries(meta, f"snapshot.baseManifestList[{i}]")
    delta = reader.metas(snapshot.delta_manifest_list, "snapshot.deltaManifestList")
    entries = [
        e for i, meta in enumerate(delta) for e in reader.entries(meta, f"snapshot.deltaManifestList[{i}]")
    ]
    if snapshot.changelog_manifest_list is not None:
        changelog = reader.metas(snapshot.changelog_manifest_list, "snapshot.changelogManifestList")
        for i, meta in enumerate(changelog):
            reader.entries(meta, f"snapshot.changelogManifestList[{i}]")
    if snapshot.index_manifest is not None and (
        trusted is None or snapshot.index_manifest != trusted.index_manifest
    ):
        reader.index_manifest(snapshot.index_manifest)
    return ProposalFiles(base, delta, entries)


@dataclass(frozen=True)
class _Trusted:
    """The snapshot a proposal builds on, as published: its manifests were checked when committed."""

    manifests: frozenset[str]
    index_manifest: str | None


class _Reader:
    def __init__(self, table: Table, manifests: ManifestStore, rules: EntryRules) -> None:
        self._table = table
        self._manifests = manifests
        self._rules = rules

    def trusted_base(self, snapshot: Snapshot, base_snapshot_uuid: str | None) -> _Trusted | None:
        """The published snapshot the proposal says it builds on, when the uuids agree: the commit's
        compare-and-set then holds only if that snapshot is still the head."""
        if snapshot.id < 2 or base_snapshot_uuid is None:
            return None
        base = self._manifests.published(snapshot.id - 1)
        if base is None or base.uuid != base_snapshot_uuid:
            return None
        try:
            names = frozenset(m.file_name for m in self._manifests.data_manifests(base))
        except (FileNotFoundError, ValueError, PathOutsideTable):  # then nothing of it is trusted
            return None
        return _Trusted(names, base.index_manifest)

    def metas(self, name: str, field: str) -> list[ManifestFileMeta]:
        """A manifest list's records, each checked."""
        check_name(name, field, "manifest list")
        try:
            metas = self._manifests.read_list(name)
        except FileNotFoundError:
            raise InvalidRequest(f"manifest list {name} is not on storage", field=field) from None
        except StorageUnavailable:
            raise
        except ValueError as error:
            raise InvalidRequest(f"{name} is not a Paimon manifest list: {error}", field=field) from None
        for i, meta in enumerate(metas):
            self._rules.check_meta(meta, f"{field}[{i}]")
        return metas

    def entries(self, meta: ManifestFileMeta, where: str) -> list[ManifestEntry]:
        """A manifest's entries, each checked (`meta` was checked with its list)."""
        try:
            entries = self._manifests.read(meta)
        except FileNotFoundError:
            raise InvalidRequest(
                f"{where}.fileName: manifest {meta.file_name} is not on storage", field=f"{where}.fileName"
            ) from None
        except StorageUnavailable:
            raise
        except ValueError as error:
            raise InvalidRequest(
                f"{where}.fileName: manifest {meta.file_name} is not a Paimon manifest: {error}",
                field=f"{where}.fileName",
            ) from None
        self._rules.check_entries(entries, meta, where)
        return entries

    def index_manifest(self, name: str) -> None:
        """The index files (deletion vectors, hash indexes) an index manifest names stay in the table:
        bare names in `index/`, or external paths inside the table's folder or its external roots."""
        field = "snapshot.indexManifest"
        check_name(name, field, "index manifest")
        try:
            records = list(_records(self._manifests.read_bytes(name)))
        except FileNotFoundError:
            raise InvalidRequest(f"index manifest {name} is not on storage", field=field) from None
        for j, record in enumerate(records):
            where = f"{field}.entries[{j}]"
            check_name(record.get("_FILE_NAME"), f"{where}.fileName", "index file")
            external = record.get("_EXTERNAL_PATH")
            if external is not None and not self._index_path_allowed(external):
                problem = external_problem(external, self._rules.roots) or "outside the table"
                raise PathOutsideTable(
                    with_naming(f"{where}.externalPath: external path refused: {problem}", where),
                    field=f"{where}.externalPath",
                )
            ranges = record.get("_DELETIONS_VECTORS_RANGES") or []
            if not isinstance(ranges, list):
                raise InvalidRequest(
                    f"{where}.deletionVectorsRanges must be a list", field=f"{where}.deletionVectorsRanges"
                )
            for k, dv in enumerate(ranges):
                data_file = dv.get("f0") if isinstance(dv, Mapping) else None
                check_name(data_file, f"{where}.deletionVectorsRanges[{k}].dataFileName", "data file")

    def _index_path_allowed(self, path: object) -> bool:
        # pypaimon records some index files by their path inside the table (floating-point partitions
        # that Java spells differently), so the table's folder is allowed beside the external roots.
        if not isinstance(path, str):
            return False
        return inside(self._table.layout.root, path) or external_problem(path, self._rules.roots) is None


def _records(data: bytes) -> Iterator[Mapping[str, Any]]:
    """The records of an Avro container (an index manifest), as mappings.

    Raises:
        InvalidRequest: the bytes are not an Avro container of records.
    """
    try:
        records = list(fastavro.reader(io.BytesIO(data)))
    except Exception as error:  # corrupt bytes surface as many types (EOFError, struct errors, codecs)
        raise InvalidRequest(
            f"the index manifest is not Avro: {error}", field="snapshot.indexManifest"
        ) from None
    for record in records:
        if not isinstance(record, Mapping):
            raise InvalidRequest(
                "the index manifest's records are not records", field="snapshot.indexManifest"
            )
        yield record
