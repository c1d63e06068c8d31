"""The next snapshot of a table, built from the previous one and a planned change: no I/O, no clock."""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.domain.committable import ResolvedCommittable
from coordinator.domain.plan import SnapshotPlan, record_count_delta
from paimon_format.snapshot import Snapshot, carry_forward

WRITER_VERSION = "paimon-coordinator-0.1.0"


@dataclass(frozen=True)
class ManifestLists:
    """The manifest lists a snapshot points to, each as (file name, size in bytes)."""

    base: tuple[str, int]
    delta: tuple[str, int]
    changelog: tuple[str, int] | None = None


def next_snapshot(
    previous: Snapshot | None,
    plan: SnapshotPlan,
    lists: ManifestLists,
    committable: ResolvedCommittable,
    *,
    schema_id: int,
    now_millis: int,
    snapshot_uuid: str,
) -> Snapshot:
    """Snapshot N+1: record counts follow the plan's entries (which carry the live files' metadata for
    deletes), the watermark is the larger of the old and the committed one, and the index manifest,
    statistics and next row id carry over as Paimon's commit does."""
    delta_count = record_count_delta(plan.entries)
    changelog = lists.changelog
    return Snapshot(
        id=(previous.id if previous is not None else 0) + 1,
        schema_id=schema_id,
        base_manifest_list=lists.base[0],
        base_manifest_list_size=lists.base[1],
        delta_manifest_list=lists.delta[0],
        delta_manifest_list_size=lists.delta[1],
        changelog_manifest_list=changelog[0] if changelog else None,
        changelog_manifest_list_size=changelog[1] if changelog else None,
        changelog_record_count=record_count_delta(plan.changelog) if changelog else None,
        total_record_count=(previous.total_record_count if previous else 0) + delta_count,
        delta_record_count=delta_count,
        commit_user=committable.commit_user,
        commit_identifier=committable.identifier,
        commit_kind=plan.kind,
        time_millis=now_millis,
        **carry_forward(previous, schema_id=schema_id, watermark=committable.watermark),
        properties=dict(committable.properties) or None,
        writer_version=WRITER_VERSION,
        uuid=snapshot_uuid,
    )
