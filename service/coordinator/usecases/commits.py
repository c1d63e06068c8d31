"""Committing ManifestCommittables: queue -> hold -> catch up -> plan -> check -> write -> commit point
-> publish.

Commits to one table that arrive while its lock is held wait in this process's queue and are decided
together by the next hold (group commit, see commit_queue), one snapshot each, in arrival order. The
commit point (commit_records) is one database transaction that checks our lease is still live, moves the
table's head from N to N+k and records the outcomes; only after it do the snapshot files appear on
storage (publication). This module orchestrates; each step's work lives in the module named after it.
"""

from __future__ import annotations

import threading
import time

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from coordinator.clock import Clock
from coordinator.db import repositories as repo
from coordinator.db.engine import probe_engine
from coordinator.db.repositories import live_files
from coordinator.domain.committable import ResolvedCommittable, resolve_committable
from coordinator.domain.conflicts import Conflict
from coordinator.errors import (
    CommitConflict,
    DataFileMissing,
    InvalidRequest,
    LockUnavailable,
    TableNotFound,
)
from coordinator.observability.commit_events import CommitEvents, Outcome
from coordinator.observability.metrics import Metrics
from coordinator.storage.fileio import FileIO
from coordinator.usecases.commit_queue import (
    AfterCommit,
    CommitQueue,
    InFlight,
    Intake,
    PendingCommit,
    TakeGroup,
    after_commit,
    timed_together,
)
from coordinator.usecases.commit_records import (
    GroupResult,
    TableChanged,
    conflict_model,
    current_context,
    record_finish,
    record_group,
    replay_recorded,
)
from coordinator.usecases.file_checks import FileChecks
from coordinator.usecases.live_index import LiveIndex
from coordinator.usecases.manifests import ManifestStore
from coordinator.usecases.member_decision import Decider, decide_member
from coordinator.usecases.publication import Publication
from coordinator.usecases.reapplication import reapplying
from coordinator.usecases.resends import (
    answer_by_key,
    answer_from_record,
    record_of,
    recorded_answer,
    standing_commit,
)
from coordinator.usecases.snapshot_proposals import ProposedSnapshot, SnapshotProposal, read_proposal
from coordinator.usecases.table_hold import HeldElsewhere, Hold, TableHolds
from coordinator.usecases.table_state import TableStates
from coordinator.usecases.tables import Table, Tables, version_of
from coordinator.usecases.transactions import Transactions
from coordinator_client.models import CommitRequest, CommitResponse, InFlightCommitModel

MAX_GROUP = 32
"""At most this many queued committables are committed in one lock hold."""


class Committer:
    """Commits to every table; safe to call from many threads and many service processes.

    Within one process, commits to a table that arrive while its lock is held are grouped (see
    commit_queue); across processes the table lock orders the groups.
    """

    def __init__(
        self,
        engine: Engine,
        bookkeeping: Engine,
        fileio: FileIO,
        tables: Tables,
        holds: TableHolds,
        *,
        metrics: Metrics,
        clock: Clock,
        max_group: int = MAX_GROUP,
        max_transaction_tables: int = 64,
    ) -> None:
        self._engine = engine
        self._bookkeeping = bookkeeping
        self._tables = tables
        self._holds = holds
        self._clock = clock
        self._max_group = max_group
        self._states = TableStates(fileio)
        self._fileio = fileio
        self._probes = probe_engine(engine)
        self._live_index = LiveIndex(engine, self._probes)
        self._decider = Decider(engine, self._live_index, clock)
        self._file_checks = FileChecks(fileio, tables)
        self._in_flight = InFlight()
        self.publication = Publication(
            engine, bookkeeping, fileio, tables, holds, self._states, self._live_index, metrics
        )
        self.transactions = Transactions(
            engine, bookkeeping, tables, holds, self._states, self.publication, self._decider,
            self._file_checks, self._in_flight, clock=clock, metrics=metrics,
            max_tables=max_transaction_tables,
        )  # fmt: skip
        self._queues: dict[str, CommitQueue] = {}
        self._queues_guard = threading.Lock()
        self._metrics = metrics
        self._events = CommitEvents(metrics)
        self._after_commit: AfterCommit | None = None

    def after_each_commit(self, hook: AfterCommit) -> None:
        """Run `hook` after every commit that made a snapshot (retention); its failures are logged and
        counted, and the commit's answer stays what the commit point decided."""
        self._after_commit = hook
        self.transactions.after_commit = hook

    def commit(
        self,
        table_id: str,
        request: CommitRequest,
        *,
        idempotency_key: str | None = None,
        forwardable: bool = False,
    ) -> CommitResponse:
        """Commit one committable; a resend of a committed one returns its snapshots with deduplicated=true.

        Every answer is logged and counted (see observability.commit_events). `forwardable`: the caller
        can send the commit on to another replica holding the table's lock (HeldElsewhere says where).

        Raises:
            TableNotFound, InvalidRequest, CommitConflict, LockUnavailable, HeldElsewhere.
        """

        def intake(table: Table, now_millis: int) -> tuple[ResolvedCommittable, None]:
            return resolve_committable(request, table.shape, now_millis=now_millis), None

        who = (request.commit_user, request.identifier)
        return self._answer(table_id, who, intake, idempotency_key, forwardable)

    def commit_snapshot(
        self, table_id: str, proposal: SnapshotProposal, *, forwardable: bool = False
    ) -> bool:
        """Publish a snapshot a Paimon engine finished itself (REST protocol) if it builds on the head.

        Returns True when it is published now or was already (a resend), False when the table's head is
        not its base: the client rebases and proposes again (see snapshot_acceptance).

        Raises:
            TableNotFound, InvalidRequest, CommitConflict (a definite conflict), LockUnavailable,
            HeldElsewhere (only when `forwardable`: see commit).
        """
        who = proposal.commit_key

        def intake(table: Table, _now: int) -> tuple[ResolvedCommittable, ProposedSnapshot]:
            return read_proposal(proposal, table, ManifestStore.for_table(self._fileio, table))

        try:
            self._answer(table_id, who, intake, None, forwardable)
        except CommitConflict as rejected:
            if rejected.conflict.retryable:
                return False
            raise
        return True

    def _answer(
        self, table_id: str, who: tuple[str, int], intake: Intake, key: str | None, forwardable: bool
    ) -> CommitResponse:
        """Any door's commit, from its request to its answer, logged and counted."""
        started = time.perf_counter()
        resolved: ResolvedCommittable | None = None
        try:
            table, resolved, proposed = self._intake(table_id, intake)
            response = self._commit(table, intake, resolved, proposed, key, started, forwardable)
        except HeldElsewhere:
            raise  # not an answer: the replica holding the lock gives it
        except CommitConflict as rejected:
            self._events.answered(table_id, who, resolved, "rejected", conflict=rejected.conflict)
            raise
        except LockUnavailable as busy:
            self._events.answered(table_id, who, resolved, "lock_unavailable", error=busy.message)
            raise
        except (InvalidRequest, TableNotFound, DataFileMissing) as invalid:
            self._events.answered(table_id, who, resolved, "invalid", error=invalid.message)
            raise
        except Exception as error:
            self._events.answered(table_id, who, resolved, "failed", error=repr(error))
            raise
        # The commit stands (recorded at the commit point, published): from here on nothing may turn
        # its answer into an error, or the writer would take a standing commit for a failed one.
        outcome: Outcome = "deduplicated" if response.deduplicated else "committed"
        self._events.answered(table_id, who, resolved, outcome, response=response)
        if response.snapshots and not response.deduplicated:
            after_commit(self._after_commit, table.id, response.snapshots[-1].id, self._metrics)
        return response

    def _intake(
        self, table_id: str, intake: Intake
    ) -> tuple[Table, ResolvedCommittable, ProposedSnapshot | None]:
        """The committable checked against this process's copy of the table, without a database read: the
        hold checks the table's version again and resolves it anew if the table moved. Only a rejection
        is checked against the table as it is now, so a stale copy never turns a valid commit away."""
        table = self._tables.cached(table_id)
        try:
            return table, *intake(table, self._clock.local_millis())
        except InvalidRequest:
            current = self._tables.get(table_id)
            if version_of(current) == version_of(table):
                raise
            return current, *intake(current, self._clock.local_millis())

    def in_flight(self) -> list[InFlightCommitModel]:
        """The commits this instance is working on, oldest first, with the phase each is in."""
        return self._in_flight.listing()

    def queued(self, table_id: str) -> int:
        """Commits to this table waiting in this process for the current group to finish."""
        return self._queue(table_id).depth

    def in_flight_file_names(self, table_id: str) -> set[str]:
        """Names of the files that commits and transactions waiting in this process will name: not
        orphans."""
        waiting = {name for resolved in self._queue(table_id).waiting() for name in resolved.file_names}
        return waiting | self.transactions.file_names(table_id)

    def forget_state(self, table_id: str) -> None:
        """Drop the in-memory state of a table whose snapshots changed outside a commit (a rollback)."""
        self._states.invalidate(table_id)

    def recover(self) -> list[str]:
        """At start-up: publish what a crash left committed but unpublished (see publication)."""
        return self.publication.recover()

    def _commit(
        self,
        table: Table,
        intake: Intake,
        resolved: ResolvedCommittable,
        proposed: ProposedSnapshot | None,
        key: str | None,
        started: float,
        forwardable: bool,
    ) -> CommitResponse:
        """From a validated committable (`started` when its request came in) to its answer."""
        if key is not None:
            # A terminal answer recorded for this key is replayed without waiting for the lock; the
            # commitUser + identifier check happens under the lock, where it cannot race.
            keyed = answer_by_key(self._engine, table.id, key, resolved, proposed)
            if keyed is not None:
                return keyed
        try:
            self._file_checks.verify(table, resolved)
        except DataFileMissing:
            # A resend of a commit that stands may name files that maintenance has removed since.
            standing = standing_commit(self._engine, table.id, resolved)
            if standing is None:
                raise
            return answer_from_record(standing)
        while True:
            pending = PendingCommit(resolved, key, started, intake, version_of(table), proposed)
            pending.waited("validate")
            pending.current = "lockWait"
            try:
                with self._in_flight.tracking(table.id, pending):
                    return self._queue(table.id).run(
                        pending, lambda take: self._commit_group(table, take, forwardable=forwardable)
                    )
            except HeldElsewhere:  # a forwardable leader sent the queue elsewhere
                if forwardable:
                    raise  # this one goes too; one that may not go queues again and waits here

    def close(self) -> None:
        self._file_checks.close()
        if self._probes is not self._engine:
            self._probes.dispose()

    def reconcile(self, table_id: str, latest: int) -> bool:
        """When head `latest` of the table is overwritten on storage, take it back under the lock (the
        lost commit is applied again on top, see publication); False when it is as recorded."""
        table = self._tables.get(table_id)
        if not self.publication.head_overwritten(table, latest):
            return False
        self._commit_group(table, list)  # an empty group: its catch-up does the work
        return True

    def _queue(self, table_id: str) -> CommitQueue:
        with self._queues_guard:
            queue = self._queues.get(table_id)
            if queue is None:
                queue = self._queues[table_id] = CommitQueue(self._max_group)
            return queue

    def _commit_group(
        self, table: Table, take: TakeGroup, *, forwardable: bool = False
    ) -> list[PendingCommit]:
        """Hold the table, then take the group; decide every member, finish, and answer.

        Returns the members left for the next group.

        Raises:
            HeldElsewhere: when `forwardable` and another replica holds the lock (nothing was taken).
        """
        with self._holds.hold([table], "commit", forwardable=forwardable) as hold:
            acquired = time.perf_counter()
            group = take()
            self._metrics.group_size.observe(len(group))
            for member in group:
                member.waited("lockWait", acquired)
            result = self._decide(table, group, hold)
            record_finish(self._bookkeeping, [(table, result)], hold, self._clock.now())
        result.answer()
        return result.later

    def _decide(self, table: Table, group: list[PendingCommit], hold: Hold) -> GroupResult:
        with timed_together(group, "reconcile"):
            table, context, unpublished = current_context(
                self._engine, self._tables, self._states, table, group
            )
            state, lost = self.publication.catch_up(table, context, unpublished)
        # An acknowledged commit an outside writer overwrote goes first: its rows come back at once.
        reapplied = [reapplying(table, resolved) for resolved in lost]
        group = reapplied + group
        result = GroupResult()
        previous_id = state.snapshot_id
        taken: set[repo.RecordKey | str] = set()
        try:
            for index, member in enumerate(group):
                # The context was read before the catch-up marked a re-applied commit `overwritten`.
                found = None
                if member not in reapplied:
                    found = record_of(self._engine, table.id, context, member, state.snapshot_id)
                if found is not None and found.relation == "resend":
                    result.replayed.append((member, recorded_answer(found.stored)))
                    continue
                if found is not None and found.relation == "other":
                    # Not recorded: a refused request changes nothing.
                    result.invalid.append((member, found.refusal(member.idempotency_key)))
                    continue
                if found is not None:  # its commit's other kind is recorded: its snapshots join that row
                    member.extends_record = found.stored.id
                try:
                    member.resolve_for(table, now_millis=self._clock.local_millis())
                except InvalidRequest as invalid:
                    result.invalid.append((member, invalid))
                    continue
                claims = {member.record_key} | ({member.idempotency_key} if member.idempotency_key else set())
                if claims & taken:
                    result.later.append(member)  # a resend racing its original is decided after it
                    continue
                taken |= claims
                hold.check_alive()
                if not decide_member(self._decider, table, state, member, group, result):
                    # Part of this committable already advanced the in-memory state: the rest of the
                    # group waits for a state rebuilt from what is committed.
                    result.later.extend(group[index + 1 :])
                    self._states.invalidate(table.id)
                    break
            files = record_group(self._engine, hold, table, previous_id, result, self._clock.now())
        except TableChanged:
            # Dropped and created again, or its schema changed, after our look at the row: nothing of
            # the group was written, and the next group looks again and decides everyone anew. The
            # catch-up may have indexed the old table's files under the new one's id: forgotten, the
            # index is built again from the table's latest snapshot by the next catch-up.
            self._states.discard(table.id, state)
            with hold.fenced() as conn:
                live_files.reset_index(conn, table.id)
            result.decide_again(group)
            return result
        except Conflict as conflict:
            # The hold failed for the whole group (lease lost, head moved): nothing of it is written.
            self._states.discard(table.id, state)
            result.reject_all(group, conflict_model(self._engine, table, conflict))
            return result
        except IntegrityError:
            # A unique index saw a commit this group's context did not: answer from what is recorded.
            self._states.discard(table.id, state)
            return replay_recorded(self._engine, table, group)
        except BaseException:
            self._states.discard(table.id, state)
            raise
        state.manifests.keep_written()
        with timed_together(result.committed, "publish"):
            self.publication.publish_group(table, files, result)
        return result
