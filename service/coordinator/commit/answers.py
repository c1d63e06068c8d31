"""The answers of decided commits: a CommitResponse per committed member, the wire form of conflicts.

Every member's answer arrives through its future once its commit is published (the finish runs beside
the answers, usecases/hold_ends.py); a member left for
the next group gets none yet.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine

from coordinator.commit.member import Committed, Failed, Refused, Rejected, Replayed, TableDecisions
from coordinator.db import repositories as repo
from coordinator.db.engine import read_only
from coordinator.domain.conflicts import Conflict
from coordinator.errors import CommitConflict
from coordinator.usecases.table_hold import unplaced_conflict
from coordinator.usecases.tables import Table
from coordinator_client.models import CommitResponse, ConflictModel, SnapshotRef, WinningSnapshot
from paimon_format.snapshot import Snapshot


def answer(decided: TableDecisions) -> None:
    """Every member that was decided gets its answer."""
    committed = decided.committed
    for decision in decided.decisions:
        future = decision.member.answer
        if isinstance(decision, Committed):
            future.set_result(
                CommitResponse(
                    snapshots=refs(decision.built.snapshots),
                    deduplicated=False,
                    timings=decision.member.phases.timings,
                    group_size=len(committed),
                )
            )
        elif isinstance(decision, Rejected):
            future.set_exception(CommitConflict(decision.conflict))
        elif isinstance(decision, Replayed):
            if isinstance(decision.answer, CommitConflict):
                future.set_exception(decision.answer)
            else:
                future.set_result(decision.answer)
        elif isinstance(decision, (Refused, Failed)):
            future.set_exception(decision.error)


def refs(snapshots: Sequence[Snapshot]) -> list[SnapshotRef]:
    return [SnapshotRef(id=s.id, commit_kind=s.commit_kind.value) for s in snapshots]


def conflict_model(
    engine: Engine, table: Table, conflict: Conflict, built: Sequence[Snapshot] = ()
) -> ConflictModel:
    """The wire form of a conflict; the winning snapshot may be one the same group just built."""
    partition = table.shape.partition_json(conflict.partition) if conflict.partition is not None else None
    return unplaced_conflict(conflict).model_copy(
        update={
            "partition": partition,
            "winning_snapshot": _winner(engine, table, conflict.winning_snapshot_id, built),
        }
    )


def _winner(
    engine: Engine, table: Table, winning_id: int | None, built: Sequence[Snapshot]
) -> WinningSnapshot | None:
    if not winning_id:
        return None
    for snapshot in built:
        if snapshot.id == winning_id:
            return WinningSnapshot(
                id=snapshot.id, commit_user=snapshot.commit_user, commit_kind=snapshot.commit_kind.value
            )
    with read_only(engine) as conn:
        stored = repo.get_snapshot(conn, table.id, winning_id)
    if stored is None:
        return None
    return WinningSnapshot(
        id=stored.snapshot_id, commit_user=stored.commit_user, commit_kind=stored.commit_kind
    )
