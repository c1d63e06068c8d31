"""Multi-table transactions: several tables' changes committed all or nothing (`POST /transactions`).

The third door into the one commit pipeline. Each table's part is a PendingCommit, decided as a single
commit is (catch-up, conflict rules, manifests) on top of its table's state. The locks are taken
together in table-id order (TableHolds.hold), so two transactions, or a transaction and single commits
or maintenance, never deadlock. One commit point (commit_records.commit_point) checks every lease,
moves every head and records every table's snapshots and history row; only then is each table's
snapshot published, and one finishing transaction marks them published and releases the locks.

A conflict on any table rejects the whole transaction: nothing is recorded, the manifests written for
it are deleted, and no table changes. A resend of the same commitUser and identifier finds every table's
part recorded and answers those snapshots. A crash after the commit point leaves the snapshots recorded
but unpublished; every table's next commit, a resend, or the start-up recovery publishes them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from coordinator.clock import Clock
from coordinator.db import repositories as repo
from coordinator.db.repositories import live_files
from coordinator.domain.committable import ResolvedCommittable
from coordinator.domain.conflicts import Conflict
from coordinator.errors import (
    CommitConflict,
    CoordinatorError,
    DataFileMissing,
    InvalidRequest,
    LockUnavailable,
    Unavailable,
)
from coordinator.observability.metrics import Metrics
from coordinator.usecases.commit_queue import (
    AfterCommit,
    InFlight,
    after_commit,
    timed_together,
)
from coordinator.usecases.commit_records import (
    GroupResult,
    TableChanged,
    commit_point,
    conflict_model,
    current_context,
    record_finish,
    refs,
    table_change,
)
from coordinator.usecases.file_checks import FileChecks
from coordinator.usecases.member_decision import Decider, decide_member
from coordinator.usecases.publication import Publication
from coordinator.usecases.reapplication import reapplying
from coordinator.usecases.resends import relation_to_record, standing_commit
from coordinator.usecases.table_hold import Hold, TableHolds
from coordinator.usecases.table_state import TableState, TableStates
from coordinator.usecases.tables import Table, Tables
from coordinator.usecases.transaction_parts import (
    TransactionPart,
    identifier_reused,
    intake_parts,
    placed,
    placed_file,
    recorded_answer,
)
from coordinator_client.models import (
    TableSnapshots,
    TransactionRequest,
    TransactionResponse,
)

DECIDE_ATTEMPTS = 3
"""Looks at the tables under one hold before giving up (see Transactions._decide_all)."""

log = logging.getLogger(__name__)


class _DecideAgain(Exception):
    """Nothing was written; the transaction is decided again against the tables as they are now."""


class Transactions:
    def __init__(
        self,
        engine: Engine,
        bookkeeping: Engine,
        tables: Tables,
        holds: TableHolds,
        states: TableStates,
        publication: Publication,
        decider: Decider,
        file_checks: FileChecks,
        in_flight: InFlight,
        *,
        clock: Clock,
        metrics: Metrics,
        max_tables: int,
    ) -> None:
        self._engine = engine
        self._bookkeeping = bookkeeping
        self._tables = tables
        self._holds = holds
        self._states = states
        self._publication = publication
        self._decider = decider
        self._file_checks = file_checks
        self._in_flight = in_flight
        self._clock = clock
        self._metrics = metrics
        self.max_tables = max_tables
        self.after_commit: AfterCommit | None = None
        """Retention, run for each table once the transaction stands (Committer.after_each_commit)."""
        self._open: dict[int, list[TransactionPart]] = {}
        """The transactions this process is working on, for the files they name (not orphans)."""
        self._open_guard = threading.Lock()

    def file_names(self, table_id: str) -> set[str]:
        """The files that transactions in flight here name in this table."""
        with self._open_guard:
            parts = [p for open_parts in self._open.values() for p in open_parts if p.table.id == table_id]
        return {name for p in parts for name in p.member.resolved.file_names}

    def commit(self, request: TransactionRequest) -> TransactionResponse:
        """Every table gets its snapshot(s), or none does.

        Raises:
            InvalidRequest, TableNotFound, DataFileMissing: naming the field (`tables[i]...`); nothing
                changed.
            CommitConflict: a conflict on one table, named in the conflict's `table`; no table changed.
            LockUnavailable: a lock stayed busy past the acquire timeout.
        """
        started = time.perf_counter()
        try:
            parts = intake_parts(request, self._tables, self.max_tables, self._clock.local_millis(), started)
            for part in parts:
                self._verify_files(part)
            timings = {"validate": _ms(started)}
            # One entry in the ops API for the whole transaction, under its first table.
            lead = parts[0].member
            lead.current = "lockWait"
            with (
                self._opened(parts),
                self._in_flight.tracking(parts[0].table.id, lead),
                self._holds.hold([p.table for p in parts], "commit") as hold,
            ):
                timings["lockWait"] = round(_ms(started) - timings["validate"], 3)
                response = self._decide_all(parts, hold)
                if not response.deduplicated:
                    self._finish(parts, hold)
        except CommitConflict:
            self._metrics.transactions.labels("rejected").inc()
            raise
        except Unavailable:  # a lock stayed busy, or the store failed: 503, to be sent again
            self._metrics.transactions.labels("unavailable").inc()
            raise
        except CoordinatorError:
            self._metrics.transactions.labels("invalid").inc()
            raise
        except Exception:
            self._metrics.transactions.labels("failed").inc()
            raise
        outcome = "deduplicated" if response.deduplicated else "committed"
        self._metrics.transactions.labels(outcome).inc()
        log.info(
            "transaction %s/%d %s: %s",
            request.commit_user,
            request.identifier,
            outcome,
            ", ".join(f"{t.table} {[s.id for s in t.snapshots]}" for t in response.tables),
        )
        timings.update(response.timings, total=_ms(started))
        if not response.deduplicated:
            for answered in response.tables:
                if answered.snapshots:
                    after_commit(self.after_commit, answered.table, answered.snapshots[-1].id, self._metrics)
        return response.model_copy(update={"timings": timings})

    @contextmanager
    def _opened(self, parts: list[TransactionPart]) -> Iterator[None]:
        with self._open_guard:
            self._open[id(parts)] = parts
        try:
            yield
        finally:
            with self._open_guard:
                del self._open[id(parts)]

    def _verify_files(self, part: TransactionPart) -> None:
        """Every file the part adds is on storage and what it claims (file_checks), unless the
        transaction stands already: a resend may name files that maintenance has removed since, and is
        answered from the record.

        Raises:
            DataFileMissing or its kin: naming the file (`tables[i].messages[j].newFiles[k]`).
        """
        try:
            self._file_checks.verify(part.table, part.member.resolved)
        except DataFileMissing as missing:
            if standing_commit(self._engine, part.table.id, part.member.resolved) is None:
                raise placed_file(missing, part.index) from None

    def _decide_all(self, parts: list[TransactionPart], hold: Hold) -> TransactionResponse:
        """Decide the transaction; again when a table changed under the hold before the commit point (it
        was dropped and created again, or altered) or a unique index saw a record of this commitUser and
        identifier that the first look did not: nothing was written either time."""
        for _ in range(DECIDE_ATTEMPTS):
            try:
                return self._decide(parts, hold)
            except _DecideAgain:
                continue
        raise LockUnavailable(  # as for a busy lock: nothing was done, and a resend may succeed
            f"the tables changed under the transaction {DECIDE_ATTEMPTS} times; nothing was written, "
            "send it again",
            retry_after_seconds=1,
        )

    def _decide(self, parts: list[TransactionPart], hold: Hold) -> TransactionResponse:
        """Every part decided under the locks, then one commit point for all, then publication.

        Raises:
            _DecideAgain: nothing was written; the tables are looked at again.
        """
        decided_at = time.perf_counter()
        members = [p.member for p in parts]
        recorded: list[tuple[TransactionPart, repo.StoredCommit]] = []
        try:
            for part in parts:
                stored = self._decide_part(part, hold)
                if stored is not None:
                    recorded.append((part, stored))
            if recorded:  # a resend: each part returned its record before building anything
                return recorded_answer(parts, recorded)
            for part in parts:
                assert part.result is not None
                part.change = table_change(part.table, part.state_at, part.result, self._clock.now())
            with timed_together(members, "commitPoint"):
                commit_point(hold, [p.change for p in parts if p.change is not None])
            # Recorded: every part's manifests stand now, whatever becomes of the publication below.
            for part in parts:
                assert part.state is not None
                part.state.manifests.keep_written()
        except Conflict as conflict:  # a lease ran out, or a head moved: nothing was written
            self._discard(parts)
            raise CommitConflict(conflict_model(self._engine, parts[0].table, conflict)) from None
        except TableChanged as changed:
            # As for a single commit: the catch-up may have indexed the old table's files under the new
            # one's id; forgotten, the index is built again by the next catch-up.
            self._discard(parts)
            with hold.fenced() as conn:
                live_files.reset_index(conn, str(changed))
            raise _DecideAgain from None
        except IntegrityError:
            self._discard(parts)
            raise _DecideAgain from None
        except BaseException:
            self._discard(parts)
            raise
        decided = _ms(decided_at)
        published_at = time.perf_counter()
        for part in parts:
            self._publish(part)
        return TransactionResponse(
            tables=[TableSnapshots(table=p.table.id, snapshots=refs(p.member.snapshots)) for p in parts],
            timings={"decide": decided, "publish": _ms(published_at)},
        )

    def _publish(self, part: TransactionPart) -> None:
        assert part.result is not None
        assert part.change is not None
        self._publication.publish_group(part.table, part.change.snapshots, part.result)
        if part.result.later:
            # Only a writer that bypasses the coordinator can take an id the commit point gave us.
            raise RuntimeError(
                f"a writer outside the coordinator took a snapshot id of {part.table.id} before this "
                "transaction's snapshot was published there"
            )

    def _decide_part(self, part: TransactionPart, hold: Hold) -> repo.StoredCommit | None:
        """One table's part on top of its state; returns its record when it was committed before (a
        resend), else None.

        Raises:
            CommitConflict: naming the table; InvalidRequest: naming the field.
        """
        member = part.member
        with timed_together([member], "reconcile"):
            table, context, unpublished = current_context(
                self._engine, self._tables, self._states, part.table, [member]
            )
            state, lost = self._publication.catch_up(table, context, unpublished)
        part.table, part.state = table, state
        if lost:
            self._reapply(table, state, lost, hold)
        part.state_at = state.snapshot_id
        stored = context.recorded(member.record_key, None)
        if stored is not None and stored.outcome == "committed":
            if relation_to_record(stored, member.resolved, None) != "resend":
                raise identifier_reused(part, stored, "with other changes")
            return stored
        member.resolve_for(table, now_millis=self._clock.local_millis())  # its errors name `tables[i]`
        part.result = result = GroupResult()
        hold.check_alive()
        decide_member(self._decider, table, state, member, [member], result)
        if member in result.committed:
            return None
        for rejected, conflict in result.rejected:
            if rejected is member:
                message = f"{table.id}: {conflict.message}"
                raise CommitConflict(conflict.model_copy(update={"table": table.id, "message": message}))
        for invalid_member, error in result.invalid:
            if invalid_member is member and isinstance(error, InvalidRequest):
                raise placed(error, part.index)
        raise RuntimeError(f"the part of {table.id} was neither committed nor rejected")

    def _reapply(self, table: Table, state: TableState, lost: list[ResolvedCommittable], hold: Hold) -> None:
        """Acknowledged commits an outside writer overwrote go back first, at a commit point of their own
        (the catch-up has marked them overwritten): they stand whatever becomes of the transaction."""
        group = [reapplying(table, resolved) for resolved in lost]
        result = GroupResult()
        at = state.snapshot_id
        for each in group:
            hold.check_alive()
            decide_member(self._decider, table, state, each, group, result)
        change = table_change(table, at, result, self._clock.now())
        if change is not None:
            commit_point(hold, [change])
            state.manifests.keep_written()
            self._publication.publish_group(table, change.snapshots, result)

    def _finish(self, parts: list[TransactionPart], hold: Hold) -> None:
        results = [(p.table, p.result) for p in parts if p.result is not None]
        record_finish(self._bookkeeping, results, hold, self._clock.now())
        for _, result in results:
            result.answer()  # the re-applied commits of an overwritten head, which nobody waits for

    def _discard(self, parts: list[TransactionPart]) -> None:
        """Nothing of the transaction stands: the manifests written for it go, and every state touched is
        rebuilt from what is committed."""
        for part in parts:
            if part.state is not None:
                self._states.discard(part.table.id, part.state)
            part.member.unbuild()


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
