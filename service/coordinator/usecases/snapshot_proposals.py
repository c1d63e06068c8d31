"""A snapshot a Paimon engine finished itself and proposes through the REST catalog protocol.

In Paimon's REST protocol the client writes its data files, manifests and both manifest lists, then
POSTs the finished snapshot with the uuid of the snapshot it built on. Here that proposal is read and
validated before the table lock is taken (every rejection names its field, nothing is written): the
snapshot parses, belongs to this table, names a schema the table has and manifest lists that are on
storage. Its delta manifests become the entries the commit pipeline checks against the live files, as a
native committable's messages do, so one pipeline decides both (see commits and snapshot_acceptance).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from coordinator.domain.committable import ResolvedCommittable
from coordinator.errors import InvalidRequest, StorageUnavailable, TableNotFound
from coordinator.usecases.manifests import ManifestStore
from coordinator.usecases.tables import Table
from coordinator_client.format.manifest import ManifestEntry, ManifestFileMeta
from coordinator_client.format.snapshot import CommitKind, Snapshot

MAX_COMMIT_USER = 200
"""The history's commit_user column holds this many characters."""


@dataclass(frozen=True)
class SnapshotProposal:
    """`POST .../commit` as it arrived (Paimon's CommitTableRequest)."""

    table_uuid: str
    base_snapshot_uuid: str | None
    snapshot_json: dict[str, object]
    statistics: list[dict[str, object]]
    """Per-partition deltas the client computed; the coordinator counts from the manifests instead."""

    @property
    def commit_key(self) -> tuple[str, int]:
        """(commitUser, commitIdentifier) as sent, for the log line of an answer, even a refusal's."""
        identifier = self.snapshot_json.get("commitIdentifier")
        if not isinstance(identifier, int) or isinstance(identifier, bool):
            identifier = -1
        return str(self.snapshot_json.get("commitUser")), identifier


@dataclass(frozen=True)
class ProposedSnapshot:
    """A validated proposal: the snapshot, what it built on, and the manifests it points to."""

    snapshot: Snapshot
    base_snapshot_uuid: str | None
    base: list[ManifestFileMeta]
    delta: list[ManifestFileMeta]
    entries: list[ManifestEntry]
    """The delta manifests' entries: what the snapshot changes, checked under the lock."""


def read_proposal(
    proposal: SnapshotProposal, table: Table, manifests: ManifestStore
) -> tuple[ResolvedCommittable, ProposedSnapshot]:
    """Validate `proposal` for `table` and read its manifest lists and delta manifests.

    Raises:
        TableNotFound: `tableId` is not this table's uuid (it was dropped and created again).
        InvalidRequest: naming the field (`snapshot`, `snapshot.schemaId`, `snapshot.deltaManifestList`...).
        StorageUnavailable: the store failed while reading.
    """
    if proposal.table_uuid != table.uuid:
        raise TableNotFound(f"table {table.id} has uuid {table.uuid}, not {proposal.table_uuid}")
    try:
        snapshot = Snapshot.from_json(json.dumps(proposal.snapshot_json))
    except ValueError as error:
        raise InvalidRequest(f"not a Paimon snapshot: {error}", field="snapshot") from None
    _check_fields(snapshot, table)
    base = _read_list(manifests, snapshot.base_manifest_list, "snapshot.baseManifestList")
    delta = _read_list(manifests, snapshot.delta_manifest_list, "snapshot.deltaManifestList")
    entries: list[ManifestEntry] = []
    for meta in delta:
        try:
            entries += manifests.read(meta)
        except FileNotFoundError:
            raise InvalidRequest(
                f"manifest {meta.file_name} of the delta manifest list is not on storage",
                field="snapshot.deltaManifestList",
            ) from None
        except ValueError as error:
            raise InvalidRequest(
                f"manifest {meta.file_name} is not a Paimon manifest: {error}",
                field="snapshot.deltaManifestList",
            ) from None
    compact = snapshot.commit_kind == CommitKind.COMPACT
    resolved = ResolvedCommittable(
        commit_user=snapshot.commit_user,
        identifier=snapshot.commit_identifier,
        watermark=snapshot.watermark,
        properties=dict(snapshot.properties or {}),
        append=[] if compact else entries,
        compact=entries if compact else [],
    )
    return resolved, ProposedSnapshot(snapshot, proposal.base_snapshot_uuid, base, delta, entries)


def _check_fields(snapshot: Snapshot, table: Table) -> None:
    if snapshot.id < 1:
        raise InvalidRequest(f"snapshot id must be at least 1, got {snapshot.id}", field="snapshot.id")
    current = table.shape.schema.id
    if not 0 <= snapshot.schema_id <= current:
        raise InvalidRequest(
            f"schema {snapshot.schema_id} does not exist; the table's latest schema is {current}",
            field="snapshot.schemaId",
        )
    if not snapshot.commit_user or len(snapshot.commit_user) > MAX_COMMIT_USER:
        raise InvalidRequest(
            f"commitUser must have 1 to {MAX_COMMIT_USER} characters", field="snapshot.commitUser"
        )
    if snapshot.commit_kind == CommitKind.ANALYZE:
        raise InvalidRequest("ANALYZE snapshots are not committed here", field="snapshot.commitKind")


def _read_list(manifests: ManifestStore, name: str, field: str) -> list[ManifestFileMeta]:
    if not name or "/" in name or name.startswith("."):
        raise InvalidRequest(f"{name!r} is not a manifest list name", field=field)
    try:
        return manifests.read_list(name)
    except FileNotFoundError:
        raise InvalidRequest(f"manifest list {name} is not on storage", field=field) from None
    except StorageUnavailable:
        raise
    except ValueError as error:
        raise InvalidRequest(f"{name} is not a Paimon manifest list: {error}", field=field) from None
