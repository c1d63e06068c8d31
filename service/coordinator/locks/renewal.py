"""Keep a lease alive while a long commit runs."""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from coordinator.locks.base import Lease, LockBackend

log = logging.getLogger(__name__)


class LeaseKeeper:
    """Renews a lease every third of its length on a daemon thread until closed; notes when it was lost."""

    def __init__(self, backend: LockBackend, lease: Lease, lease_seconds: float) -> None:
        self._backend = backend
        self._lease = lease
        self._interval = max(0.05, lease_seconds / 3)
        self._stop = threading.Event()
        self.lost = False
        self._thread = threading.Thread(target=self._run, name=f"lease-{lease.lock_id}", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop renewing (before the lease is released, so a late renewal is not taken for a loss)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                if not self._backend.renew(self._lease):
                    self.lost = True
                    log.warning("lease on %s (epoch %d) was lost", self._lease.lock_id, self._lease.epoch)
                    return
            except Exception:  # a failed renewal is retried; the commit point fences us if it keeps failing
                log.exception("renewing lease on %s failed", self._lease.lock_id)
