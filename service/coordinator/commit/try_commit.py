"""Try commit: the one decide-and-commit loop (Paimon's tryCommit and tryCommitOnce), for a group of one
table, a batch of several tables' groups, and a transaction's tables alike.

Every table's members are decided under the hold on top of its caught-up state, then one commit point
records them all, then their snapshots are published. Outside a transaction each table stands or falls on
its own; a transaction is all or nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.exc import IntegrityError

from coordinator.commit import outbox
from coordinator.commit.answers import conflict_model
from coordinator.commit.collaborators import Collaborators
from coordinator.commit.commit_point import (
    DecideAgain,
    Refusal,
    TableChanged,
    TableConflict,
    changed_since,
    commit_each,
    commit_point,
    table_change,
)
from coordinator.commit.member import (
    Committed,
    Decision,
    Failed,
    Later,
    Member,
    Refused,
    Rejected,
    Replayed,
    TableDecisions,
)
from coordinator.commit.phases import timed_together
from coordinator.commit.reapplication import reapplying
from coordinator.commit.table_state import TableState
from coordinator.db.repositories import live_files
from coordinator.domain.committable import ResolvedCommittable
from coordinator.domain.conflicts import Conflict
from coordinator.errors import (
    CommitConflict,
    LockUnavailable,
)
from coordinator.usecases.table_hold import Hold
from coordinator.usecases.tables import Table

DECIDE_ATTEMPTS = 3
"""Looks at the tables under one hold before giving up: a table changed under it each time."""


class TryCommit:
    def __init__(self, steps: Collaborators) -> None:
        self._steps = steps

    def run(
        self, hold: Hold, parts: Sequence[tuple[Table, list[Member]]], *, atomic: bool
    ) -> list[TableDecisions]:
        """Every table's members decided under the hold, one commit point for all, then publication.

        `atomic` (a transaction): every member commits or none does. A table that changed under the hold
        before the commit point (dropped and created again, or altered), or a unique index that saw a
        record the first look did not, means nothing was written: the members are decided again.
        """
        for _ in range(DECIDE_ATTEMPTS):
            decided = self._once(hold, parts, atomic=atomic)
            if decided is not None:
                return decided
        raise LockUnavailable(  # as for a busy lock: nothing was done, and a resend may succeed
            f"the tables changed under the commit {DECIDE_ATTEMPTS} times; nothing was written, "
            "send it again",
            retry_after_seconds=1,
        )

    def _once(
        self, hold: Hold, parts: Sequence[tuple[Table, list[Member]]], *, atomic: bool
    ) -> list[TableDecisions] | None:
        """One look at the tables under the hold; None when nothing was written and the members are to be
        decided again. Outside a transaction each table stands or falls on its own: what fails for one
        table (its catch-up, its lease, its head, its row) answers or requeues only its members."""
        steps = self._steps
        standing: list[TableDecisions] = []
        """Re-applied commits of an overwritten head: committed at a commit point of their own first."""
        fresh: list[TableDecisions] = []
        try:
            for table, members in parts:
                try:
                    looked = self._decide_table(hold, table, members)
                except Exception as error:
                    if atomic or len(parts) == 1:
                        raise
                    fresh.append(self._failed(table, members, error))
                    continue
                if looked is None:
                    if atomic or len(parts) == 1:
                        self._discard(fresh)
                        return None
                    fresh.append(TableDecisions(table, None, 0, [Later(m) for m in members]))
                    continue
                reapplied, decided = looked
                standing.extend(reapplied)
                fresh.append(decided)
                if atomic and any(isinstance(d, (Rejected, Refused)) for d in decided.decisions):
                    break
            if atomic and not all(isinstance(d, Committed) for t in fresh for d in t.decisions):
                self._discard(fresh)
                return standing + fresh
            now = steps.clock.now()
            changes = [(d, change) for d in fresh if (change := table_change(d, now))]
            with timed_together([c.member.phases for d in fresh for c in d.committed], "commitPoint"):
                if atomic:
                    commit_point(hold, [change for _, change in changes])
                    refused: dict[str, Refusal] = {}
                else:
                    refused = commit_each(hold, [change for _, change in changes])
            for decided in fresh:
                if decided.rejected and not decided.committed and changed_since(steps.engine, decided.table):
                    refused[decided.table.id] = TableChanged(
                        decided.table.id
                    )  # rejections are recorded there
            fresh = [
                self._refused(hold, d, refused[d.table.id]) if d.table.id in refused else d for d in fresh
            ]
            for decided in fresh:
                if decided.state is not None:
                    decided.state.manifests.keep_written()
        except TableChanged as changed:  # a transaction's table
            # The catch-up may have indexed the old table's files under the new one's id: forgotten, the
            # index is built again from the table's latest snapshot by the next catch-up.
            self._discard(fresh)
            with hold.fenced([changed.table_id]) as conn:
                live_files.reset_index(conn, changed.table_id)
            return None
        except (DecideAgain, IntegrityError):
            self._discard(fresh)  # the next look answers those members from their records
            return None
        except (Conflict, TableConflict) as failed:
            # The hold failed (lease lost, head moved): nothing of it is written, and every member not
            # answered from its record is rejected.
            self._discard(fresh)
            conflict = failed.conflict if isinstance(failed, TableConflict) else failed
            model = conflict_model(steps.engine, parts[0][0], conflict)
            if atomic:
                raise CommitConflict(model) from None
            return standing + [
                TableDecisions.all_rejected(table, members, fresh, model) for table, members in parts
            ]
        except BaseException:
            self._discard(fresh)
            raise
        for decided, change in changes:
            if decided.table.id in refused:
                continue
            with timed_together([c.member.phases for c in decided.committed], "publish"):
                steps.publication.publish_group(decided, change.snapshots)
            if atomic and decided.later:
                # Only a writer that bypasses the coordinator can take an id the commit point gave us.
                raise RuntimeError(
                    f"a writer outside the coordinator took a snapshot id of {decided.table.id} before this "
                    "transaction's snapshot was published there"
                )
        return standing + fresh

    def _decide_table(
        self, hold: Hold, table: Table, members: list[Member]
    ) -> tuple[list[TableDecisions], TableDecisions] | None:
        """One table's catch-up, its re-applied commits, and its members decided on top of its state; None
        when its members are to be decided again on a state built anew."""
        steps = self._steps
        with timed_together([m.phases for m in members], "reconcile"):
            table, context = steps.catch_up.context(table, members)
            state, lost = steps.catch_up.catch_up(table, context)
        reapplied = []
        try:
            if lost:
                again = self._reapply(hold, table, state, lost)
                if again is None:
                    return None
                reapplied.append(again)
            previous_id = state.snapshot_id  # the head the members build on
            decisions = steps.decider.decide_all(table, context, state, members, hold)
        except BaseException:
            # Nothing decided on the state stands: its manifests go, and it is built again.
            steps.states.discard(table.id, state)
            raise
        decided = TableDecisions(table, state, previous_id, decisions)
        if any(isinstance(d, Rejected) and d.advanced for d in decided.decisions):
            # Part of a committable advanced the in-memory state: built again from what is committed.
            steps.states.invalidate(table.id)
        return reapplied, decided

    def _failed(self, table: Table, members: Sequence[Member], error: Exception) -> TableDecisions:
        """One table of several whose catch-up or deciding failed: its members get its error (a lost lease
        is their retryable conflict, recorded), and the other tables go on."""
        if isinstance(error, (Conflict, TableConflict)):
            conflict = error.conflict if isinstance(error, TableConflict) else error
            model = conflict_model(self._steps.engine, table, conflict)
            return TableDecisions.all_rejected(table, members, [], model)
        return TableDecisions(table, None, 0, [Failed(m, error) for m in members])

    def _refused(self, hold: Hold, decided: TableDecisions, refusal: Refusal) -> TableDecisions:
        """What becomes of one table's decisions when the commit point wrote nothing of them: after a
        lost lease or a moved head, its members are rejected (retryable); after a change of its row or a
        record that appeared meanwhile, they are decided again in the next group. Answers from records
        and refusals stand either way."""
        self._discard([decided])
        settled = [d for d in decided.decisions if isinstance(d, (Replayed, Refused, Failed))]
        others = [d.member for d in decided.decisions if not isinstance(d, (Replayed, Refused, Failed))]
        if isinstance(refusal, TableConflict):
            model = conflict_model(self._steps.engine, decided.table, refusal.conflict)
            return TableDecisions(decided.table, None, 0, [*settled, *(Rejected(m, model) for m in others)])
        if isinstance(refusal, TableChanged):
            with hold.fenced([decided.table.id]) as conn:
                live_files.reset_index(conn, decided.table.id)
        return TableDecisions(decided.table, None, 0, [*settled, *(Later(m) for m in others)])

    def _reapply(
        self, hold: Hold, table: Table, state: TableState, lost: list[ResolvedCommittable]
    ) -> TableDecisions | None:
        """Acknowledged commits an outside writer overwrote go back first, at a commit point of their own
        (the catch-up has marked them overwritten): they stand whatever becomes of the members. None when
        one was rejected after part of it advanced the state: the members wait for a state built again."""
        steps = self._steps
        decisions: list[Decision] = []
        reapplied = TableDecisions(table, state, state.snapshot_id, decisions)
        for member in [reapplying(table, resolved) for resolved in lost]:
            hold.check_alive(table.id)
            decisions.append(steps.decider.decide(table, state, member, decisions, extends=None))
        change = table_change(reapplied, steps.clock.now())
        if change is not None:
            change.events = outbox.reapplied(change.events)
            commit_point(hold, [change])
            state.manifests.keep_written()
            steps.publication.publish_group(reapplied, change.snapshots)
        if any(isinstance(d, Rejected) and d.advanced for d in decisions):
            steps.states.invalidate(table.id)
            return None
        return reapplied

    def _discard(self, decided: Sequence[TableDecisions]) -> None:
        """Nothing of these decisions stands: the manifests written for them go, and every state touched is
        built again from what is committed."""
        for table_decisions in decided:
            if table_decisions.state is not None:
                self._steps.states.discard(table_decisions.table.id, table_decisions.state)
