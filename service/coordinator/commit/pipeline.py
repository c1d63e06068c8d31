"""The commit pipeline, top to bottom: every door's commit goes through the same steps.

    intake        the request resolved into a Member against the table this process knows (intake)
    queue         commits to one table wait together for its lock; one leader takes the group (queue)
    batch         the groups of tables ready at the same moment go together (batch)
    hold          the table locks, in one statement for a batch (usecases.table_hold)
    catch-up      the table as it really is: unpublished snapshots, outside writers, the state (catch_up)
    decide        each member on top of the state: a Decision value (decide)
    commit point  every head moved and every commit recorded, each table on its own (commit_point)
    publish       snapshot-N created on storage, never overwritten (publish)
    answers       every member's future gets its answer; logged and counted once (answers, CommitEvents)
    finish        published, timings recorded, locks released (commit_point.finish), on an ending
                  thread while the members are answered (usecases.hold_ends)

A group commit is one table with M members, a batch several tables' groups, a multi-table transaction N
tables with one member each, all or nothing: all are decided and committed by try_commit, with one set
of rules.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack

from coordinator.commit.answers import answer
from coordinator.commit.batch import TableGroup
from coordinator.commit.collaborators import Collaborators
from coordinator.commit.commit_point import finish, stamp_totals
from coordinator.commit.intake import native_intake, proposal_intake
from coordinator.commit.member import Intake, Member, TableDecisions
from coordinator.commit.queue import TakeGroup
from coordinator.commit.snapshot_proposals import SnapshotProposal
from coordinator.commit.transaction import intake_parts, placed_file, transaction_answer
from coordinator.commit.try_commit import TryCommit
from coordinator.domain.committable import ResolvedCommittable
from coordinator.errors import (
    CommitConflict,
    DataFileMissing,
)
from coordinator.observability.commit_events import CommitEvents, Outcome
from coordinator.usecases.table_hold import Hold
from coordinator.usecases.tables import Table
from coordinator_client.models import (
    CommitRequest,
    CommitResponse,
    TransactionRequest,
    TransactionResponse,
)

log = logging.getLogger(__name__)

AfterCommit = Callable[[str, int], None]
"""Called with (table id, latest snapshot id) once a commit stands (retention). What it raises is logged
and counted (coordinator_post_commit_failures_total), never answered: the commit stands whatever happens
after it."""


class Committer:
    """Commits to every table; safe to call from many threads and many service processes."""

    def __init__(self, steps: Collaborators, *, max_transaction_tables: int) -> None:
        self._steps = steps
        self._try_commit = TryCommit(steps)
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
        commit them, and answer every member while the finish (one statement) ends the hold; the groups
        of tables held elsewhere are handed back to their leaders."""
        steps = self._steps
        with ExitStack() as holding:
            hold = holding.enter_context(steps.holds.hold_free([g.table for g in batch], "commit"))
            acquired = time.perf_counter()
            held = [g for g in batch if g.table.id in hold.leases]
            steps.metrics.batch_tables.observe(len(held))
            parts = [(g.table, self._taken(g.take, acquired)) for g in held]
            decided = self._commit_held(holding, hold, parts)
        for table_decisions in decided:
            answer(table_decisions)
        for group in held:
            group.later.set_result([m for d in decided if d.table.id == group.table.id for m in d.later])
        for group in batch:
            if not group.later.done():
                group.later.set_result(None)  # its lock is busy: its leader holds it alone

    def _lead_alone(self, table: Table, take: TakeGroup) -> list[Member]:
        """Hold the table, waiting for its lock, then take the group; decide and commit it, and answer
        every member while the finish ends the hold. Returns the members left for the next group."""
        steps = self._steps
        with ExitStack() as holding:
            hold = holding.enter_context(steps.holds.hold([table], "commit"))
            decided = self._commit_held(holding, hold, [(table, self._taken(take, time.perf_counter()))])
        for table_decisions in decided:
            answer(table_decisions)
        return [m for d in decided for m in d.later]

    def _commit_held(
        self, holding: ExitStack, hold: Hold, parts: list[tuple[Table, list[Member]]]
    ) -> list[TableDecisions]:
        """The held tables' members decided and committed, each table on its own; then the hold, entered
        in `holding`, ends on an ending thread with the finish (which releases the locks) while the
        caller answers (usecases/hold_ends.py)."""
        steps = self._steps
        decided = self._try_commit.run(hold, parts, atomic=False) if parts else []
        stamp_totals(decided)
        now = steps.clock.now
        steps.holds.end_later(holding, hold, lambda: finish(steps.bookkeeping, decided, hold, now()))
        return decided

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
            decided = self._try_commit.run(hold, [(p.table, [p.member]) for p in parts], atomic=True)
            response = transaction_answer(parts, decided)
            if not response.deduplicated:
                stamp_totals(decided)
                finish(steps.bookkeeping, decided, hold, steps.clock.now())
        publish = sum(p.member.phases.timings.get("publish", 0.0) for p in parts)
        timings.update(
            decide=round(_ms(acquired) - publish, 3), publish=round(publish, 3), total=_ms(started)
        )
        return response.model_copy(update={"timings": timings})

    # Outside a commit.

    def reconcile(self, table_id: str, latest: int) -> bool:
        """When head `latest` of the table is overwritten on storage, take it back under the lock (the
        lost commit is applied again on top, see catch_up); False when it is as recorded."""
        steps = self._steps
        table = steps.tables.get(table_id)
        if not steps.catch_up.head_overwritten(table, latest):
            return False
        with ExitStack() as holding:
            hold = holding.enter_context(steps.holds.hold([table], "commit"))
            self._commit_held(holding, hold, [(table, [])])  # no members: the catch-up takes the head back
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
