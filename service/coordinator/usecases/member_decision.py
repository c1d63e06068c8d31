"""One member of a commit group decided on top of the table's state: where the doors part.

A native committable gets its snapshots written (snapshot_writer); a snapshot a Paimon engine proposed
through the REST protocol is accepted as it is (snapshot_acceptance). Either way the member ends
committed, rejected with its conflict, or refused, and the manifests written for a member that does not
stand are deleted again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Engine

from coordinator.clock import Clock
from coordinator.domain.conflicts import Conflict
from coordinator.errors import InvalidRequest
from coordinator.usecases.commit_queue import PendingCommit
from coordinator.usecases.commit_records import GroupResult, conflict_model
from coordinator.usecases.live_index import LiveIndex
from coordinator.usecases.snapshot_acceptance import accept_proposal
from coordinator.usecases.snapshot_writer import write_snapshots
from coordinator.usecases.table_state import TableState
from coordinator.usecases.tables import Table


@dataclass(frozen=True)
class Decider:
    """What deciding a member needs besides the member: the database (for a conflict's winner), the
    live-file index and the clock."""

    engine: Engine
    live_index: LiveIndex
    clock: Clock


def decide_member(
    decider: Decider,
    table: Table,
    state: TableState,
    member: PendingCommit,
    group: Sequence[PendingCommit],
    result: GroupResult,
) -> bool:
    """Build one member's snapshots on top of `state`, or reject it; False when the rejection came after
    part of it had advanced the state (the rest of the group then waits for a rebuilt state)."""
    mark = state.manifests.checkpoint()
    overlay = [built for m in result.committed for built in m.built()]
    try:
        if member.proposed is not None:
            accept_proposal(table, state, member, decider.live_index, overlay, decider.clock)
        else:
            write_snapshots(table, state, member, decider.live_index, overlay, decider.clock)
    except InvalidRequest as invalid:  # a proposal whose base lost manifests: nothing was built
        state.manifests.discard_since(mark)
        result.invalid.append((member, invalid))
        return True
    except Conflict as conflict:
        state.manifests.discard_since(mark)
        built = [s for m in group for s in m.snapshots]
        result.rejected.append((member, conflict_model(decider.engine, table, conflict, built)))
        if member.snapshots:
            member.snapshots.clear()
            return False
        return True
    result.committed.append(member)
    return True
