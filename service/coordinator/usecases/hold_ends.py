"""Holds that end after their commits were answered: the finish and the locks' release off the answer's path.

A commit stands once the commit point recorded it and its snapshot-N is on storage. What a hold does
after that (the finish: snapshots marked published, the history's timings and rejections, the locks
released) changes nothing its writers' answers depend on, yet took a database round trip between the
last file write and every answer: 0.7 ms of a 7 to 9 ms commit in turn (bench/README.md). So a commit's
hold ends on an ending thread, while its members are answered.

A table whose hold is still ending in this process is waited for, not polled through the lock table:
by the next hold of it here (TableHolds.hold and hold_free) and by this process's reads of the table's
locks and history (`settled`), so a writer that reads back through the replica it committed through
sees its commit as finished. Another replica may see the lock held for as long as the finish takes, as
it would any holder's; snapshot reads serve a snapshot whose file is on storage whether or not it is
marked published yet (usecases/snapshot_documents.py). An ending that fails is logged and counted
(coordinator_post_commit_failures_total{step="finish"}): its snapshots are on storage already, the
mark is made by the next commit's catch-up or by recovery, and a lock it could not release runs out.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor

from coordinator.observability.metrics import Metrics

log = logging.getLogger(__name__)

ENDING_THREADS = 2
"""Threads ending holds. One table has at most one hold ending at a time (its next hold waits for it),
so they end in any order; two keep a slow finish of one batch from delaying the next batch's."""
SETTLE_TIMEOUT_SECONDS = 30.0
"""How long a hold or a read waits for an ending hold before it goes on without it (the next hold then
waits for the lock as for any holder's; a read shows what the database has)."""


class HoldEnds:
    """The holds of this process still ending, and the threads that end them."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._threads = ThreadPoolExecutor(ENDING_THREADS, thread_name_prefix="hold-end")
        self._ending: dict[int, list[str]] = {}
        """The tables of each hold still ending, by the order it was handed over in."""
        self._handed = 0
        self._changed = threading.Condition()

    def end_later(self, table_ids: Collection[str], end: Callable[[], None]) -> None:
        """Run `end` (a hold's finish and release) on an ending thread; until it returns, the tables are
        ending here."""
        with self._changed:
            self._handed += 1
            turn = self._handed
            self._ending[turn] = list(table_ids)
        try:
            self._threads.submit(self._end, turn, end)
        except RuntimeError:  # shut down: ended here, as before there were ending threads
            self._end(turn, end)

    def settled(self, table_ids: Collection[str] | None = None) -> None:
        """Return once the holds of the tables (of any table, when None) that were ending here when it was
        called have ended; later ones are not waited for, so a busy table never keeps a reader waiting."""
        with self._changed:
            if not self._ending:
                return
            mark = self._handed
            wanted = None if table_ids is None else set(table_ids)

            def ended() -> bool:
                return not any(
                    turn <= mark and (wanted is None or not wanted.isdisjoint(ids))
                    for turn, ids in self._ending.items()
                )

            self._changed.wait_for(ended, SETTLE_TIMEOUT_SECONDS)

    def close(self) -> None:
        """Wait for every ending hold to end (before the engines are disposed)."""
        self._threads.shutdown(wait=True)

    def _end(self, turn: int, end: Callable[[], None]) -> None:
        try:
            end()
        except Exception:
            tables = ", ".join(self._ending[turn])
            log.exception("the finish of a hold on %s failed; its commits stand", tables)
            self._metrics.post_commit_failures.labels("finish").inc()
        finally:
            with self._changed:
                del self._ending[turn]
                self._changed.notify_all()
