"""A snapshot a Paimon engine finished itself and proposes through the REST catalog protocol.

In Paimon's REST protocol the client writes its data files, manifests and both manifest lists, then
POSTs the finished snapshot with the uuid of the snapshot it built on. Here that proposal is read and
validated before the table lock is taken (every rejection names its field, nothing is written): the
snapshot parses, belongs to this table, names a schema the table has, and every file it names is on
storage, fits the table and stays inside it (proposal_files; a path that leaves the table is also
audited, see path_refusals). Its delta manifests become the entries the commit pipeline checks against
the live files, as a native committable's messages do, so one pipeline decides both (see commits and
snapshot_acceptance).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from coordinator.commit.proposal_files import read_proposal_files
from coordinator.domain.committable import ResolvedCommittable
from coordinator.domain.proposed_entries import INT64
from coordinator.errors import InvalidRequest, PathOutsideTable, TableNotFound
from coordinator.usecases.manifests import ManifestStore
from coordinator.usecases.path_refusals import log_refusal
from coordinator.usecases.tables import Table
from paimon_format.manifest import ManifestEntry, ManifestFileMeta
from paimon_format.snapshot import CommitKind, Snapshot

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
        InvalidRequest: naming the field (`snapshot`, `snapshot.schemaId`, `snapshot.deltaManifestList`,
            `snapshot.deltaManifestList[0].entries[3].bucket`...).
        PathOutsideTable: a name that leaves the table (`...entries[3].fileName`); logged as well.
        StorageUnavailable: the store failed while reading.
    """
    if proposal.table_uuid != table.uuid:
        raise TableNotFound(f"table {table.id} has uuid {table.uuid}, not {proposal.table_uuid}")
    try:
        snapshot = Snapshot.from_json(json.dumps(proposal.snapshot_json))
    except ValueError as error:
        raise InvalidRequest(f"not a Paimon snapshot: {error}", field="snapshot") from None
    _check_fields(snapshot, table)
    try:
        files = read_proposal_files(snapshot, proposal.base_snapshot_uuid, table, manifests)
    except PathOutsideTable as refused:
        log_refusal(table.id, refused, door="rest-commit", actor=snapshot.commit_user)
        raise
    entries = files.entries
    compact = snapshot.commit_kind == CommitKind.COMPACT
    resolved = ResolvedCommittable(
        commit_user=snapshot.commit_user,
        identifier=snapshot.commit_identifier,
        watermark=snapshot.watermark,
        properties=dict(snapshot.properties or {}),
        append=[] if compact else entries,
        compact=entries if compact else [],
    )
    return resolved, ProposedSnapshot(snapshot, proposal.base_snapshot_uuid, files.base, files.delta, entries)


def _check_fields(snapshot: Snapshot, table: Table) -> None:
    if snapshot.id < 1:
        raise InvalidRequest(f"snapshot id must be at least 1, got {snapshot.id}", field="snapshot.id")
    current = table.shape.schema.id
    if not 0 <= snapshot.schema_id <= current:
        raise InvalidRequest(
            f"schema {snapshot.schema_id} does not exist; the table's latest schema is {current}",
            field="snapshot.schemaId",
        )
    user = snapshot.commit_user
    if not user or len(user) > MAX_COMMIT_USER or any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in user):
        raise InvalidRequest(
            f"commitUser must have 1 to {MAX_COMMIT_USER} characters, none of them control characters",
            field="snapshot.commitUser",
        )
    for f in dataclasses.fields(snapshot):
        value = getattr(snapshot, f.name)
        if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:  # BIGINT columns, Java's long
            raise InvalidRequest(f"{value} does not fit a 64-bit integer", field=f"snapshot.{_camel(f.name)}")
    if snapshot.total_record_count < 0:
        raise InvalidRequest("totalRecordCount cannot be negative", field="snapshot.totalRecordCount")
    if snapshot.commit_kind == CommitKind.ANALYZE:
        raise InvalidRequest("ANALYZE snapshots are not committed here", field="snapshot.commitKind")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
