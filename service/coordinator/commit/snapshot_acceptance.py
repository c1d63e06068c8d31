"""A proposed snapshot (Paimon's REST protocol) decided on top of a table's state, under its lock.

The proposal's base must still be the table's head: compare-and-set on the head's uuid (every snapshot
the coordinator writes has one), or on the id alone for a client or a head without one. A miss is a
retryable BASE_SNAPSHOT_MOVED, which the protocol answers `success: false`: the client rebases and
proposes again. On a hit the coordinator still runs its own conflict rules over the proposal's delta
against the live files (deleted files live, nothing added twice, bucket counts, level key ranges), so a
faulty client cannot publish a snapshot that breaks the table, and checks that the base manifest list
holds as many live files as the head: a base that lost manifests would silently drop rows.

pypaimon never merges manifests: its base list is every manifest of the head, one more per commit. When
Paimon's merge thresholds say so, the coordinator follows an accepted proposal with a snapshot of its own
in the same commit point: an APPEND with an empty delta whose base list is the merged manifests (not a
COMPACT, which Paimon writers may roll back on a conflict). So a table written only through REST stays
as cheap to read and to commit to as one written natively.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence

from coordinator.clock import Clock
from coordinator.commit.live_index import Delta, LiveIndex
from coordinator.commit.member import Built, Member
from coordinator.commit.snapshot_proposals import ProposedSnapshot
from coordinator.commit.table_state import TableState
from coordinator.domain.conflicts import Conflict, check_compare_and_set, check_conflicts
from coordinator.domain.manifest_merge import merge_manifests
from coordinator.domain.snapshot import WRITER_VERSION
from coordinator.errors import InvalidRequest
from coordinator.usecases.tables import Table
from paimon_format.manifest import FileKind, ManifestFileMeta
from paimon_format.snapshot import CommitKind, Snapshot, carry_forward

REBASE_APPENDS = "coordinator.rebase-appends"
"""Table option: when `true`, a proposed APPEND whose base moved is put on top of the head by the
coordinator (see `rebasable`) instead of being answered `success: false`."""

MANIFEST_MERGE_USER = "paimon-coordinator-manifest-merge"
"""commitUser of the snapshots that only merge the manifests of proposed snapshots."""


def accept_proposal(
    table: Table,
    state: TableState,
    member: Member,
    built: Built,
    live_index: LiveIndex,
    overlay: Sequence[Delta],
    clock: Clock,
) -> None:
    """Append the proposal's snapshot (and a manifest merge when due) to `built`, advancing
    `state`.

    Raises:
        Conflict: BASE_SNAPSHOT_MOVED (retryable: the client rebases) or a definite conflict of its delta.
        InvalidRequest: its base manifest list does not hold the head's live files.
    """
    proposed = member.proposed
    assert proposed is not None
    snapshot = proposed.snapshot
    with member.phases.timed("conflictCheck"):
        try:
            check_compare_and_set(state.snapshot, snapshot.id, proposed.base_snapshot_uuid)
            rebase = False
        except Conflict:
            if not rebases_appends(table.shape.schema.options) or not rebasable(state.snapshot, proposed):
                raise
            rebase = True  # the table asks for it, and the client's retry would change nothing else
        live = live_index.view(table, member.resolved, overlay, state.snapshot_id)
        check_conflicts(
            live,
            proposed.entries,
            check_bucket_count=snapshot.commit_kind != CommitKind.OVERWRITE,
            decode_key=table.shape.decode_key if table.shape.has_primary_key else None,
        )
        if not rebase:
            _check_base_holds_head(state, proposed)
    base = proposed.base
    if rebase:
        with member.phases.timed("manifestWrite"):
            snapshot, base = _rebased(table, state, proposed)
    live.apply(proposed.entries, snapshot.id)
    state.snapshot = snapshot
    state.data_manifests = base + proposed.delta
    built.add(snapshot, proposed.entries)
    with member.phases.timed("manifestWrite"):
        _merge_when_due(table, state, built, clock)


def rebases_appends(options: Mapping[str, str]) -> bool:
    """Whether the table asks the coordinator to rebase appends whose base moved (REBASE_APPENDS)."""
    return options.get(REBASE_APPENDS, "false").strip().lower() == "true"


def rebasable(head: Snapshot | None, proposed: ProposedSnapshot) -> bool:
    """Whether putting the proposal on top of `head` is exactly what the client's own retry would do:
    an APPEND that only adds files, with the head's index manifest and schema, and no row tracking
    (whose ids the client assigns from its base). Its data files and delta manifests stay as written;
    only the base list and the counters that follow the head change."""
    snapshot = proposed.snapshot
    return (
        snapshot.commit_kind == CommitKind.APPEND
        and all(e.kind == FileKind.ADD for e in proposed.entries)
        and snapshot.next_row_id is None
        and (head is None or head.next_row_id is None)
        and snapshot.index_manifest == (head.index_manifest if head is not None else None)
        and (head is None or snapshot.schema_id == head.schema_id)
    )


def _rebased(
    table: Table, state: TableState, proposed: ProposedSnapshot
) -> tuple[Snapshot, list[ManifestFileMeta]]:
    """The proposal as the next snapshot on top of the state: the head's manifests (merged as Paimon's
    thresholds say) as its base list, its own delta, its counters moved onto the head's."""
    head = state.snapshot
    base = _merged(table, state)
    name, size = state.manifests.write_list(base)
    snapshot = proposed.snapshot
    carried = carry_forward(head, schema_id=snapshot.schema_id, watermark=snapshot.watermark)
    rebased = dataclasses.replace(
        snapshot,
        id=(head.id if head is not None else 0) + 1,
        base_manifest_list=name,
        base_manifest_list_size=size,
        total_record_count=(head.total_record_count if head is not None else 0) + snapshot.delta_record_count,
        watermark=carried["watermark"],
        statistics=carried["statistics"],
    )
    return rebased, base


def _check_base_holds_head(state: TableState, proposed: ProposedSnapshot) -> None:
    base = proposed.base
    held = sum(m.num_added_files - m.num_deleted_files for m in base)
    live = sum(m.num_added_files - m.num_deleted_files for m in state.data_manifests)
    if held != live:
        raise InvalidRequest(
            f"the base manifest list holds {held} live data files, but snapshot {state.snapshot_id} "
            f"of the table has {live}: it must list every manifest of the latest snapshot",
            field="snapshot.baseManifestList",
        )


def _merge_when_due(table: Table, state: TableState, built: Built, clock: Clock) -> None:
    manifests = state.manifests
    merged = _merged(table, state)
    if [m.file_name for m in merged] == [m.file_name for m in state.data_manifests]:
        return
    previous = state.snapshot
    assert previous is not None
    base = manifests.write_list(merged)
    delta = manifests.write_list([])
    merge = Snapshot(
        id=previous.id + 1,
        schema_id=previous.schema_id,
        base_manifest_list=base[0],
        base_manifest_list_size=base[1],
        delta_manifest_list=delta[0],
        delta_manifest_list_size=delta[1],
        total_record_count=previous.total_record_count,
        delta_record_count=0,
        commit_user=MANIFEST_MERGE_USER,
        commit_identifier=previous.id + 1,
        commit_kind=CommitKind.APPEND,
        time_millis=clock.millis(),
        **carry_forward(previous, schema_id=previous.schema_id),
        writer_version=WRITER_VERSION,
        uuid=str(uuid.uuid4()),
    )
    state.snapshot = merge
    state.data_manifests = merged
    built.add(merge, [])


def _merged(table: Table, state: TableState) -> list[ManifestFileMeta]:
    """The state's manifests merged as Paimon's thresholds say (the same list when nothing is due)."""
    manifests = state.manifests
    return merge_manifests(
        state.data_manifests,
        state.options,
        manifests.read,
        manifests.write,
        table.shape,
        manifests.concatenate,
    )
