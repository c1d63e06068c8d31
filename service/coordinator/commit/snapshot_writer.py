"""One committable's snapshots, written on top of a table's state: check, manifests, snapshot.

Under the table's lock: the plan's entries are checked against the live files they can touch (the
index's slice; Paimon's conflict rules), the delta and changelog manifests are written, the base
manifests merged when Paimon's thresholds say so, the manifest lists written and the snapshot built
(domain.snapshot). The state and the slice advance with each snapshot, so a second snapshot of the
same committable, or the next member of the group, builds on it. Nothing here is
visible until the commit point records it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace

from coordinator.clock import Clock
from coordinator.commit.live_index import Delta, LiveIndex
from coordinator.commit.member import Built, Member
from coordinator.commit.table_state import TableState
from coordinator.domain.conflicts import check_base_snapshot, check_conflicts
from coordinator.domain.live_files import LiveFiles
from coordinator.domain.manifest_merge import merge_manifests
from coordinator.domain.plan import SnapshotPlan, plan_snapshots, with_live_metadata
from coordinator.domain.snapshot import ManifestLists, next_snapshot
from coordinator.usecases.tables import Table
from paimon_format.entry_encoding import encode_entries


def write_snapshots(
    table: Table,
    state: TableState,
    member: Member,
    built: Built,
    live_index: LiveIndex,
    overlay: Sequence[Delta],
    clock: Clock,
) -> None:
    """Add the member's snapshots to `built`, advancing `state` with each.

    `overlay` holds the snapshots the group built before this member, not yet in the index.

    Raises:
        Conflict: the committable does not apply on top of the state (its manifests stay to be
            discarded by the caller).
    """
    with member.phases.timed("conflictCheck"):
        check_base_snapshot(member.resolved.base_snapshot_id, state.snapshot_id)
        live = live_index.view(table, member.resolved, overlay, state.snapshot_id)
        plans = plan_snapshots(member.resolved, live, table.shape)
    for plan in plans:
        _write_snapshot(table, state, live, plan, member, built, clock)


def _write_snapshot(
    table: Table,
    state: TableState,
    live: LiveFiles,
    plan: SnapshotPlan,
    member: Member,
    built: Built,
    clock: Clock,
) -> None:
    shape = table.shape
    with member.phases.timed("conflictCheck"):
        plan = replace(plan, entries=with_live_metadata(plan.entries, live))
        check_conflicts(
            live,
            plan.entries,
            check_bucket_count=plan.check_bucket_count,
            decode_key=shape.decode_key if shape.has_primary_key else None,
        )
    with member.phases.timed("manifestWrite"):
        manifests = state.manifests
        base = merge_manifests(
            state.data_manifests, state.options, manifests.read, manifests.write, shape, manifests.concatenate
        )
        # Encoded once: the same records go into the delta manifest and the live-file index.
        records = encode_entries(plan.entries)
        delta = manifests.write(list(plan.entries), records) if plan.entries else []
        changelog = manifests.write(list(plan.changelog)) if plan.changelog else None
        lists = ManifestLists(
            base=manifests.write_list(base),
            delta=manifests.write_list(delta),
            changelog=manifests.write_list(changelog) if changelog is not None else None,
        )
        snapshot = next_snapshot(
            state.snapshot,
            plan,
            lists,
            member.resolved,
            schema_id=shape.schema.id,
            now_millis=clock.millis(),
            snapshot_uuid=str(uuid.uuid4()),
        )
        live.apply(plan.entries, snapshot.id)
        state.snapshot = snapshot
        state.data_manifests = base + delta
        built.add(snapshot, plan.entries, records)
