"""Keep a lease alive while a long commit runs."""

from __future__ import annotations

import logging
import threading
import time
from types import TracebackType

from coordinator.locks.base import Lease, LockBackend

log = logging.getLogger(__name__)


class LeaseKeeper:
    """Renews a lease every third of its length until closed; notes when it was lost.

    Every keeper of the process is renewed by one shared daemon thread (_Renewals): most commits are
    over long before their first renewal is due, and a thread of their own cost each of them a start and
    a join on the commit path.
    """

    def __init__(self, backend: LockBackend, lease: Lease, lease_seconds: float) -> None:
        self._backend = backend
        self._lease = lease
        self.interval = max(0.05, lease_seconds / 3)
        self._stopped = False
        self.lost = False

    def __enter__(self) -> LeaseKeeper:
        _renewals.add(self)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop renewing (before the lease is released, so a late renewal is not taken for a loss)."""
        self._stopped = True
        _renewals.remove(self)

    def renew(self) -> bool:
        """One renewal; False once the lease is lost or the keeper stopped (then it is renewed no more)."""
        try:
            renewed = self._backend.renew(self._lease)
        except Exception:  # a failed renewal is retried; the commit point fences us if it keeps failing
            log.exception("renewing lease on %s failed", self._lease.lock_id)
            return True
        if self._stopped:
            return False  # released meanwhile: a renewal that found it gone is no loss
        if not renewed:
            self.lost = True
            log.warning("lease on %s (epoch %d) was lost", self._lease.lock_id, self._lease.epoch)
        return renewed


class _Renewals:
    """The process's one renewal thread: renews each keeper when its interval has passed."""

    def __init__(self) -> None:
        self._due: dict[LeaseKeeper, float] = {}
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, keeper: LeaseKeeper) -> None:
        with self._changed:
            self._due[keeper] = time.monotonic() + keeper.interval
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="lease-renewals", daemon=True)
                self._thread.start()
            self._changed.notify()

    def remove(self, keeper: LeaseKeeper) -> None:
        with self._changed:
            self._due.pop(keeper, None)

    def _run(self) -> None:
        while True:
            with self._changed:
                now = time.monotonic()
                ready = [keeper for keeper, due in self._due.items() if due <= now]
                if not ready:
                    self._changed.wait(min(self._due.values(), default=now + 60.0) - now)
                    continue
                for keeper in ready:
                    self._due[keeper] = now + keeper.interval
            # Outside the condition: a slow renewal must not hold up a commit registering its keeper.
            for keeper in ready:
                if not keeper.renew():
                    self.remove(keeper)


_renewals = _Renewals()
