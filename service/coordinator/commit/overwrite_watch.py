"""The periodic check for acknowledged snapshots that an outside writer overwrote.

Every catch-up already compares the table's head on storage with what was recorded, but a table may see
no further commit through the coordinator for hours. This thread looks, every `interval` seconds, at the
heads of the tables committed to within `RECENT_SECONDS` (an outside writer overwrites in the moments
between its own check and its copy, so older heads are safe), one read each; a head found overwritten
is taken back under the table's lock (Committer.reconcile), which applies the lost commit again.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from sqlalchemy import Engine

from coordinator.db import repositories as repo
from coordinator.errors import CoordinatorError

if TYPE_CHECKING:
    from coordinator.commit.pipeline import Committer

log = logging.getLogger(__name__)

RECENT_SECONDS = 120.0


class OverwriteWatch:
    def __init__(self, engine: Engine, committer: Committer, interval: float) -> None:
        self._engine = engine
        self._committer = committer
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="overwrite-watch", daemon=True)

    def start(self) -> None:
        if self._interval > 0:
            self._thread.start()

    def check(self) -> list[str]:
        """One pass; returns the tables whose overwritten head was taken back."""
        with self._engine.connect() as conn:
            recent = repo.committed_since(conn, time.time() - RECENT_SECONDS)
        fixed = []
        for table_id, latest in recent:
            try:
                if self._committer.reconcile(table_id, latest):
                    fixed.append(table_id)
            except (CoordinatorError, OSError) as error:  # the next pass tries again
                log.warning("checking the head of %s failed: %r", table_id, error)
        return fixed

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.check()
            except Exception as error:  # the database is down, say: the next pass tries again
                log.warning("checking the heads of recently committed tables failed: %r", error)
