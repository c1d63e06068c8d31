"""Deciding a table's members under its lock, one after another on top of its state.

Each member is first looked up in the record (a resend is answered from it, a reused name refused), then
resolved against the table as it is now, then built: a native committable gets its snapshots written
(snapshot_writer), a snapshot a Paimon engine proposed through the REST protocol is accepted as it is
(snapshot_acceptance). Every member ends in a Decision value; the manifests written for a member that
does not stand are deleted again at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Engine

from coordinator.clock import Clock
from coordinator.commit.answers import conflict_model
from coordinator.commit.live_index import Delta, LiveIndex
from coordinator.commit.member import Built, Committed, Decision, Later, Member, Refused, Rejected, Replayed
from coordinator.commit.resends import Found, record_of, recorded_answer
from coordinator.commit.snapshot_acceptance import accept_proposal
from coordinator.commit.snapshot_writer import write_snapshots
from coordinator.commit.table_state import TableState
from coordinator.db import repositories as repo
from coordinator.domain.conflicts import Conflict
from coordinator.errors import InvalidRequest
from coordinator.usecases.table_hold import Hold
from coordinator.usecases.tables import Table


@dataclass(frozen=True)
class Decider:
    """What deciding needs besides the members: the database (records, a conflict's winner), the
    live-file index and the clock."""

    engine: Engine
    live_index: LiveIndex
    clock: Clock

    def decide_all(
        self,
        table: Table,
        context: repo.GroupContext,
        state: TableState,
        members: Sequence[Member],
        hold: Hold,
    ) -> list[Decision]:
        """Every member of one table, in order, on top of `state` (which advances with each one built)."""
        with self.live_index.group(table, [m.resolved for m in members]):
            decisions: list[Decision] = []
            claimed: set[repo.RecordKey | str] = set()
            for index, member in enumerate(members):
                found = record_of(self.engine, table.id, context, member, state.snapshot_id)
                if found is not None and member.transaction and found.stored.outcome != "committed":
                    found = None  # a transaction records no rejection: a rejected record is another commit's
                decision = (
                    _from_record(member, found) or self._refused(table, member) or _later(member, claimed)
                )
                if decision is None:
                    hold.check_alive(table.id)
                    # A member whose commit's other kind is recorded joins that row (see resends.Relation).
                    extends = found.stored.id if found is not None else None
                    decision = self.decide(table, state, member, decisions, extends=extends)
                decisions.append(decision)
                if isinstance(decision, Rejected) and decision.advanced:
                    decisions.extend(Later(m) for m in members[index + 1 :])
                    break
            return decisions

    def _refused(self, table: Table, member: Member) -> Refused | None:
        """Refused when the member is not valid for the table as it is now (resolved again if it changed)."""
        try:
            member.resolve_for(table, now_millis=self.clock.local_millis())
        except InvalidRequest as invalid:
            return Refused(member, invalid)
        return None

    def decide(
        self,
        table: Table,
        state: TableState,
        member: Member,
        before: Sequence[Decision],
        *,
        extends: int | None,
    ) -> Decision:
        """Build one member's snapshots on top of `state`, or reject it. `before` are the decisions of
        the members before it, whose snapshots are not in the live-file index yet."""
        mark = state.manifests.checkpoint()
        built_before = [d.built for d in before if isinstance(d, Committed)]
        overlay: list[Delta] = [delta for built in built_before for delta in built.in_order()]
        built = Built()
        try:
            if member.proposed is not None:
                accept_proposal(table, state, member, built, self.live_index, overlay, self.clock)
            else:
                write_snapshots(table, state, member, built, self.live_index, overlay, self.clock)
        except InvalidRequest as invalid:  # a proposal whose base lost manifests: nothing was built
            state.manifests.discard_since(mark)
            return Refused(member, invalid)
        except Conflict as conflict:
            state.manifests.discard_since(mark)
            winners = [s for b in [*built_before, built] for s in b.snapshots]
            model = conflict_model(self.engine, table, conflict, winners)
            return Rejected(member, model, advanced=bool(built.snapshots))
        return Committed(member, built, extends)


def _from_record(member: Member, found: Found | None) -> Decision | None:
    """A resend is answered from its record; other changes under a recorded name are refused."""
    if found is not None and found.relation == "resend":
        return Replayed(member, recorded_answer(found.stored), found.stored)
    if found is not None and found.relation == "other":
        return Refused(member, found.refusal(member.idempotency_key), found.stored)
    return None


def _later(member: Member, claimed: set[repo.RecordKey | str]) -> Later | None:
    """A resend racing its original (the same name or Idempotency-Key in one group) is decided after it."""
    claims = {member.record_key} | ({member.idempotency_key} if member.idempotency_key else set())
    if claims & claimed:
        return Later(member)
    claimed |= claims
    return None
