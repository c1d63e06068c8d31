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
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from coordinator.clock import Clock
from coordinator.db import repositories as repo
from coordinator.db.engine import read_only
from coordinator.domain.committable import ResolvedCommittable, resolve_committable
from coordinator.domain.conflicts import Conflict, check_base_snapshot, check_conflicts
from coordinator.domain.manifest_merge import merge_manifests
from coordinator.domain.plan import SnapshotPlan, plan_snapshots, with_live_metadata
from coordinator.domain.snapshot import ManifestLists, next_snapshot
from coordinator.errors import CommitConflict, InvalidRequest, LockUnavailable, TableNotFound
from coordinator.observability.commit_events import CommitEvents, Outcome
from coordinator.observability.metrics import Metrics
from coordinator.storage.fileio import FileIO
from coordinator.usecases.commit_queue import CommitQueue, InFlight, PendingCommit, TakeGroup, timed_together
from coordinator.usecases.commit_records import (
    TableChange,
    commit_point,
    conflict_model,
    group_context,
    history_row,
    recorded_answer,
    refs,
)
from coordinator.usecases.publication import Publication
from coordinator.usecases.snapshot_file import SnapshotFile
from coordinator.usecases.table_hold import Hold, TableHolds
from coordinator.usecases.table_state import TableState, TableStates
from coordinator.usecases.tables import Table, Tables
from coordinator_client.models import CommitRequest, CommitResponse, ConflictModel, InFlightCommitModel

MAX_GROUP = 32
"""At most this many queued committables are committed in one lock hold."""

AfterCommit = Callable[[str, int], None]
"""Called with (table id, latest snapshot id) once a commit stands; it must not raise."""


@dataclass
class _GroupResult:
    """How each member of a group was decided under the lock; answered after the finishing transaction."""

    committed: list[PendingCommit] = field(default_factory=list)
    rejected: list[tuple[PendingCommit, ConflictModel]] = field(default_factory=list)
    replayed: list[tuple[PendingCommit, CommitResponse | CommitConflict]] = field(default_factory=list)
    later: list[PendingCommit] = field(default_factory=list)
    """Left for the next group: a resend racing its original, or what followed a mid-commit rejection."""

    def reject_all(self, model: ConflictModel) -> None:
        """The commit point failed for the whole group: whoever was decided is rejected with `model`."""
        decided = [*self.committed, *(m for m, _ in self.rejected)]
        for member in decided:
            member.snapshots.clear()
        self.committed, self.rejected = [], [(m, model) for m in decided]

    def answer(self) -> None:
        for member in self.committed:
            response = CommitResponse(
                snapshots=refs(member.snapshots),
                deduplicated=False,
                timings=member.timings,
                group_size=len(self.committed),
            )
            member.succeed(response)
        for member, conflict in self.rejected:
            member.fail(CommitConflict(conflict))
        for member, answer in self.replayed:
            if isinstance(answer, CommitConflict):
                member.fail(answer)
            else:
                member.succeed(answer)


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
    ) -> None:
        self._engine = engine
        self._bookkeeping = bookkeeping
        self._tables = tables
        self._holds = holds
        self._clock = clock
        self._max_group = max_group
        self._states = TableStates(fileio)
        self.publication = Publication(engine, bookkeeping, fileio, tables, holds, self._states)
        self._queues: dict[str, CommitQueue] = {}
        self._queues_guard = threading.Lock()
        self._metrics = metrics
        self._events = CommitEvents(metrics)
        self._in_flight = InFlight()
        self._after_commit: AfterCommit | None = None

    def after_each_commit(self, hook: AfterCommit) -> None:
        """Run `hook` after every commit that made a snapshot (retention); its failures are its own."""
        self._after_commit = hook

    def commit(
        self, table_id: str, request: CommitRequest, *, idempotency_key: str | None = None
    ) -> CommitResponse:
        """Commit one committable; a resend of a committed one returns its snapshots with deduplicated=true.

        Every answer is logged and counted (see observability.commit_events).

        Raises:
            TableNotFound, InvalidRequest, CommitConflict, LockUnavailable.
        """
        who = (request.commit_user, request.identifier)
        resolved: ResolvedCommittable | None = None
        try:
            table = self._tables.get(table_id)
            resolved = resolve_committable(request, table.shape, now_millis=self._clock.local_millis())
            response = self._commit(table, resolved, idempotency_key)
        except CommitConflict as rejected:
            self._events.answered(table_id, who, resolved, "rejected", conflict=rejected.conflict)
            raise
        except LockUnavailable as busy:
            self._events.answered(table_id, who, resolved, "lock_unavailable", error=busy.message)
            raise
        except (InvalidRequest, TableNotFound) as invalid:
            self._events.answered(table_id, who, resolved, "invalid", error=invalid.message)
            raise
        except Exception as error:
            self._events.answered(table_id, who, resolved, "failed", error=repr(error))
            raise
        outcome: Outcome = "deduplicated" if response.deduplicated else "committed"
        self._events.answered(table_id, who, resolved, outcome, response=response)
        if response.snapshots and not response.deduplicated and self._after_commit is not None:
            self._after_commit(table.id, response.snapshots[-1].id)
        return response

    def in_flight(self) -> list[InFlightCommitModel]:
        """The commits this instance is working on, oldest first, with the phase each is in."""
        now = time.perf_counter()
        return [
            InFlightCommitModel(
                table_id=table_id,
                commit_user=member.resolved.commit_user,
                identifier=member.resolved.identifier,
                phase=member.current,
                started_at=member.started_at,
                elapsed_ms=round((now - member.started) * 1000, 3),
                timings=dict(member.timings),
            )
            for table_id, member in self._in_flight.oldest_first()
        ]

    def queued(self, table_id: str) -> int:
        """Commits to this table waiting in this process for the current group to finish."""
        return self._queue(table_id).depth

    def in_flight_file_names(self, table_id: str) -> set[str]:
        """Names of the files that commits waiting in this process will name: not orphans."""
        return {name for resolved in self._queue(table_id).waiting() for name in resolved.file_names}

    def forget_state(self, table_id: str) -> None:
        """Drop the in-memory state of a table whose snapshots changed outside a commit (a rollback)."""
        self._states.invalidate(table_id)

    def recover(self) -> list[str]:
        """At start-up: publish what a crash left committed but unpublished (see publication)."""
        return self.publication.recover()

    def _commit(self, table: Table, resolved: ResolvedCommittable, key: str | None) -> CommitResponse:
        started = time.perf_counter()
        if key is not None:
            # A terminal answer recorded for this key is replayed without waiting for the lock; the
            # commitUser + identifier check happens under the lock, where it cannot race.
            with read_only(self._engine) as conn:
                stored = repo.find_by_idempotency_key(conn, table.id, key)
            if stored is not None:
                answer = recorded_answer(stored)
                if isinstance(answer, CommitConflict):
                    raise answer
                return answer
        pending = PendingCommit(resolved, key, started)
        pending.waited("validate")
        pending.current = "lockWait"
        with self._in_flight.tracking(table.id, pending):
            return self._queue(table.id).run(pending, lambda take: self._commit_group(table, take))

    def _queue(self, table_id: str) -> CommitQueue:
        with self._queues_guard:
            queue = self._queues.get(table_id)
            if queue is None:
                queue = self._queues[table_id] = CommitQueue(self._max_group)
            return queue

    def _commit_group(self, table: Table, take: TakeGroup) -> list[PendingCommit]:
        """Hold the table, then take the group; decide every member, finish, and answer.

        Returns the members left for the next group.
        """
        with self._holds.hold([table], "commit") as hold:
            acquired = time.perf_counter()
            group = take()
            self._metrics.group_size.observe(len(group))
            for member in group:
                member.waited("lockWait", acquired)
            result = self._decide(table, group, hold)
            self._finish(table, result, hold)
        result.answer()
        return result.later

    def _decide(self, table: Table, group: list[PendingCommit], hold: Hold) -> _GroupResult:
        with timed_together(group, "reconcile"):
            with read_only(self._engine) as conn:
                context = group_context(conn, table, group)
                unpublished = repo.unpublished_snapshots(conn, table.id) if context.has_unpublished else []
            state = self.publication.catch_up(table, context.latest_snapshot_id, unpublished)
        result = _GroupResult()
        previous_id = state.snapshot_id
        taken: set[tuple[str, int] | str] = set()
        try:
            for index, member in enumerate(group):
                stored = context.recorded(member.key, member.idempotency_key)
                if stored is not None:
                    result.replayed.append((member, recorded_answer(stored)))
                    continue
                claims = {member.key} | ({member.idempotency_key} if member.idempotency_key else set())
                if claims & taken:
                    result.later.append(member)  # a resend racing its original is decided after it
                    continue
                taken |= claims
                if not self._build(table, state, member, group, result):
                    # Part of this committable already advanced the in-memory state: the rest of the
                    # group waits for a state rebuilt from what is committed.
                    result.later.extend(group[index + 1 :])
                    self._states.invalidate(table.id)
                    break
            files = [SnapshotFile.of(s) for m in result.committed for s in m.snapshots]
            if result.committed:
                now = self._clock.now()
                change = TableChange(
                    table, previous_id, files, [history_row(m, now) for m in result.committed]
                )
                with timed_together(result.committed, "commitPoint"):
                    commit_point(hold, [change])
        except Conflict as conflict:
            # The commit point failed for the whole group (lease lost, head moved): nothing is written.
            self._discard(table, state)
            result.reject_all(conflict_model(self._engine, table, conflict))
            return result
        except IntegrityError:
            # A unique index saw a commit this group's context did not: answer from what is recorded.
            self._discard(table, state)
            return self._answer_recorded(table, group)
        except BaseException:
            self._discard(table, state)
            raise
        state.manifests.keep_written()
        with timed_together(result.committed, "publish"):
            self.publication.write(table, files)
        return result

    def _build(
        self,
        table: Table,
        state: TableState,
        member: PendingCommit,
        group: list[PendingCommit],
        result: _GroupResult,
    ) -> bool:
        """Plan, check and write one member's snapshots on top of `state`; False when a rejection came
        after part of it had advanced the state."""
        mark = state.manifests.checkpoint()
        try:
            with member.timed("conflictCheck"):
                check_base_snapshot(member.resolved.base_snapshot_id, state.snapshot_id)
                plans = plan_snapshots(member.resolved, state.live, table.shape)
            for plan in plans:
                self._build_snapshot(table, state, plan, member)
        except Conflict as conflict:
            state.manifests.discard_since(mark)
            built = [s for m in group for s in m.snapshots]
            result.rejected.append((member, conflict_model(self._engine, table, conflict, built)))
            if member.snapshots:
                member.snapshots.clear()
                return False
            return True
        result.committed.append(member)
        return True

    def _build_snapshot(
        self, table: Table, state: TableState, plan: SnapshotPlan, member: PendingCommit
    ) -> None:
        shape = table.shape
        with member.timed("conflictCheck"):
            plan = replace(plan, entries=with_live_metadata(plan.entries, state.live))
            check_conflicts(
                state.live,
                plan.entries,
                check_bucket_count=plan.check_bucket_count,
                decode_key=shape.decode_key if shape.has_primary_key else None,
            )
        with member.timed("manifestWrite"):
            manifests = state.manifests
            base = merge_manifests(state.data_manifests, state.options, manifests.read, manifests.write)
            delta = manifests.write(list(plan.entries)) if plan.entries else []
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
                now_millis=self._clock.millis(),
                snapshot_uuid=str(uuid.uuid4()),
            )
            state.live.apply(plan.entries, snapshot.id)
            state.snapshot = snapshot
            state.data_manifests = base + delta
            member.snapshots.append(snapshot)

    def _discard(self, table: Table, state: TableState) -> None:
        state.manifests.discard_since(0)
        self._states.invalidate(table.id)

    def _answer_recorded(self, table: Table, group: list[PendingCommit]) -> _GroupResult:
        result = _GroupResult()
        with read_only(self._engine) as conn:
            context = group_context(conn, table, group)
        for member in group:
            member.snapshots.clear()
            stored = context.recorded(member.key, member.idempotency_key)
            if stored is None:
                member.fail(RuntimeError("the commit point hit a unique index without a recorded commit"))
            else:
                result.replayed.append((member, recorded_answer(stored)))
        return result

    def _finish(self, table: Table, result: _GroupResult, hold: Hold) -> None:
        """One transaction after publishing: mark the snapshots published, complete the history (phase
        timings, rejections) and release the lock; losing it in a crash only means publishing again."""
        finished = time.perf_counter()
        for member in result.committed:
            member.timings["total"] = round((finished - member.started) * 1000, 3)
        if not result.committed and not result.rejected:
            return
        now = self._clock.now()
        with self._bookkeeping.begin() as conn:
            published = [s.id for m in result.committed for s in m.snapshots]
            if published:
                repo.mark_published(conn, table.id, through=published[-1])
            repo.update_commit_timings(conn, table.id, [(*m.key, m.timings) for m in result.committed])
            repo.insert_commits(conn, table.id, [history_row(m, now, c) for m, c in result.rejected])
            hold.release_in(conn)
