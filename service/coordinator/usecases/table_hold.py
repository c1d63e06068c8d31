"""Holding tables for a change: the one way commits and maintenance take, keep and fence table locks.

A change to one or more tables goes: acquire every table's lock in table-id order (so two changes
naming the same tables never deadlock), keep every lease alive while the change is worked out, then
write it in one database transaction that first checks every lease is still ours (the epoch fence).
A holder whose lease ran out or was force-released before that transaction gets one answer whatever
it was doing: a retryable LOCK_LOST conflict, and nothing it prepared becomes visible.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Literal

from sqlalchemy import Connection, Engine

from coordinator.clock import Clock
from coordinator.db import repositories as repo
from coordinator.domain.conflicts import Conflict
from coordinator.errors import CommitConflict
from coordinator.locks.base import Lease, LockBackend, process_owner
from coordinator.locks.renewal import LeaseKeeper
from coordinator.observability.metrics import Metrics
from coordinator.usecases.hold_ends import HoldEnds
from coordinator.usecases.tables import Table
from coordinator_client.models import ConflictModel

Holder = Literal["commit", "maintenance"]


def lock_lost(lease: Lease) -> Conflict:
    """The conflict of a holder fenced off its table: retryable, since nothing of it was written."""
    return Conflict(
        "LOCK_LOST",
        f"the lease on {lease.lock_id} (epoch {lease.epoch}) ran out before the change was written",
        retryable=True,
    )


class Hold:
    """The leases of the tables one change holds, by table id."""

    def __init__(self, engine: Engine, locks: LockBackend, clock: Clock) -> None:
        self._engine = engine
        self._locks = locks
        self.leases: dict[str, Lease] = {}
        self._clock = clock
        self._released: set[str] = set()
        self.keepers: list[LeaseKeeper] = []

    def fence(self, conn: Connection, table_ids: Collection[str] | None = None) -> None:
        """Inside the change's transaction: every lease (of `table_ids`, if given) is still ours, or nothing
        is written.

        Raises:
            Conflict: LOCK_LOST.
        """
        lost = self.lost_lease(conn, table_ids)
        if lost is not None:
            raise lock_lost(self.leases[lost])

    def lost_lease(self, conn: Connection, table_ids: Collection[str] | None = None) -> str | None:
        """Inside the caller's transaction: the first table (of `table_ids`, if given) whose lease is no
        longer ours; None when all still are."""
        for table_id, lease in self.leases.items():
            if table_ids is not None and table_id not in table_ids:
                continue
            if not self._locks.still_held(conn, lease):
                return table_id
        return None

    def check_alive(self, table_id: str | None = None) -> None:
        """Give up early when a lease keeper already found a lease (the table's, if given) lost: nothing
        written would commit.

        Raises:
            Conflict: LOCK_LOST.
        """
        for (held, lease), keeper in zip(self.leases.items(), self.keepers, strict=True):
            if keeper.lost and table_id in (None, held):
                raise lock_lost(lease)

    @contextmanager
    def fenced(self, table_ids: Collection[str] | None = None) -> Iterator[Connection]:
        """A transaction that commits only while every lease of the hold (of `table_ids`, if given) is
        still ours."""
        with self._engine.begin() as conn:
            self.fence(conn, table_ids)
            yield conn

    def record(
        self, conn: Connection, table_id: str, *, actor: str, action: str, details: dict[str, object]
    ) -> None:
        """A maintenance action into the table's history, inside the caller's fenced transaction."""
        repo.insert_maintenance(
            conn, table_id, actor=actor, action=action, details=details, now=self._clock.now()
        )

    @property
    def engine(self) -> Engine:
        return self._engine

    def leases_in_database(self) -> dict[str, Lease] | None:
        """The hold's leases by table id when its locks live in the metadata database (the lock table):
        then one statement there can fence them, or release them, beside its own writes. None otherwise."""
        return dict(self.leases) if self._locks.in_metadata_database else None

    def released_by_statement(self) -> None:
        """A statement of the caller's released every lease (one_statement.finish): the hold's end does not
        release them again, nobody renews them, and this process's waiters try at once."""
        self._stop_renewing()
        for table_id, lease in self.leases.items():
            self._released.add(table_id)
            self._locks.wake_waiters(lease.lock_id)

    def release_in(self, conn: Connection) -> None:
        """Release every lease as part of the caller's transaction; the hold's end then does nothing."""
        self._stop_renewing()
        for table_id, lease in self.leases.items():
            if table_id not in self._released:
                self._locks.release_in(conn, lease)
                self._released.add(table_id)

    def release(self) -> None:
        self._stop_renewing()
        for table_id, lease in self.leases.items():
            if table_id not in self._released:
                self._released.add(table_id)
                self._locks.release(lease)

    def _stop_renewing(self) -> None:
        for keeper in self.keepers:
            keeper.stop()


class TableHolds:
    """Takes table locks for commits and maintenance, with lease keepers and lock metrics."""

    def __init__(
        self,
        engine: Engine,
        locks: LockBackend,
        *,
        lease_seconds: float,
        acquire_timeout_seconds: float,
        metrics: Metrics,
        clock: Clock,
    ) -> None:
        self._engine = engine
        self._locks = locks
        self._lease_seconds = lease_seconds
        self.acquire_timeout = acquire_timeout_seconds
        self._metrics = metrics
        self._clock = clock
        self._instance = process_owner()
        self.ends = HoldEnds(metrics)

    @contextmanager
    def hold(self, tables: Sequence[Table], holder: Holder) -> Iterator[Hold]:
        """Hold the tables until the block ends, their leases renewed meanwhile.

        A LOCK_LOST conflict escaping the block becomes the 409 a client sees.

        Raises:
            LockUnavailable: a lock stayed busy past the acquire timeout (nothing is held then).
            CommitConflict: LOCK_LOST.
        """
        owner = self._owner(holder)
        deadline = time.monotonic() + self.acquire_timeout
        self.ends.settled([t.id for t in tables])

        def acquire(hold: Hold, keepers: ExitStack) -> None:
            for table in sorted(tables, key=lambda t: t.id):
                remaining = max(0.0, deadline - time.monotonic())
                # Renewed from the moment it is held: waiting for the next lock must not expire it.
                self._keep(hold, keepers, table.id, self._locks.acquire(table.lock_id, owner, remaining))

        with self._holding(holder, acquire) as hold:
            yield hold

    @contextmanager
    def hold_free(self, tables: Sequence[Table], holder: Holder) -> Iterator[Hold]:
        """Hold those of the tables whose locks are free now, without waiting for the others (their ids
        are not in the hold's leases): one statement on PostgreSQL for all of them (a batch of tables).

        Raises:
            CommitConflict: LOCK_LOST.
        """
        owner = self._owner(holder)
        self.ends.settled([t.id for t in tables])

        def acquire(hold: Hold, keepers: ExitStack) -> None:
            by_lock = {table.lock_id: table for table in tables}
            for lock_id, lease in sorted(self._locks.try_acquire_many(list(by_lock), owner).items()):
                self._keep(hold, keepers, by_lock[lock_id].id, lease)

        with self._holding(holder, acquire) as hold:
            yield hold

    def end_later(self, holding: ExitStack, hold: Hold, finish: Callable[[], None]) -> None:
        """End the hold entered in `holding` on an ending thread: `finish`, then the hold's end (its locks
        released unless `finish` released them); its tables are ending here until then (hold_ends.py)."""
        ending = holding.pop_all()

        def end() -> None:
            with ending:
                finish()

        self.ends.end_later(hold.leases, end)

    def close(self) -> None:
        """Every hold still ending here ends first."""
        self.ends.close()

    def _owner(self, holder: Holder) -> str:
        return f"{self._instance}{'' if holder == 'commit' else f'-{holder}'}-{uuid.uuid4().hex[:12]}"

    def _keep(self, hold: Hold, keepers: ExitStack, table_id: str, lease: Lease) -> None:
        hold.leases[table_id] = lease
        hold.keepers.append(keepers.enter_context(LeaseKeeper(self._locks, lease, self._lease_seconds)))

    @contextmanager
    def _holding(self, holder: Holder, acquire: Callable[[Hold, ExitStack], None]) -> Iterator[Hold]:
        asked = time.perf_counter()
        hold = Hold(self._engine, self._locks, self._clock)
        acquired: float | None = None
        try:
            with ExitStack() as keepers:
                acquire(hold, keepers)
                acquired = time.perf_counter()
                self._metrics.lock_wait_seconds.labels(holder).observe(acquired - asked)
                yield hold
        except Conflict as conflict:
            raise CommitConflict(unplaced_conflict(conflict)) from None
        finally:
            hold.release()
            if acquired is not None:
                self._metrics.lock_hold_seconds.labels(holder).observe(time.perf_counter() - acquired)

    def held_elsewhere(self, tables: Sequence[Table]) -> str | None:
        """The URL of another replica that holds one of the tables' locks now and answers there (a commit
        is sent on to join that holder's group); None when every lock is free, held here, or its holder
        left no address."""
        for table in sorted(tables, key=lambda t: t.id):
            url = self._locks.holder_elsewhere(table.lock_id)
            if url is not None:
                return url
        return None

    def try_hold_one(self, lock_id: str, purpose: str) -> Lease | None:
        """One attempt at a table's lock without waiting (start-up recovery leaves busy tables alone)."""
        return self._locks.try_acquire(lock_id, f"{self._instance}-{purpose}")

    def release(self, lease: Lease) -> None:
        self._locks.release(lease)


def unplaced_conflict(conflict: Conflict) -> ConflictModel:
    """The wire form of a conflict without its partition and winning snapshot, which need the table."""
    return ConflictModel(
        type=conflict.type,
        message=conflict.message,
        bucket=conflict.bucket,
        files=list(conflict.files),
        retryable=conflict.retryable,
    )
