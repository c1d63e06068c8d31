"""Hold a commit on a live server after it stands, before its answer goes out.

The hold sits in the service's own after-commit hook (where retention runs): the commit point has
recorded the commit and its snapshot is published, and the committer's answer waits, as it would behind
a slow retention, a GC pause or a stalled network. A client with a shorter timeout loses the answer.
"""

from __future__ import annotations

import threading
from types import TracebackType

from coordinator.services import Services


class HeldAnswer:
    """While active, every commit to `table_id` that stands waits in the server until `release()`."""

    def __init__(self, services: Services, table_id: str, *, limit_seconds: float = 60) -> None:
        self._services = services
        self._table_id = table_id
        self._limit = limit_seconds
        self.reached = threading.Event()
        """Set once a commit stands and waits."""
        self._released = threading.Event()
        self.held: list[int] = []
        """Latest snapshot id of each commit held."""

    def _hold(self, table_id: str, latest: int) -> None:
        if table_id != self._table_id:
            return
        self.held.append(latest)
        self.reached.set()
        # Bounded, so a failing test cannot leave the server's thread waiting for ever.
        self._released.wait(self._limit)

    def release(self) -> None:
        self._released.set()

    def __enter__(self) -> HeldAnswer:
        self._services.committer.after_each_commit(self._hold)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
