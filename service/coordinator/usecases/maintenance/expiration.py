"""Snapshot expiration: asked for, or after commits when the retention may allow it (in the committing
thread, or on a background thread), in bounded batches that let waiting commits through.

Deleting works in Paimon's safe order (data files, changelog files, manifests, then snapshot files), so
a crash half way leaves at worst files nobody references, which orphan cleanup removes later, and never
a snapshot pointing at a missing file.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from coordinator.commit.queue import CommitQueues
from coordinator.db import repositories as repo
from coordinator.domain.file_references import FileReferences, only_removed
from coordinator.domain.retention import Retention, expire_end
from coordinator.locks.lock_table import MAX_POLL_SECONDS
from coordinator.usecases.maintenance.consumers import read_consumers
from coordinator.usecases.maintenance.table_actions import Deleted, TableActions
from coordinator.usecases.table_hold import Hold
from coordinator.usecases.tables import Table
from coordinator_client.models import ExpireResponse
from paimon_format.manifest import FileKind
from paimon_format.snapshot import EARLIEST, Snapshot, format_hint

log = logging.getLogger(__name__)

AUTO_EXPIRE = "auto-expire"
"""The actor the history names for expiration that runs after commits."""

WRITE_ONLY = "write-only"
"""Paimon's option for tables whose expiration runs elsewhere: commits then never expire snapshots."""


@dataclass
class _Batch:
    """One lock hold of an expiration."""

    snapshots: int
    deleted: Deleted
    consumers: list[str]
    maybe_more: bool = False
    """The batch stopped at snapshot.expire.limit, so another may find more; any other bound (the
    retained minimum, a consumer, time-retained) holds for the next batch too."""


class Expiration:
    def __init__(self, actions: TableActions, queues: CommitQueues) -> None:
        self._actions = actions
        self._queues = queues
        self._earliest: dict[tuple[str, str], tuple[int, int]] = {}
        """Per table (id and uuid: a table dropped and created again by another replica is another
        table), the earliest snapshot's id and commit time as last seen: the cheap test that spares a
        commit any storage access when nothing can expire."""
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="expire")
        self._scheduled: set[str] = set()
        self._running: dict[str, int] = {}
        """Expirations under way in this process, per table: a commit does not start another."""
        self._guard = threading.Lock()

    def close(self) -> None:
        self._background.shutdown(wait=True)

    def forget(self, table_id: str) -> None:
        """Drop what this process knows of the table's earliest snapshot (a rollback changed it)."""
        for key in [k for k in list(self._earliest) if k[0] == table_id]:
            self._earliest.pop(key, None)

    def expire(self, table_id: str, *, actor: str) -> ExpireResponse:
        """Expire what the table's retention allows, one lock hold per `snapshot.expire.limit` snapshots.

        Between batches the lock is free and commits waiting in this process go first.

        Raises: TableNotFound, LockUnavailable, CommitConflict (LOCK_LOST).
        """
        table = self._actions.tables.get(table_id)
        with self._guard:
            self._running[table_id] = self._running.get(table_id, 0) + 1
        try:
            return self._expire_all(table, actor)
        finally:
            with self._guard:
                self._running[table_id] -= 1

    def after_commit(self, table_id: str, latest: int) -> None:
        """Expire after a commit when the retention may allow it: in the caller's thread (execution-mode
        sync) or on the background thread (async). Any failure, even in deciding whether to expire, is
        logged: the commit stands and its answer does not change."""
        try:
            self._after_commit(table_id, latest)
        except Exception:
            log.exception("expiring snapshots of %s after a commit failed", table_id)
            self._actions.metrics.post_commit_failures.labels("retention").inc()

    def _after_commit(self, table_id: str, latest: int) -> None:
        # The commit read the table's row under its lock a moment ago: the cached table is that one.
        table = self._actions.tables.cached(table_id)
        options = table.shape.schema.options
        with self._guard:
            if options.get(WRITE_ONLY, "false").lower() == "true" or self._running.get(table_id):
                return  # expiration is left to someone else, or already under way here
        try:
            retention = Retention.of(options)
        except ValueError:
            return
        if not self._may_expire(table, retention, latest):
            return
        if retention.execution_mode == "sync":
            self.expire(table_id, actor=AUTO_EXPIRE)
            return
        with self._guard:
            if table_id in self._scheduled:
                return
            self._scheduled.add(table_id)
        self._background.submit(self._expire_scheduled, table_id)

    def _expire_scheduled(self, table_id: str) -> None:
        with self._guard:
            self._scheduled.discard(table_id)
        try:
            self.expire(table_id, actor=AUTO_EXPIRE)
        except Exception:
            log.exception("expiring snapshots of %s after a commit failed", table_id)
            self._actions.metrics.post_commit_failures.labels("retention").inc()

    def _may_expire(self, table: Table, retention: Retention, latest: int) -> bool:
        known = self._earliest.get((table.id, table.uuid))
        if known is None:
            earliest = self._actions.earliest_id(table)
            if earliest is None:
                return False
            known = self._earliest[(table.id, table.uuid)] = (
                earliest,
                self._actions.snapshot(table, earliest).time_millis,
            )
        earliest, earliest_time = known
        count = latest - earliest + 1
        if count <= retention.retained_min:
            return False
        if count > retention.retained_max:
            return True
        return earliest_time < self._actions.clock.millis() - retention.time_retained_ms

    def _expire_all(self, table: Table, actor: str) -> ExpireResponse:
        actions = self._actions
        table_id = table.id
        deleted, expired, batches, consumers = Deleted(), 0, 0, []
        while True:
            with actions.hold(table) as hold:
                table = actions.tables.refresh(table_id)
                with actions.audited(hold, table, actor=actor, action="expire"):
                    batch = self._expire_batch(table, hold, actor)
            expired += batch.snapshots
            consumers += batch.consumers
            deleted.add(batch.deleted)
            if batch.snapshots:
                batches += 1
            if not batch.maybe_more:
                break
            self._let_commits_through(table_id)
        if expired:
            actions.metrics.expired_snapshots.inc(expired)
            actions.metrics.expirations.labels("after-commit" if actor == AUTO_EXPIRE else "api").inc()
        latest = actions.tables.latest_snapshot_id(table_id)
        return ExpireResponse(
            expired_snapshots=expired,
            batches=batches,
            earliest_snapshot_id=actions.earliest_id(table),
            latest_snapshot_id=latest or None,
            expired_consumers=consumers,
            deleted=deleted.model(),
        )

    def _expire_batch(self, table: Table, hold: Hold, actor: str) -> _Batch:
        actions = self._actions
        retention = Retention.of(table.shape.schema.options)
        expired_consumers = self._expire_idle_consumers(table, retention)
        earliest = actions.earliest_id(table)
        latest = actions.tables.latest_snapshot_id(table.id)
        if earliest is None or latest == 0:
            return _Batch(0, Deleted(), expired_consumers)
        consumers = [c.next_snapshot_id for c in read_consumers(actions.fileio, table)]
        snapshots: dict[int, Snapshot] = {}

        def snapshot(snapshot_id: int) -> Snapshot:
            if snapshot_id not in snapshots:
                snapshots[snapshot_id] = actions.snapshot(table, snapshot_id)
            return snapshots[snapshot_id]

        end = expire_end(
            earliest,
            latest,
            retention,
            consumer_next=min(consumers) if consumers else None,
            time_millis_of=lambda i: snapshot(i).time_millis,
            now_millis=actions.clock.millis(),
        )
        if end <= earliest:
            self._earliest[(table.id, table.uuid)] = (earliest, snapshot(earliest).time_millis)
            return _Batch(0, Deleted(), expired_consumers)
        files = actions.files(table)
        tags = actions.tags(table).values()
        kept = snapshot(end)
        expired = [snapshot(i) for i in range(earliest, end)]
        keep = FileReferences.of(
            data=files.live_paths(kept).union(*(files.live_paths(t) for t in tags)),
            manifests=files.manifest_paths(kept).union(*(files.manifest_paths(t) for t in tags)),
        )
        removed = FileReferences.of(
            # A file removed by a snapshot in (earliest, end] was live only in snapshots that now expire.
            data=set().union(
                *(files.delta_paths(snapshot(i), FileKind.DELETE) for i in range(earliest + 1, end + 1))
            ),
            changelog=set().union(*(files.changelog_paths(s) for s in expired)),
            manifests=set().union(*(files.manifest_paths(s) for s in expired)),
        )
        gone = actions.deletable(table, only_removed(removed, keep))
        deleted = Deleted(
            data_files=actions.delete(table, gone.data),
            changelog_files=actions.delete(table, gone.changelog),
            manifests=actions.delete(table, gone.manifests),
        )
        for s in expired:  # oldest first: what is left is always a contiguous range
            actions.fileio.delete(table.layout.snapshot(s.id))
        deleted.snapshots = len(expired)
        actions.fileio.overwrite(table.layout.hint(EARLIEST), format_hint(end))
        details: dict[str, object] = {
            "snapshots": [earliest, end - 1],
            "earliestSnapshotId": end,
            "expiredConsumers": expired_consumers,
            "deleted": deleted.model().model_dump(by_alias=True),
        }
        with actions.recorded(hold, table, actor=actor, action="expire", details=details) as conn:
            repo.delete_snapshots(conn, table.id, below=end)
        self._earliest[(table.id, table.uuid)] = (end, kept.time_millis)
        return _Batch(len(expired), deleted, expired_consumers, len(expired) == retention.expire_limit)

    def _let_commits_through(self, table_id: str) -> None:
        """Between two batches: commits queued in this process take the lock first, and waiters in other
        processes get at least one attempt (they poll at most MAX_POLL_SECONDS apart)."""
        deadline = time.monotonic() + self._actions.acquire_timeout
        while self._queues.depth(table_id) and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(MAX_POLL_SECONDS * 1.2)

    def _expire_idle_consumers(self, table: Table, retention: Retention) -> list[str]:
        if retention.consumer_expiration_ms is None:
            return []
        idle_since = self._actions.clock.now() - retention.consumer_expiration_ms / 1000
        expired = [
            c.consumer_id for c in read_consumers(self._actions.fileio, table) if c.modified_at < idle_since
        ]
        for consumer_id in expired:
            self._actions.fileio.delete(table.layout.consumer(consumer_id))
        return expired
