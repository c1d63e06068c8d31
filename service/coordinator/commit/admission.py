"""Backpressure: before a commit queues, whether this process can answer it in time; if not, a 429.

Every door's commit (the native POST, Paimon's REST commit, a transaction) is admitted here before it
waits for a lock thread or its table's queue, and leaves when it is answered. It is refused with
CommitQueueFull (429 + Retry-After) when the commits admitted before it would take longer to answer than
the limit, on one of its tables or over the whole process:

    table wait     ceil(n_T / MAX_GROUP) * d_T       for each table the commit changes
    process wait   n * s
    refused when   the longest of these waits > limit
    Retry-After    ceil(wait - limit) seconds, at least 1 and at most ceil(limit)

    n_T    commits to table T admitted here and not answered yet: waiting for a lock thread, in T's
           queue, or in the group being committed
    d_T    how long a group of T takes here: the moving average of its turns (from asking for the lock to
           the group answered, queue.py), or the turn running now when it has taken longer already
    n      commits (a transaction is one) admitted here and not answered yet, over every table
    s      this process's seconds per answered commit while it had commits to answer: the wall time with
           at least one admitted, over the commits answered in it, both moving sums over about the last
           SERVICE_WINDOW answers (group commit, and tables committed side by side, make it small)
    limit  commit_queue_max_wait_seconds, by default the lock lease

Only the commits ahead count, never the newcomer's own group: with nothing waiting, every commit is
admitted, so a table whose groups are slower than the limit still commits one group after another, and
what a slow spell taught is replaced by what the next admitted commits take. No estimate yet (no group, no
answer) is no wait. The table wait is what group commit can serve; the process wait is what the lock
threads and the CPU can, where commits to many tables queue (at most 40 of them hold a lock thread, the
rest wait for one, app.py).

Admission only ever turns a commit away before anything of it is read, written or recorded; a commit
that was admitted is always decided, however long it then takes.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, NoReturn

from coordinator.clock import Clock
from coordinator.commit.queue import CommitQueues
from coordinator.errors import CommitQueueFull
from coordinator.observability.metrics import Metrics

Reason = Literal["table", "process"]
REASONS: tuple[Reason, ...] = ("table", "process")

SERVICE_WINDOW = 100
"""The process's seconds per commit is a moving average over about this many answers."""

REFUSALS_KEPT_MINUTES = 24 * 60
"""Refusals are counted per minute this far back: the dashboard's longest window."""


@dataclass(frozen=True)
class Wait:
    """How long the commits ahead of a new one would take to answer, and where they wait."""

    seconds: float
    reason: Reason
    table_id: str | None = None


def table_wait(ahead: int, group_seconds: float | None, max_group: int) -> float:
    """The groups the commits ahead of a new one make in their table's queue, one after another."""
    if ahead <= 0 or group_seconds is None:
        return 0.0
    return math.ceil(ahead / max_group) * group_seconds


def process_wait(ahead: int, seconds_per_commit: float | None) -> float:
    """The commits ahead of a new one, at the rate this process answers commits while busy."""
    if ahead <= 0 or seconds_per_commit is None:
        return 0.0
    return ahead * seconds_per_commit


def retry_after(wait: float, limit: float) -> int:
    """Seconds until the commits ahead, answered at the estimated pace, fit within the limit again."""
    return max(1, min(math.ceil(wait - limit), math.ceil(limit)))


class ServiceTime:
    """The commits admitted and not answered, and the seconds per answer while there were any.

    Not thread-safe: Admission calls it under its lock. Times are seconds on one monotonic clock."""

    def __init__(self, window: int) -> None:
        self._keep = 1 - 1 / window
        self.pending = 0
        self._since = 0.0
        self._busy = 0.0
        self._answered = 0.0

    def arrived(self, now: float) -> None:
        self._advance(now)
        self.pending += 1

    def answered(self, now: float) -> None:
        self._advance(now)
        self.pending -= 1
        self._busy *= self._keep
        self._answered = self._answered * self._keep + 1

    def per_commit(self, now: float) -> float | None:
        """Busy seconds per answered commit; it grows while commits wait and none is answered. None
        before the first answer."""
        self._advance(now)
        return self._busy / self._answered if self._answered else None

    def _advance(self, now: float) -> None:
        if self.pending:
            self._busy += now - self._since
        self._since = now


@dataclass(frozen=True)
class QueueState:
    """What admission sees now, and what it refused in a window: for the dashboard."""

    waiting: int
    """Commits admitted here and not answered yet."""
    wait_seconds: float
    """The longest a new commit would wait now: over the process and every table with commits waiting."""
    limit_seconds: float
    refused: dict[Reason, int]
    """Refusals in the window, by reason."""
    refused_last_minute: int


class Admission:
    """The commits this process admitted and has not answered, and the ones it refused; thread-safe."""

    def __init__(
        self,
        queues: CommitQueues,
        metrics: Metrics,
        clock: Clock,
        *,
        limit_seconds: float,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit_seconds = limit_seconds
        self._queues = queues
        self._metrics = metrics
        self._clock = clock
        self._timer = timer
        self._guard = threading.Lock()
        self._service = ServiceTime(SERVICE_WINDOW)
        self._pending: Counter[str] = Counter()
        """Per table: commits admitted and not answered (only tables with some)."""
        self._refusals: deque[tuple[int, Counter[Reason]]] = deque()
        """(epoch minute, refusals in it by reason), oldest first; minutes without any left out."""

    @contextmanager
    def admitted(self, table_ids: Sequence[str]) -> Iterator[None]:
        """Hold a place for a commit to these tables while the block runs: from its arrival to its
        answer, whatever the answer is.

        Raises:
            CommitQueueFull: the commits ahead of it would take longer than the limit; nothing was done.
        """
        tables = list(dict.fromkeys(table_ids))
        with self._guard:
            now = self._timer()
            wait = self._longest_wait(tables, now)
            if wait.seconds > self.limit_seconds:
                self._refuse(wait)
            self._service.arrived(now)
            self._pending.update(tables)
        try:
            yield
        finally:
            with self._guard:
                self._service.answered(self._timer())
                for table_id in tables:
                    self._pending[table_id] -= 1
                    if self._pending[table_id] <= 0:
                        del self._pending[table_id]

    def state(self, window_minutes: int) -> QueueState:
        """The commits waiting now, the longest wait a new commit would meet, and the refusals of the last
        `window_minutes` minutes (this one included)."""
        this_minute = math.floor(self._clock.now() / 60)
        refused: Counter[Reason] = Counter(dict.fromkeys(REASONS, 0))
        last_minute = 0
        with self._guard:
            wait = self._longest_wait(list(self._pending), self._timer())
            waiting = self._service.pending
            for minute, counts in self._refusals:
                if minute > this_minute - window_minutes:
                    refused.update(counts)
                if minute == this_minute:
                    last_minute = sum(counts.values())
        return QueueState(waiting, wait.seconds, self.limit_seconds, dict(refused), last_minute)

    def _longest_wait(self, tables: Sequence[str], now: float) -> Wait:
        waits = [Wait(process_wait(self._service.pending, self._service.per_commit(now)), "process")]
        for table_id in tables:
            group_seconds = self._queues.group_seconds(table_id)
            ahead = table_wait(self._pending[table_id], group_seconds, self._queues.max_group)
            waits.append(Wait(ahead, "table", table_id))
        return max(waits, key=lambda w: w.seconds)

    def _refuse(self, wait: Wait) -> NoReturn:
        self._metrics.commits_refused.labels(wait.reason).inc()
        minute = math.floor(self._clock.now() / 60)
        if not self._refusals or self._refusals[-1][0] != minute:
            self._refusals.append((minute, Counter()))
        self._refusals[-1][1][wait.reason] += 1
        while self._refusals[0][0] <= minute - REFUSALS_KEPT_MINUTES:
            self._refusals.popleft()
        seconds = retry_after(wait.seconds, self.limit_seconds)
        where = f"table {wait.table_id}" if wait.table_id is not None else "this coordinator process"
        raise CommitQueueFull(
            f"the commits waiting for {where} would take about {wait.seconds:.1f} s to answer, longer than "
            f"the {self.limit_seconds:g} s a commit may wait here; nothing of this one was done: send it "
            f"again in {seconds} s",
            retry_after_seconds=seconds,
            reason=wait.reason,
        )
