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
import time
from dataclasses import dataclass

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from coordinator.clock import Clock
from coordinator.db import repositories as repo
from coordinator.db.engine import read_only
from coordinator.db.repositories import live_files
from coordinator.domain.committable import ResolvedCommittable, resolve_committable
from coordinator.domain.conflicts import Conflict
from coordinator.errors import (
    CommitConflict,
    CoordinatorError,
    DataFileMissing,
    InvalidRequest,
    TableNotFound,
)
from coordinator.observability.metrics import Metrics
from coordinator.usecases.commit_queue import InFlight, Intake, PendingCommit, timed_together
from coordinator.usecases.commit_records import (
    GroupResult,
    TableChange,
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
from coordinator.usecases.table_hold import Hold, TableHolds
from coordinator.usecases.table_state import TableState, TableStates
from coordinator.usecases.tables import Table, Tables, version_of
from coordinator_client.models import (
    CommitRequest,
    TableSnapshots,
    TransactionRequest,
    TransactionResponse,
    TransactionTableChange,
)

DECIDE_ATTEMPTS = 3
"""Looks at the tables under one hold before giving up (see Transactions._decide_all)."""

log = logging.getLogger(__name__)


class _DecideAgain(Exception):
    """Nothing was written; the transaction is decided again against the tables as they are now."""


@dataclass
class _Part:
    """One table's part of a transaction, as decided under the locks."""

    index: int
    """Its position in the request's `tables`, for the field an error names."""
    table: Table
    member: PendingCommit
    state: TableState | None = None
    result: GroupResult | None = None
    change: TableChange | None = None
    state_at: int = 0
    """The head its part was decided on top of."""


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
            parts = self._intake(request, started)
            for part in parts:
                self._verify_files(part)
            timings = {"validate": _ms(started)}
            # One entry in the ops API for the whole transaction, under its first table.
            lead = parts[0].member
            lead.current = "lockWait"
            with (
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
        return response.model_copy(update={"timings": timings})

    def _intake(self, request: TransactionRequest, started: float) -> list[_Part]:
        if len(request.tables) > self.max_tables:
            raise InvalidRequest(
                f"a transaction changes at most {self.max_tables} tables; this one names "
                f"{len(request.tables)} (setting transaction_max_tables)",
                field="tables",
            )
        names = [change.table for change in request.tables]
        parts: list[_Part] = []
        for i, change in enumerate(request.tables):
            if change.table in names[:i]:
                raise InvalidRequest(
                    f"table {change.table} is named twice (tables[{names.index(change.table)}] and "
                    f"tables[{i}]): send one change per table",
                    field=f"tables[{i}].table",
                )
            try:
                table = self._tables.get(change.table)
            except TableNotFound:
                raise TableNotFound(
                    f"table {change.table} does not exist", field=f"tables[{i}].table"
                ) from None
            intake = _intake_of(_commit_request(request, change), i)
            resolved, _ = intake(table, self._clock.local_millis())
            member = PendingCommit(resolved, None, started, intake, version_of(table))
            member.transaction = tuple(names)
            parts.append(_Part(i, table, member))
        return parts

    def _verify_files(self, part: _Part) -> None:
        """Every file the part adds is on storage with its size, unless the transaction stands already:
        a resend may name files that maintenance has removed since, and is answered from the record.

        Raises:
            DataFileMissing: naming the table's messages (`tables[i].messages`).
        """
        try:
            self._file_checks.verify(part.table, part.member.resolved)
        except DataFileMissing as missing:
            user, identifier = part.member.key
            with read_only(self._engine) as conn:
                if repo.find_committed(conn, part.table.id, user, identifier) is None:
                    raise DataFileMissing(missing.message, field=f"tables[{part.index}].messages") from None

    def _decide_all(self, parts: list[_Part], hold: Hold) -> TransactionResponse:
        """Decide the transaction; again when a table changed under the hold before the commit point (it
        was dropped and created again, or altered) or a unique index saw a record of this commitUser and
        identifier that the first look did not: nothing was written either time."""
        for _ in range(DECIDE_ATTEMPTS - 1):
            try:
                return self._decide(parts, hold)
            except _DecideAgain:
                continue
        return self._decide(parts, hold)

    def _decide(self, parts: list[_Part], hold: Hold) -> TransactionResponse:
        """Every part decided under the locks, then one commit point for all, then publication.

        Raises:
            _DecideAgain: nothing was written; the tables are looked at again.
        """
        decided_at = time.perf_counter()
        members = [p.member for p in parts]
        recorded: list[tuple[_Part, list[dict[str, object]]]] = []
        try:
            for part in parts:
                stored = self._decide_part(part, hold)
                if stored is not None:
                    recorded.append((part, stored))
            if recorded:
                return self._recorded(parts, recorded)
            for part in parts:
                assert part.result is not None
                part.change = table_change(part.table, part.state_at, part.result, self._clock.now())
            with timed_together(members, "commitPoint"):
                commit_point(hold, [p.change for p in parts if p.change is not None])
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

    def _publish(self, part: _Part) -> None:
        assert part.state is not None
        assert part.result is not None
        assert part.change is not None
        part.state.manifests.keep_written()
        self._publication.publish_group(part.table, part.change.snapshots, part.result)
        if part.result.later:
            # Only a writer that bypasses the coordinator can take an id the commit point gave us.
            raise RuntimeError(
                f"a writer outside the coordinator took a snapshot id of {part.table.id} before this "
                "transaction's snapshot was published there"
            )

    def _decide_part(self, part: _Part, hold: Hold) -> list[dict[str, object]] | None:
        """One table's part on top of its state; returns its recorded snapshots when it was committed
        before (a resend), else None.

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
        part.state_at = state.snapshot_id
        stored = context.recorded(member.key, None)
        if stored is not None and stored.outcome == "committed":
            return stored.snapshots
        try:
            member.resolve_for(table, now_millis=self._clock.local_millis())
        except InvalidRequest as invalid:
            raise _placed(invalid, part.index) from None
        # An acknowledged commit an outside writer overwrote goes first, as in a single commit's group.
        group = [reapplying(table, resolved) for resolved in lost] + [member]
        part.result = result = GroupResult()
        for each in group:
            hold.check_alive()
            decide_member(self._decider, table, state, each, group, result)
        if member in result.committed:
            return None
        for rejected, conflict in result.rejected:
            if rejected is member:
                message = f"{table.id}: {conflict.message}"
                raise CommitConflict(conflict.model_copy(update={"table": table.id, "message": message}))
        for invalid_member, error in result.invalid:
            if invalid_member is member and isinstance(error, InvalidRequest):
                raise _placed(error, part.index)
        raise RuntimeError(f"the part of {table.id} was neither committed nor rejected")

    def _recorded(
        self, parts: list[_Part], recorded: list[tuple[_Part, list[dict[str, object]]]]
    ) -> TransactionResponse:
        """A resend: every part was committed, by this transaction. A part recorded alone means a single
        commit to that table used this commitUser and identifier: refused, nothing written."""
        if len(recorded) != len(parts):
            part = recorded[0][0]
            raise InvalidRequest(
                f"commitUser and identifier were used before by a commit to {part.table.id} that was not "
                "this transaction; a transaction needs an identifier of its own",
                field="identifier",
            )
        self._discard(parts)
        return TransactionResponse(
            tables=[
                TableSnapshots.model_validate({"table": p.table.id, "snapshots": snapshots})
                for p, snapshots in recorded
            ],
            deduplicated=True,
        )

    def _finish(self, parts: list[_Part], hold: Hold) -> None:
        results = [(p.table, p.result) for p in parts if p.result is not None]
        record_finish(self._bookkeeping, results, hold, self._clock.now())
        for _, result in results:
            result.answer()  # the re-applied commits of an overwritten head, which nobody waits for

    def _discard(self, parts: list[_Part]) -> None:
        """Nothing of the transaction stands: the manifests written for it go, and every state touched is
        rebuilt from what is committed."""
        for part in parts:
            if part.state is not None:
                self._states.discard(part.table.id, part.state)
            part.member.unbuild()


def _commit_request(request: TransactionRequest, change: TransactionTableChange) -> CommitRequest:
    """A table's part as the single commit it means (already validated field by field)."""
    return CommitRequest.model_construct(
        commit_user=request.commit_user,
        identifier=request.identifier,
        watermark=change.watermark,
        properties=change.properties,
        overwrite=change.overwrite,
        base_snapshot_id=change.base_snapshot_id,
        messages=change.messages,
    )


def _intake_of(commit: CommitRequest, index: int) -> Intake:
    """Resolves the part against a table (again under the hold, if the table changed meanwhile)."""

    def intake(table: Table, now_millis: int) -> tuple[ResolvedCommittable, None]:
        try:
            return resolve_committable(commit, table.shape, now_millis=now_millis), None
        except InvalidRequest as invalid:
            raise _placed(invalid, index) from None

    return intake


def _placed(invalid: InvalidRequest, index: int) -> InvalidRequest:
    """The error of a table's part, its field named from the transaction's body."""
    field = f"tables[{index}].{invalid.field}" if invalid.field else f"tables[{index}]"
    return InvalidRequest(invalid.message, field=field)


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
