"""A JDBC-style lock table with leases on the database clock and epoch fencing.

Better than Paimon's JdbcCatalogLock in four ways: the lease is measured on the database clock (no
skew between replicas), an expired row is taken over by the next acquirer (no stale lock needs a
human), the holder renews its lease while a long commit runs, and every acquisition bumps an epoch
that the commit point checks, so a holder that paused past its lease cannot publish anything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from sqlalchemy import Connection, Engine, select, text
from sqlalchemy.exc import IntegrityError
from tenacity import Retrying, retry_if_result, stop_after_delay, wait_random_exponential

from coordinator.db.engine import autocommit, now_ms, read_only
from coordinator.db.models import LockRow
from coordinator.errors import LockUnavailable
from coordinator.locks.base import HeldLock, Lease

_MIN_WAIT = 0.002
MAX_POLL_SECONDS = 0.05
"""The longest a waiter in another process sleeps between attempts: a holder that lets go for longer
than this between two holds is sure to let every such waiter try once."""

CONTENDED_SECONDS = 10.0
"""How long after finding a lock held by another this replica still asks where it is held
(holder_elsewhere): the question is a round trip, and a table written through one replica only, the
usual case, never needs it."""


class LockTable:
    """LockBackend over the `locks` table of the metadata database (PostgreSQL, SQLite, MariaDB).

    Give it the bookkeeping engine (db.engine.bookkeeping_engine): its writes need no WAL flush wait.
    """

    in_metadata_database = True

    def __init__(self, engine: Engine, lease_seconds: float, *, holder_url: str | None = None) -> None:
        """`holder_url`: where this replica answers, recorded with every lock it takes (see
        holder_elsewhere); None records none."""
        self._engine = engine
        self._lease_ms = int(lease_seconds * 1000)
        self._holder_url = holder_url
        now = now_ms(engine).text
        # One statement takes a free or expired lock and bumps the epoch: no read-then-write race.
        self._take_over = text(
            f"UPDATE locks SET owner = :owner, epoch = epoch + 1, acquired_at_ms = {now}, "
            f"expires_at_ms = {now} + :lease, holder_url = :url WHERE lock_id = :lock_id "
            f"AND (owner IS NULL OR expires_at_ms < {now})"
            + (" RETURNING epoch" if engine.dialect.update_returning else "")
        )
        self._returning = engine.dialect.update_returning
        # PostgreSQL only (try_acquire_many): every lock of a batch in one statement, and the rows of
        # those never taken before in one more.
        self._take_over_many = text(
            f"UPDATE locks SET owner = :owner, epoch = epoch + 1, acquired_at_ms = {now}, "
            f"expires_at_ms = {now} + :lease, holder_url = :url WHERE lock_id = ANY(:lock_ids) "
            f"AND (owner IS NULL OR expires_at_ms < {now}) RETURNING lock_id, epoch"
        )
        self._create_many = text(
            f"INSERT INTO locks (lock_id, owner, epoch, acquired_at_ms, expires_at_ms, holder_url) "
            f"SELECT id, :owner, 1, {now}, {now} + :lease, :url FROM unnest(CAST(:lock_ids AS text[])) AS id "
            f"ON CONFLICT (lock_id) DO NOTHING RETURNING lock_id"
        )
        self._create = text(
            f"INSERT INTO locks (lock_id, owner, epoch, acquired_at_ms, expires_at_ms, holder_url) "
            f"VALUES (:lock_id, :owner, 1, {now}, {now} + :lease, :url)"
        )
        self._holder_elsewhere = text(
            f"SELECT holder_url FROM locks WHERE lock_id = :lock_id AND owner IS NOT NULL "
            f"AND expires_at_ms >= {now} AND holder_url IS NOT NULL AND holder_url <> :url"
        )
        self._renew = text(
            f"UPDATE locks SET expires_at_ms = {now} + :lease WHERE lock_id = :lock_id "
            f"AND owner = :owner AND epoch = :epoch AND expires_at_ms >= {now}"
        )
        self._release = text(
            "UPDATE locks SET owner = NULL, expires_at_ms = 0 "
            "WHERE lock_id = :lock_id AND owner = :owner AND epoch = :epoch"
        )
        self._fence = text(
            f"UPDATE locks SET expires_at_ms = expires_at_ms WHERE lock_id = :lock_id "
            f"AND owner = :owner AND epoch = :epoch AND expires_at_ms >= {now}"
        )
        # Conditional on the holder the admin saw, so a lock taken over meanwhile is not released.
        self._force_release = text(
            "UPDATE locks SET owner = NULL, expires_at_ms = 0, epoch = epoch + 1 "
            "WHERE lock_id = :lock_id AND owner = :owner AND epoch = :epoch"
        )
        self._now = text(f"SELECT {now}")
        # Waiters in this process sleep on a condition that a release notifies, so the lock is handed
        # over at once instead of after a backoff; waiters in other processes still poll.
        self._released: dict[str, threading.Condition] = {}
        self._guard = threading.Lock()
        self._contended: dict[str, float] = {}
        """lock_id -> when (time.monotonic) this replica last found it held by someone else."""

    def still_held(self, conn: Connection, lease: Lease) -> bool:
        """In the caller's transaction: whether the lease is ours and alive. The row stays locked until
        that transaction ends, so no one can take the lock over before it commits."""
        params = {"lock_id": lease.lock_id, "owner": lease.owner, "epoch": lease.epoch}
        return bool(conn.execute(self._fence, params).rowcount == 1)

    def try_acquire(self, lock_id: str, owner: str) -> Lease | None:
        """One attempt: the lease, or None when someone else holds a live lease."""
        params = {"lock_id": lock_id, "owner": owner, "lease": self._lease_ms, "url": self._holder_url}
        if self._returning:
            with autocommit(self._engine) as conn:
                epoch = conn.execute(self._take_over, params).scalar()
        else:
            with self._engine.begin() as conn:
                taken = conn.execute(self._take_over, params).rowcount == 1
                epoch = (
                    conn.execute(select(LockRow.epoch).where(LockRow.lock_id == lock_id)).scalar_one()
                    if taken
                    else None
                )
        if epoch is not None:
            return Lease(lock_id, owner, int(epoch))
        with autocommit(self._engine) as conn:
            exists = conn.execute(select(LockRow.lock_id).where(LockRow.lock_id == lock_id)).first()
        if exists is not None:
            self._found_held(lock_id)
            return None
        try:
            with autocommit(self._engine) as conn:
                conn.execute(self._create, params)
        except IntegrityError:
            self._found_held(lock_id)
            return None  # another acquirer created the row first
        return Lease(lock_id, owner, 1)

    def try_acquire_many(self, lock_ids: Sequence[str], owner: str) -> dict[str, Lease]:
        """One attempt at each lock: on PostgreSQL one statement takes every free or expired lock, and one
        more creates the rows of locks never taken before; elsewhere one attempt each."""
        if self._engine.dialect.name != "postgresql":
            leases = {lock_id: self.try_acquire(lock_id, owner) for lock_id in lock_ids}
            return {lock_id: lease for lock_id, lease in leases.items() if lease is not None}
        params = {
            "lock_ids": list(lock_ids),
            "owner": owner,
            "lease": self._lease_ms,
            "url": self._holder_url,
        }
        with autocommit(self._engine) as conn:
            taken = {row.lock_id: row.epoch for row in conn.execute(self._take_over_many, params)}
            missing = [lock_id for lock_id in lock_ids if lock_id not in taken]
            if missing:
                created = conn.execute(self._create_many, {**params, "lock_ids": missing}).scalars().all()
                taken.update((lock_id, 1) for lock_id in created)
        for lock_id in lock_ids:
            if lock_id not in taken:
                self._found_held(lock_id)
        return {lock_id: Lease(lock_id, owner, int(epoch)) for lock_id, epoch in taken.items()}

    def acquire(self, lock_id: str, owner: str, timeout_seconds: float) -> Lease:
        """Take the lock, retrying with jittered exponential backoff until the timeout."""
        released = self._condition(lock_id)

        def sleep(seconds: float) -> None:
            with released:
                released.wait(seconds)

        attempts = Retrying(
            stop=stop_after_delay(timeout_seconds),
            wait=wait_random_exponential(multiplier=_MIN_WAIT, max=MAX_POLL_SECONDS),
            retry=retry_if_result(lambda lease: lease is None),
            sleep=sleep,
            retry_error_callback=lambda _state: None,
        )
        lease: Lease | None = attempts(self.try_acquire, lock_id, owner)
        if lease is None:
            raise LockUnavailable(
                f"lock {lock_id} is held by another writer; gave up after {timeout_seconds:g}s",
                retry_after_seconds=max(1, round(self._lease_ms / 1000 / 4)),
            )
        return lease

    def holder_elsewhere(self, lock_id: str) -> str | None:
        """The URL of another replica holding the lock now, if it recorded one. Asked of the database
        only for a lock this replica found held by another in the last CONTENDED_SECONDS (while the
        answer names a holder, it keeps asking): the first commit of a table held elsewhere waits for
        the lock, the ones after it are sent on."""
        if self._holder_url is None:
            return None  # this replica cannot be reached for forwarding: it does not forward either
        seen = self._contended.get(lock_id)
        if seen is None or time.monotonic() - seen > CONTENDED_SECONDS:
            return None
        with read_only(self._engine) as conn:
            found = conn.execute(self._holder_elsewhere, {"lock_id": lock_id, "url": self._holder_url})
            url: str | None = found.scalar()
        if url is not None:
            self._found_held(lock_id)
        return url

    def _found_held(self, lock_id: str) -> None:
        if self._holder_url is not None:  # a replica that never forwards never asks either
            self._contended[lock_id] = time.monotonic()

    def renew(self, lease: Lease) -> bool:
        """Extend the lease from now; False if it was lost."""
        params = {
            "lock_id": lease.lock_id,
            "owner": lease.owner,
            "epoch": lease.epoch,
            "lease": self._lease_ms,
        }
        with autocommit(self._engine) as conn:
            return bool(conn.execute(self._renew, params).rowcount == 1)

    def release(self, lease: Lease) -> None:
        """Clear the owner if the lease is still ours; a fenced holder releases nothing."""
        params = {"lock_id": lease.lock_id, "owner": lease.owner, "epoch": lease.epoch}
        with autocommit(self._engine) as conn:
            conn.execute(self._release, params)
        self._notify(lease.lock_id)

    def release_in(self, conn: Connection, lease: Lease) -> None:
        """Release inside the caller's transaction, saving a round trip at the end of a commit."""
        conn.execute(self._release, {"lock_id": lease.lock_id, "owner": lease.owner, "epoch": lease.epoch})
        # A woken waiter's take-over waits on the row until the caller's transaction commits.
        self._notify(lease.lock_id)

    def wake_waiters(self, lock_id: str) -> None:
        self._notify(lock_id)

    def _condition(self, lock_id: str) -> threading.Condition:
        with self._guard:
            return self._released.setdefault(lock_id, threading.Condition())

    def _notify(self, lock_id: str) -> None:
        released = self._condition(lock_id)
        with released:
            released.notify()

    def force_release(self, lock_id: str) -> HeldLock | None:
        """Administrative release of a live holder: the epoch moves on at once, fencing the old holder."""
        holder = next((h for h in self.held() if h.lock_id == lock_id), None)
        if holder is None:
            return None
        with autocommit(self._engine) as conn:
            params = {"lock_id": lock_id, "owner": holder.owner, "epoch": holder.epoch}
            released = conn.execute(self._force_release, params).rowcount == 1
        self._notify(lock_id)
        return holder if released else None

    def close(self) -> None:
        """Nothing of its own to close: the engine belongs to the service."""

    def now_ms(self) -> int:
        with self._engine.connect() as conn:
            return int(conn.execute(self._now).scalar_one())

    def held(self) -> list[HeldLock]:
        """Locks whose lease has not run out, on the database clock."""
        with self._engine.connect() as conn:
            now = int(conn.execute(self._now).scalar_one())
            rows = conn.execute(
                select(
                    LockRow.lock_id,
                    LockRow.owner,
                    LockRow.epoch,
                    LockRow.acquired_at_ms,
                    LockRow.expires_at_ms,
                    LockRow.holder_url,
                )
                .where(LockRow.owner.is_not(None), LockRow.expires_at_ms >= now)
                .order_by(LockRow.lock_id)
            ).all()
            return [HeldLock(r[0], r[1] or "", int(r[2]), int(r[3]), int(r[4]), r[5]) for r in rows]
