"""The commit pipeline, top to bottom: every door's commit goes through the same steps.

    intake        the request resolved into a Member against the table this process knows (intake)
    queue         commits to one table wait together for its lock; one leader takes the group (queue)
    hold          the table locks, taken in table-id order and renewed (usecases.table_hold)
    catch-up      the table as it really is: unpublished snapshots, outside writers, the state (catch_up)
    decide        each member on top of the state: a Decision value (decide)
    commit point  one database transaction moves every head and records every commit (commit_point)
    publish       snapshot-N created on storage, never overwritten (publish)
    finish        published, timings recorded, locks released in one transaction (commit_point.finish)
    answers       every member's future gets its answer; logged and counted once (answers, CommitEvents)

A group commit is one table with M members; a multi-table transaction is N tables with one member each,
all or nothing. Both are decided and committed by `_decide_and_commit`, with one set of error rules.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from coordinator.clock import Clock
from coordinator.commit.answers import answer, conflict_model
from coordinator.commit.batch import Batches, TableGroup
from coordinator.commit.catch_up import CatchUp
from coordinator.commit.commit_point import (
    DecideAgain,
    Refusal,
    TableChanged,
    TableConflict,
    changed_since,
    commit_each,
    commit_point,
    finish,
    table_change,
)
from coordinator.commit.decide import Decider
from coordinator.commit.in_flight import InFlight
from coordinator.commit.intake import Intakes, native_intake, proposal_intake
from coordinator.commit.member import (
    Committed,
    Decision,
    Failed,
    Intake,
    Later,
    Member,
    Refused,
    Rejected,
    Replayed,
    TableDecisions,
)
from coordinator.commit.phases import timed_together
from coordinator.commit.publish import Publication
from coordinator.commit.queue import CommitQueues, TakeGroup
from coordinator.commit.reapplication import reapplying
from coordinator.commit.snapshot_proposals import SnapshotProposal
from coordinator.commit.table_state import TableState, TableStates
from coordinator.commit.transaction import intake_parts, placed_file, transaction_answer
from coordinator.db.repositories import live_files
from coordinator.domain.committable import ResolvedCommittable
from coordinator.domain.conflicts import Conflict
from coordinator.errors import (
    CommitConflict,
    DataFileMissing,
    LockUnavailable,
)
from coordinator.observability.commit_events import CommitEvents, Outcome
from coordinator.observability.metrics import Metrics
from coordinator.storage.fileio import FileIO
from coordinator.usecases.table_hold import Hold, TableHolds
from coordinator.usecases.tables import Table, Tables
from coordinator_client.models import (
    CommitRequest,
    CommitResponse,
    TransactionRequest,
    TransactionResponse,
)

log = logging.getLogger(__name__)

DECIDE_ATTEMPTS = 3
"""Looks at the tables under one hold before giving up: a table changed under it each time."""

AfterCommit = Callable[[str, int], None]
"""Called with (table id, latest snapshot id) once a commit stands (retention). What it raises is logged
and counted (coordinator_post_commit_failures_total), never answered: the commit stands whatever happens
after it."""


@dataclass(frozen=True)
class Collaborators:
    """What the pipeline's steps need, built once (services.py)."""

    engine: Engine
    bookkeeping: Engine
    fileio: FileIO
    tables: Tables
    holds: TableHolds
    intakes: Intakes
    queues: CommitQueues
    batches: Batches
    in_flight: InFlight
    catch_up: CatchUp
    decider: Decider
    publication: Publication
    states: TableStates
    metrics: Metrics
    clock: Clock


class Committer:
    """Commits to every table; safe to call from many threads and many service processes."""

    def __init__(self, steps: Collaborators, *, max_transaction_tables: int) -> None:
        self._steps = steps
        self._events = CommitEvents(steps.metrics)
        self.max_transaction_tables = max_transaction_tables
        self._after_commit: AfterCommit | None = None

    def after_each_commit(self, hook: AfterCommit) -> None:
        """Run `hook` after every commit that made a snapshot (retention); its failures are logged and
        counted, and the commit's answer stays what the commit point decided."""
        self._after_commit = hook

    # The doors.

    def commit(
        self, table_id: str, request: CommitRequest, *, idempotency_key: str | None = None
    ) -> CommitResponse:
        """Commit one committable; a resend of a committed one returns its snapshots with deduplicated=true.

        Raises:
            TableNotFound, InvalidRequest, CommitConflict, LockUnavailable, DataFileMissing.
        """
        who = (request.commit_user, request.identifier)
        return self._answered(table_id, who, native_intake(request), idempotency_key)

    def commit_snapshot(self, table_id: str, proposal: SnapshotProposal) -> bool:
        """Publish a snapshot a Paimon engine finished itself (REST protocol) if it builds on the head.

        Returns True when it is published now or was already (a resend), False when the table's head is
        not its base: the client rebases and proposes again (see snapshot_acceptance).

        Raises:
            TableNotFound, InvalidRequest, CommitConflict (a definite conflict), LockUnavailable.
        """
        try:
            self._answered(table_id, proposal.commit_key, proposal_intake(self._steps.fileio, proposal), None)
        except CommitConflict as rejected:
            if rejected.conflict.retryable:
                return False
            raise
        return True

    def transaction(self, request: TransactionRequest) -> TransactionResponse:
        """Every table gets its snapshot(s), or none does.

        Raises:
            InvalidRequest, TableNotFound, DataFileMissing: naming the field (`tables[i]...`); nothing
                changed.
            CommitConflict: a conflict on one table, named in the conflict's `table`; no table changed.
            LockUnavailable: a lock stayed busy past the acquire timeout.
        """
        try:
            response = self._transaction(request)
        except BaseException as error:
            self._events.transaction_answered(request, error=error)
            raise
        self._events.transaction_answered(request, response=response)
        if not response.deduplicated:
            for table in response.tables:
                if table.snapshots:
                    self._run_after_commit(table.table, table.snapshots[-1].id)
        return response

    # A single commit: intake, queue, and the group its queue's leader commits.

    def _answered(
        self, table_id: str, who: tuple[str, int], intake: Intake, key: str | None
    ) -> CommitResponse:
        """Any door's single commit, from its request to its answer, logged and counted."""
        resolved: ResolvedCommittable | None = None
        try:
            table, member = self._steps.intakes.member(table_id, intake, key)
            resolved = member.resolved
            response = self._steps.intakes.answer_before_lock(table, member) or self._queued(table, member)
            resolved = member.resolved
        except BaseException as error:
            self._events.answered(table_id, who, resolved, error=error)
            raise
        # The commit stands (recorded at the commit point, published): from here on nothing may turn
        # its answer into an error, or the writer would take a standing commit for a failed one.
        outcome: Outcome = "deduplicated" if response.deduplicated else "committed"
        self._events.answered(table_id, who, resolved, outcome=outcome, response=response)
        if response.snapshots and not response.deduplicated:
            self._run_after_commit(table.id, response.snapshots[-1].id)
        return response

    def _queued(self, table: Table, member: Member) -> CommitResponse:
        member.phases.waited("validate")
        member.phases.current = "lockWait"
        queue = self._steps.queues.of(table.id)
        with self._steps.in_flight.tracking([(table.id, member)]):
            queue.join(member)
            while (turn := queue.next_turn(member)) is not None:
                with turn:
                    turn.leave(self._lead(table, turn.take))
        return member.answer.result()

    def _lead(self, table: Table, take: TakeGroup) -> list[Member]:
        """Commit the table's group, in a batch with the groups of other tables ready at the same moment
        when there are; alone when the batch could not take the table's lock. Returns the members left
        for the next group."""
        batches = self._steps.batches
        group = TableGroup(table, take)
        batches.join(group)
        while (batch := batches.next_batch(group)) is not None:
            with batches.committing(batch):
                self._commit_batch(batch)
        later = group.later.result()
        return later if later is not None else self._lead_alone(table, take)

    def _commit_batch(self, batch: Sequence[TableGroup]) -> None:
        """Hold every table of the batch whose lock is free (one statement), take their groups, decide and
        commit them, finish (one statement), and answer every member; the groups of tables held
        elsewhere are handed back to their leaders."""
        steps = self._steps
        with steps.holds.hold_free([g.table for g in batch], "commit") as hold:
            acquired = time.perf_counter()
            held = [g for g in batch if g.table.id in hold.leases]
            steps.metrics.batch_tables.observe(len(held))
            parts = [(g.table, self._taken(g.take, acquired)) for g in held]
            decided = self._decide_and_commit(hold, parts, atomic=False) if parts else []
            finish(steps.bookkeeping, decided, hold, steps.clock.now())
        for table_decisions in decided:
            answer(table_decisions)
        for group in held:
            group.later.set_result([m for d in decided if d.table.id == group.table.id for m in d.later])
        for group in batch:
            if not group.later.done():
                group.later.set_result(None)  # its lock is busy: its leader holds it alone

    def _lead_alone(self, table: Table, take: TakeGroup) -> list[Member]:
        """Hold the table, waiting for its lock, then take the group; decide and commit it, finish, and
        answer every member. Returns the members left for the next group."""
        steps = self._steps
        with steps.holds.hold([table], "commit") as hold:
            decided = self._decide_and_commit(
                hold, [(table, self._taken(take, time.perf_counter()))], atomic=False
            )
            finish(steps.bookkeeping, decided, hold, steps.clock.now())
        for table_decisions in decided:
            answer(table_decisions)
        return [m for d in decided for m in d.later]

    def _taken(self, take: TakeGroup, acquired: float) -> list[Member]:
        """The table's group, once its lock is held (at `acquired`)."""
        group = take()
        self._steps.metrics.group_size.observe(len(group))
        for member in group:
            member.phases.waited("lockWait", acquired)
        return group

    # A transaction: intake of every part, one hold over every table, all or nothing.

    def _transaction(self, request: TransactionRequest) -> TransactionResponse:
        steps = self._steps
        started = time.perf_counter()
        parts = intake_parts(
            request, steps.tables, self.max_transaction_tables, steps.clock.local_millis(), started
        )
        for part in parts:
            try:
                steps.intakes.verify_files(part.table, part.member.resolved)
            except DataFileMissing as missing:
                raise placed_file(missing, part.index) from None
        timings = {"validate": _ms(started)}
        members = [(p.table.id, p.member) for p in parts]
        for _, member in members:
            member.phases.waited("validate")
            member.phases.current = "lockWait"
        with steps.in_flight.tracking(members), steps.holds.hold([p.table for p in parts], "commit") as hold:
            acquired = time.perf_counter()
            timings["lockWait"] = round((acquired - started) * 1000 - timings["validate"], 3)
            decided = self._decide_and_commit(hold, [(p.table, [p.member]) for p in parts], atomic=True)
            response = transaction_answer(parts, decided)
            if not response.deduplicated:
                finish(steps.bookkeeping, decided, hold, steps.clock.now())
        publish = sum(p.member.phases.timings.get("publish", 0.0) for p in parts)
        timings.update(
            decide=round(_ms(acquired) - publish, 3), publish=round(publish, 3), total=_ms(started)
        )
        return response.model_copy(update={"timings": timings})

    # The one decide-and-commit loop.

    def _decide_and_commit(
        self, hold: Hold, parts: Sequence[tuple[Table, list[Member]]], *, atomic: bool
    ) -> list[TableDecisions]:
        """Every table's members decided under the hold, one commit point for all, then publication.

        `atomic` (a transaction): every member commits or none does. A table that changed under the hold
        before the commit point (dropped and created again, or altered), or a unique index that saw a
        record the first look did not, means nothing was written: the members are decided again.
        """
        for _ in range(DECIDE_ATTEMPTS):
            decided = self._attempt(hold, parts, atomic=atomic)
            if decided is not None:
                return decided
        raise LockUnavailable(  # as for a busy lock: nothing was done, and a resend may succeed
            f"the tables changed under the commit {DECIDE_ATTEMPTS} times; nothing was written, "
            "send it again",
            retry_after_seconds=1,
        )

    def _attempt(
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
        if lost:
            again = self._reapply(hold, table, state, lost)
            if again is None:
                return None
            reapplied.append(again)
        decided = TableDecisions(
            table, state, state.snapshot_id, steps.decider.decide_all(table, context, state, members, hold)
        )
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

    # Outside a commit.

    def reconcile(self, table_id: str, latest: int) -> bool:
        """When head `latest` of the table is overwritten on storage, take it back under the lock (the
        lost commit is applied again on top, see catch_up); False when it is as recorded."""
        steps = self._steps
        table = steps.tables.get(table_id)
        if not steps.catch_up.head_overwritten(table, latest):
            return False
        with steps.holds.hold([table], "commit") as hold:
            decided = self._decide_and_commit(hold, [(table, [])], atomic=False)
            finish(steps.bookkeeping, decided, hold, steps.clock.now())
        return True

    def recover(self) -> list[str]:
        """At start-up: publish what a crash left committed but unpublished (see publish)."""
        return self._steps.publication.recover()

    def _run_after_commit(self, table_id: str, latest: int) -> None:
        if self._after_commit is None:
            return
        try:
            self._after_commit(table_id, latest)
        except Exception:
            log.exception("retention after a commit to %s failed; the commit stands", table_id)
            self._steps.metrics.post_commit_failures.labels("retention").inc()


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
