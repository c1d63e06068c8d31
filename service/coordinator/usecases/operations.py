"""What on-call engineers ask of a running coordinator: who holds which lock and who waits behind it,
which commits are in flight and in which phase, what happened lately; and the forced release of a
stuck lock, which fences its holder and is audited."""

from __future__ import annotations

import logging
from collections import defaultdict

from sqlalchemy import Engine

from coordinator.access.audit import AuditLog
from coordinator.db import repositories as repo
from coordinator.db.engine import read_only
from coordinator.errors import LockNotFound
from coordinator.locks.base import LockBackend
from coordinator.observability.metrics import Metrics
from coordinator.usecases.commits import Committer
from coordinator.usecases.reads import commit_record
from coordinator.usecases.tables import TABLE_LOCK_PREFIX
from coordinator_client.models import (
    AuditEntryModel,
    AuditListResponse,
    CommitRecordModel,
    CommitsOverviewResponse,
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
        self, engine: Engine, locks: LockBackend, committer: Committer, audit: AuditLog, metrics: Metrics
    ) -> None:
        self._engine = engine
        self._locks = locks
        self._committer = committer
        self._audit = audit
        self._metrics = metrics

    def locks(self) -> LockListResponse:
        """Held locks with the commits of this instance waiting for each (waiters in other instances
        show on their own /locks)."""
        waiting: dict[str, list[LockWaiterModel]] = defaultdict(list)
        for commit in self._committer.in_flight():
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
        for held in self._locks.held():
            table_id = table_of_lock(held.lock_id)
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

    def commits(self, *, limit: int, table_id: str | None = None) -> CommitsOverviewResponse:
        """Commits in flight in this instance, and the latest recorded ones of every instance."""
        with read_only(self._engine) as conn:
            stored = repo.list_commits(conn, table_id, limit)
        in_flight = [c for c in self._committer.in_flight() if table_id is None or c.table_id == table_id]
        return CommitsOverviewResponse(
            in_flight=in_flight,
            recent=one_entry_per_transaction([commit_record(c) for c in stored]),
        )

    def audit(self, *, limit: int) -> AuditListResponse:
        return AuditListResponse(
            entries=[
                AuditEntryModel(
                    id=e.id, at=e.at, actor=e.actor, action=e.action, target=e.target, details=e.details
                )
                for e in self._audit.latest(limit)
            ]
        )


def one_entry_per_transaction(records: list[CommitRecordModel]) -> list[CommitRecordModel]:
    """The rows of one multi-table transaction (one per table) as one entry, where its newest row stood,
    listing each table's snapshots."""
    parts: dict[tuple[str, int, tuple[str, ...]], list[CommitRecordModel]] = {}
    for record in records:
        tables = (record.details or {}).get("transaction")
        if record.outcome == "committed" and isinstance(tables, list):
            parts.setdefault((record.commit_user, record.identifier, tuple(tables)), []).append(record)
    entries = []
    for record in records:
        tables = (record.details or {}).get("transaction")
        if record.outcome != "committed" or not isinstance(tables, list):
            entries.append(record)
            continue
        rows = parts.pop((record.commit_user, record.identifier, tuple(tables)), None)
        if rows is None:
            continue  # a later row of a transaction already listed
        by_table = {r.table_id: r.snapshots for r in rows}
        listed = [TableSnapshots(table=t, snapshots=by_table.get(t, [])) for t in tables]
        entries.append(record.model_copy(update={"transaction": listed}))
    return entries
