"""The one clock of the service, injected so tests and replicas agree on what "now" means."""

from __future__ import annotations

import time
from collections.abc import Callable


class Clock:
    """Wall-clock time in the forms Paimon stores: epoch millis and local wall-clock millis."""

    def __init__(self, source: Callable[[], float] = time.time) -> None:
        self._source = source

    def now(self) -> float:
        """Seconds since the epoch (history rows, retention ages)."""
        return self._source()

    def millis(self) -> int:
        """Epoch millis: snapshot and schema `timeMillis` (Paimon's System.currentTimeMillis())."""
        return int(self._source() * 1000)

    def local_millis(self) -> int:
        """Local wall-clock millis: data file `creationTime` (Paimon's LocalDateTime.now()), not UTC."""
        now = self._source()
        return int((now + time.localtime(now).tm_gmtoff) * 1000)
