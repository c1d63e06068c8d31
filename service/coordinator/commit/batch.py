"""Batches: the groups of several tables that are ready at the same moment are committed together.

Group commit (queue) makes one hot table cheap; a load spread over many tables (thousands of streaming
jobs, one table each) gets none of it. So the leader of each table's group joins the process's batch
queue, as a writer joins its table's queue: a leader that finds fewer than `at_once` batches running
commits, in one go, the groups of the tables whose leaders are waiting (up to `max_tables`). Their locks
are taken in one statement, their changes recorded by one commit point and released by one finish, while
each table keeps its own order, its own conflict check and its own answer. A table whose lock is busy is
not waited for in a batch: its leader holds it alone, as before batches.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field

from coordinator.commit.member import Member
from coordinator.commit.queue import TakeGroup
from coordinator.usecases.tables import Table

MAX_TABLES = 32
"""At most this many tables' groups in one batch (setting commit_batch_tables): a batch's latency grows
with its tables."""

BATCHES_AT_ONCE = 2
"""Batches committed at the same time (setting commit_batches_at_once): a batch's leader works through
its tables one after another, so a second batch beside it keeps the database and the store busy while
one of them computes. More do not help: the batches share one interpreter lock, so each one's tables
wait the longer for their answer and the next batch gathers fewer tables (measured: bench/README.md,
"Two batches at once by default")."""


@dataclass(eq=False)
class TableGroup:
    """One table's group waiting for a batch: its leader takes it once the table is held."""

    table: Table
    take: TakeGroup
    later: Future[list[Member] | None] = field(default_factory=Future)
    """The members left for the table's next group once the batch is done; None when the batch could not
    take the table's lock, and its leader holds it alone."""


class Batches:
    """The tables' groups waiting for a batch in this process, and whether a batch is being committed."""

    def __init__(self, max_tables: int = MAX_TABLES, at_once: int = BATCHES_AT_ONCE) -> None:
        self._max_tables = max_tables
        self._at_once = at_once
        self._waiting: deque[TableGroup] = deque()
        self._lock = threading.Lock()
        self._sleepers: dict[TableGroup, threading.Condition] = {}
        """The leaders waiting in next_batch, each woken on its own: waking them all whenever a batch
        ends (a leader per table, dozens under a spread load) cost more CPU than the batch saved."""
        self._committing = 0

    @property
    def waiting(self) -> int:
        """Tables' groups waiting for a batch (not counting those being committed)."""
        with self._lock:
            return len(self._waiting)

    def join(self, group: TableGroup) -> None:
        with self._lock:
            self._waiting.append(group)

    def next_batch(self, group: TableGroup) -> list[TableGroup] | None:
        """Wait until `group` is done (None), or until it is still waiting and fewer than `at_once` batches
        are being committed: then the caller commits the next batch (the first `max_tables` groups
        waiting, its own among them or an earlier one), in `committing`."""
        with self._lock:
            while not group.later.done() and (
                self._committing >= self._at_once or group not in self._waiting
            ):
                sleeper = self._sleepers[group] = threading.Condition(self._lock)
                try:
                    sleeper.wait()
                finally:
                    del self._sleepers[group]
            if group.later.done():
                return None
            self._committing += 1
            count = min(self._max_tables, len(self._waiting))
            batch = [self._waiting.popleft() for _ in range(count)]
            self._wake_next_leader()
            return batch

    @contextmanager
    def committing(self, batch: Sequence[TableGroup]) -> Iterator[None]:
        """The block commits `batch`; if it fails, every group of the batch not yet done shares the error.
        Either way the next batch may start."""
        try:
            yield
        except BaseException as error:
            for group in batch:
                if not group.later.done():
                    group.later.set_exception(error)
        finally:
            for group in batch:
                if not group.later.done():
                    group.later.set_exception(
                        RuntimeError("a batch ended without committing a table's group")
                    )
            with self._lock:
                self._committing -= 1
                for group in batch:
                    self._wake(group)
                self._wake_next_leader()

    def _wake_next_leader(self) -> None:
        """Wake the leader of the first group waiting when another batch may start: it commits the next
        batch. Called with the lock held."""
        if self._waiting and self._committing < self._at_once:
            self._wake(self._waiting[0])

    def _wake(self, group: TableGroup) -> None:
        sleeper = self._sleepers.get(group)
        if sleeper is not None:
            sleeper.notify()
