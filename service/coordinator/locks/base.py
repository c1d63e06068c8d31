"""The LockBackend protocol: what the commit path needs from a distributed lock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


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


class LockBackend(Protocol):
    """A lock with a lease: acquire waits up to a timeout, renew extends, release is owner-checked."""

    def acquire(self, lock_id: str, owner: str, timeout_seconds: float) -> Lease:
        """Take the lock, waiting with backoff; raises LockUnavailable after the timeout."""
        ...

    def renew(self, lease: Lease) -> bool:
        """Extend the lease; False when the lease was lost (expired and taken over, or force-released)."""
        ...

    def release(self, lease: Lease) -> None:
        """Give the lock back, only if this lease still holds it."""
        ...

    def held(self) -> list[HeldLock]:
        """Locks currently held (lease not expired)."""
        ...
