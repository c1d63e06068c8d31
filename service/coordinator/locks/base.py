"""The LockBackend protocol: what the commit path needs from a distributed lock."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import Connection


def process_owner() -> str:
    """This service process as lock owners name it (host and pid), so ops can tell who holds a lock."""
    return f"{os.uname().nodename}-{os.getpid()}"


@dataclass(frozen=True)
class Lease:
    """Proof of holding a lock: the epoch fences this holder once someone else takes the lock over."""

    lock_id: str
    owner: str
    epoch: int


@dataclass(frozen=True)
class HeldLock:
    lock_id: str
    owner: str
    epoch: int
    acquired_at_ms: int
    expires_at_ms: int
    holder_url: str | None = None


class LockBackend(Protocol):
    """A lock with a lease: acquire waits up to a timeout, renew extends, release is owner-checked.

    Every acquisition gets an epoch larger than any earlier one of the same lock, so a holder that was
    force-released or outlived its lease can be told apart from the current one.
    """

    in_metadata_database: bool
    """Whether the locks live in the metadata database (the lock table), so that one statement there
    can fence and release them beside its own writes (db/repositories/one_statement.py)."""

    def acquire(self, lock_id: str, owner: str, timeout_seconds: float) -> Lease:
        """Take the lock, waiting with backoff; raises LockUnavailable after the timeout."""
        ...

    def try_acquire(self, lock_id: str, owner: str) -> Lease | None:
        """One attempt without waiting: the lease, or None when someone else holds the lock."""
        ...

    def try_acquire_many(self, lock_ids: Sequence[str], owner: str) -> dict[str, Lease]:
        """One attempt at each lock without waiting: the leases of those that were free, by lock id."""
        ...

    def holder_elsewhere(self, lock_id: str) -> str | None:
        """The URL another replica holding the lock answers at, when the backend records one (commits
        are forwarded there); None when the lock is free, held here, or the holder is unknown."""
        ...

    def renew(self, lease: Lease) -> bool:
        """Extend the lease; False when the lease was lost (expired and taken over, or force-released)."""
        ...

    def release(self, lease: Lease) -> None:
        """Give the lock back, only if this lease still holds it."""
        ...

    def wake_waiters(self, lock_id: str) -> None:
        """The lock was released by a statement of the caller's own (one_statement.finish): this
        process's waiters for it try at once."""
        ...

    def release_in(self, conn: Connection, lease: Lease) -> None:
        """Release as part of the caller's metadata transaction when the backend lives in that database;
        otherwise release at once."""
        ...

    def still_held(self, conn: Connection, lease: Lease) -> bool:
        """At the commit point, inside the caller's transaction: whether the lease is ours and alive."""
        ...

    def force_release(self, lock_id: str) -> HeldLock | None:
        """Administrative release of whoever holds the lock; returns what was released (None if free).
        The old holder is fenced: its renewals and its commit point fail."""
        ...

    def held(self) -> list[HeldLock]:
        """Locks currently held (lease not expired)."""
        ...

    def now_ms(self) -> int:
        """The clock that acquired and expiry times are on (the database's, the metastore's)."""
        ...

    def close(self) -> None:
        """Let go of connections the backend keeps (not the locks: their holders release those)."""
        ...
