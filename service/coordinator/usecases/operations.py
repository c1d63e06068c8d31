"""What on-call engineers ask of a running coordinator: who holds which lock and who waits behind it,
which commits are in flight and in which phase, what happened lately; and the forced release of a
stuck lock, which fences its holder and is audited."""

from __future__ import annotations

import logging
from collections import defaultdict

from sqlalchemy import Connection, Engine

from coordinator.access.audit import AuditLog
from coordinator.commit.in_flight import InFlight
from coordinator.db import repositories as repo
from coordinator.db.engine import read_only
from coordinator.db.repositories.transaction_history import committed_rows_of
from coordinator.db.scope import TableScope
from coordinator.errors import LockNotFound, PathOutsideTable
from coordinator.locks.base import LockBackend
from coordinator.observability.metrics import Metrics
from coordinator.usecases import path_refusals
from coordinator.usecases.hold_ends import HoldEnds
from coordinator.usecases.reads import commit_record
from coordinator.usecases.tables import TABLE_LOCK_PREFIX
from coordinator_client.models import (
    AuditEntryModel,
    AuditListResponse,
    CommitRecordModel,
    CommitsOverviewResponse,
    InFlightCommitModel,
    LockListResponse,
    LockModel,
    LockWaiterModel,
    ReleaseLockResponse,
    TableSnapshots,
)

log = logging.getLogger(__name__)


def table_of_lock(lock_id: str) -> str | None:
    return lock_id.removeprefix(TABLE_LOCK_PREFIX) if lock_id.startswith(TABLE_LOCK_PREFIX) else None


class Operations:
    def __init__(
        self,
        engine: Engine,
        locks: LockBackend,
        ends: HoldEnds,
        in_flight: InFlight,
        audit: AuditLog,
        metrics: Metrics,
    ) -> None:
        self._engine = engine
        self._locks = locks
        self._ends = ends
        self._in_flight = in_flight
        self._audit = audit
        self._metrics = metrics

    def locks(self, scope: TableScope | None = None) -> LockListResponse:
        """Held locks with the commits of this instance waiting for each (waiters in other instances
        show on their own /locks); with `scope`, only the locks of the tables inside it."""
        waiting: dict[str, list[LockWaiterModel]] = defaultdict(list)
        for commit in _in_scope(self._in_flight.listing(), scope):
            if commit.phase == "lockWait":
                waiting[commit.table_id].append(
                    LockWaiterModel(
                        table_id=commit.table_id,
                        commit_user=commit.commit_user,
                        identifier=commit.identifier,
                        waiting_ms=commit.elapsed_ms,
                    )
                )
        locks = []
        self._ends.settled()  # the locks of commits answered here are released
        for held in self._locks.held():
            table_id = table_of_lock(held.lock_id)
            if scope is not None and (table_id is None or not scope.covers(table_id)):
                continue
            locks.append(
                LockModel(
                    lock_id=held.lock_id,
                    table_id=table_id,
                    owner=held.owner,
                    epoch=held.epoch,
                    acquired_at=held.acquired_at_ms / 1000,
                    expires_at=held.expires_at_ms / 1000,
                    holder_url=held.holder_url,
                    waiters=waiting.get(table_id, []) if table_id else [],
                )
            )
        return LockListResponse(now=self._locks.now_ms() / 1000, locks=locks)

    def force_release(self, lock_id: str, *, actor: str) -> ReleaseLockResponse:
        """Release whoever holds `lock_id`. Its holder is fenced: its commit point fails with LOCK_LOST
        and nothing it wrote becomes visible. Audited.

        Raises:
            LockNotFound: nobody holds the lock (free, expired, or never taken); nothing was done, so
                nothing is audited.
        """
        released = self._locks.force_release(lock_id)
        if released is None:
            raise LockNotFound(f"nobody holds the lock {lock_id}: there is nothing to release")
        details = {"owner": released.owner, "epoch": released.epoch}
        self._audit.record(actor, "force-release-lock", lock_id, {"released": details})
        self._metrics.forced_releases.inc()
        log.warning(
            "lock force-released",
            extra={"lockId": lock_id, "owner": released.owner, "epoch": released.epoch, "actor": actor},
        )
        return ReleaseLockResponse(lock_id=lock_id, released=True, owner=released.owner, epoch=released.epoch)

    def commits(
        self, *, limit: int, table_id: str | None = None, scope: TableScope | None = None
    ) -> CommitsOverviewResponse:
        """Commits in flight in this instance, and the latest recorded ones of every instance; with
        `scope`, of the tables inside it only, and a transaction's entry names only those."""
        with read_only(self._engine) as conn:
            stored = repo.list_commits(conn, table_id, limit, scope)
            if table_id is not None:
                stored += _other_parts(conn, stored, scope)
        in_flight = [c for c in _in_scope(self._in_flight.listing(), scope) if table_id in (None, c.table_id)]
        records = one_entry_per_transaction([commit_record(c) for c in stored])
        if table_id is not None:
            records = [r for r in records if r.table_id == table_id]  # not the other parts themselves
        return CommitsOverviewResponse(in_flight=in_flight, recent=scoped_records(records, scope))

    def audit_path_refusal(self, actor: str, table_id: str, refused: PathOutsideTable, door: str) -> None:
        """A request that named a path outside its table, in the audit log with the token that sent it
        (the use case that refused it logged the line; only the door knows the caller)."""
        details = {"door": door, "field": refused.field, "reason": refused.message}
        self._audit.record(actor[:200], path_refusals.ACTION, table_id, details)

    def audit(self, *, limit: int) -> AuditListResponse:
        return AuditListResponse(
            entries=[
                AuditEntryModel(
                    id=e.id, at=e.at, actor=e.actor, action=e.action, target=e.target, details=e.details
                )
                for e in self._audit.latest(limit)
            ]
        )


def _in_scope(commits: list[InFlightCommitModel], scope: TableScope | None) -> list[InFlightCommitModel]:
    """The commits in flight on a table inside `scope`; a transaction's only with its tables inside,
    under the first of them."""
    if scope is None:
        return commits
    shown = []
    for commit in commits:
        tables = [t for t in (commit.tables or [commit.table_id]) if scope.covers(t)]
        if tables:
            update = {"table_id": tables[0], "tables": tables if commit.tables else None}
            shown.append(commit.model_copy(update=update))
    return shown


def scoped_records(records: list[CommitRecordModel], scope: TableScope | None) -> list[CommitRecordModel]:
    """History as a token limited to `scope` sees it: a transaction's entry names only the tables
    inside (in `transaction` and in `details`), so that it learns nothing of the others."""
    if scope is None:
        return records
    shown = []
    for record in records:
        update: dict[str, object] = {}
        if record.transaction is not None:
            update["transaction"] = [t for t in record.transaction if scope.covers(t.table)]
        tables = (record.details or {}).get("transaction")
        if isinstance(tables, list):
            inside = [t for t in tables if scope.covers(str(t))]
            update["details"] = {**(record.details or {}), "transaction": inside}
        shown.append(record.model_copy(update=update) if update else record)
    return shown


def _other_parts(
    conn: Connection, stored: list[repo.StoredCommit], scope: TableScope | None
) -> list[repo.StoredCommit]:
    """For a history of one table: the rows the listed transactions recorded for their other tables
    (inside `scope`), so that each entry lists every table's snapshots (one_entry_per_transaction picks
    each one's)."""
    asked: set[tuple[str, int, tuple[str, ...]]] = set()
    found: dict[int, repo.StoredCommit] = {}
    for row in stored:
        tables = (row.details or {}).get("transaction")
        if row.outcome != "committed" or not isinstance(tables, list):
            continue
        key = (row.commit_user, row.identifier, tuple(str(t) for t in tables))
        if key in asked:
            continue
        asked.add(key)
        others = [t for t in key[2] if t != row.table_id and (scope is None or scope.covers(t))]
        for part in committed_rows_of(conn, others, row.commit_user, row.identifier):
            if (part.details or {}).get("transaction") == tables:
                found[part.id] = part
    # After the page's own rows, so a transaction's entry stands where its row of this table stood.
    return sorted(found.values(), key=lambda r: r.id, reverse=True)


def one_entry_per_transaction(records: list[CommitRecordModel]) -> list[CommitRecordModel]:
    """The rows of one multi-table transaction (one per table) as one entry, where its first listed row
    stood, listing each table's snapshots. A commit user's transactions under the batch identifier share
    their name; each takes, per table, the row recorded nearest in time to its own (one commit point)."""
    parts: dict[tuple[str, int, tuple[str, ...]], list[CommitRecordModel]] = {}
    for record in records:
        tables = _transaction_tables(record)
        if tables is not None:
            parts.setdefault((record.commit_user, record.identifier, tables), []).append(record)
    shown: set[int] = set()
    entries = []
    for record in records:
        tables = _transaction_tables(record)
        if tables is None:
            entries.append(record)
            continue
        if record.id in shown:
            continue  # a part of a transaction already listed
        chosen = {record.table_id: record}
        for part in parts[(record.commit_user, record.identifier, tables)]:
            best = chosen.get(part.table_id)
            if part.id not in shown and (best is None or _apart(part, record) < _apart(best, record)):
                chosen[part.table_id] = part
        shown.update(r.id for r in chosen.values())
        listed = [
            TableSnapshots(table=t, snapshots=chosen[t].snapshots if t in chosen else []) for t in tables
        ]
        entries.append(record.model_copy(update={"transaction": listed}))
    return entries


def _transaction_tables(record: CommitRecordModel) -> tuple[str, ...] | None:
    """The tables of the committed transaction `record` is a part of; None for any other row."""
    tables = (record.details or {}).get("transaction")
    if record.outcome != "committed" or not isinstance(tables, list):
        return None
    return tuple(str(t) for t in tables)


def _apart(a: CommitRecordModel, b: CommitRecordModel) -> float:
    return abs(a.created_at - b.created_at)
