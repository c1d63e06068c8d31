"""Group commit: the commits to one table that arrive while another commit holds its lock go together.

Each request thread joins its table's queue. When no commit of the table is running in this process, the
first waiting thread gets the next Turn and leads: it takes up to `max_group` queued members, commits them
in one lock hold (one snapshot each, in arrival order) and every member's answer arrives through its
future. With N
writers waiting, the table lock is taken, the state caught up and the commit point written once per
group instead of once per writer, which is what lets throughput grow with the number of writers.

Each queue also times its turns (from the leader asking for the lock to its group answered): how long a
group of this table takes is what admission (admission.py) weighs a new commit's wait with.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

from coordinator.commit.member import Member

MAX_GROUP = 32
"""At most this many queued members are committed in one lock hold."""

TakeGroup = Callable[[], list[Member]]
"""Called by a leader once it holds the table lock: the waiting members that form its group."""

GROUP_SECONDS_WEIGHT = 0.2
"""Each finished turn weighs this much in a table's moving average of group durations: a table whose
groups slow down (a busy lock, a slow store) shows it within a few groups."""


class CommitQueue:
    """The waiting commits of one table in this process, and whether a leader is committing a group."""

    def __init__(self, max_group: int, timer: Callable[[], float] = time.monotonic) -> None:
        self._max_group = max_group
        self._timer = timer
        self._waiting: deque[Member] = deque()
        self._changed = threading.Condition()
        self._leading = False
        self._turn_started = 0.0
        self._group_seconds: float | None = None

    @property
    def depth(self) -> int:
        """Commits waiting for a group (not counting one being committed)."""
        with self._changed:
            return len(self._waiting)

    @property
    def busy(self) -> bool:
        """Whether commits to the table are being committed or waiting here."""
        with self._changed:
            return self._leading or bool(self._waiting)

    def join(self, member: Member) -> None:
        with self._changed:
            self._waiting.append(member)

    def next_turn(self, member: Member) -> Turn | None:
        """Wait until `member` is answered (None) or no group is being committed: then the caller leads
        the next one (ours or an earlier one) in its Turn."""
        with self._changed:
            while self._leading and not member.answer.done():
                self._changed.wait()
            if member.answer.done():
                return None
            self._leading = True
            self._turn_started = self._timer()
        return Turn(self)

    def group_seconds(self) -> float | None:
        """How long a group of this table takes: the moving average of its finished turns, or the turn
        running now when that one has taken longer already; None before its first turn."""
        with self._changed:
            running = self._timer() - self._turn_started if self._leading else None
            known = [s for s in (self._group_seconds, running) if s is not None]
        return max(known) if known else None

    def _take(self, group: list[Member], limit: int | None) -> list[Member]:
        """Move up to `limit` (None: all) waiting members into `group`."""
        with self._changed:
            count = len(self._waiting) if limit is None else min(limit, len(self._waiting))
            group.extend(self._waiting.popleft() for _ in range(count))
        return group

    def _hand_over(self, later: Sequence[Member]) -> None:
        """The leader is done: left-over members go first in the next group, so arrival order is kept."""
        with self._changed:
            self._waiting.extendleft(reversed([m for m in later if not m.answer.done()]))
            self._leading = False
            took = self._timer() - self._turn_started
            average = self._group_seconds
            self._group_seconds = (
                took if average is None else average + (took - average) * GROUP_SECONDS_WEIGHT
            )
            self._changed.notify_all()


class Turn:
    """One leader's turn: it takes the group once it holds the table lock, so every commit that arrived
    while it waited joins. If the turn ends in an error, every member it took shares it; if it ends in one
    before taking any (the lock stayed busy past the timeout), so does every waiting member, since all of
    them were waiting for that same lock."""

    def __init__(self, queue: CommitQueue) -> None:
        self._queue = queue
        self.group: list[Member] = []
        self._later: Sequence[Member] = ()

    def take(self) -> list[Member]:
        """The group: up to the queue's `max_group` waiting members, in arrival order."""
        return self._queue._take(self.group, self._queue._max_group)

    def leave(self, later: Sequence[Member]) -> None:
        """These members of the group were not decided: they go first in the next group."""
        self._later = later

    def __enter__(self) -> Turn:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _tb: object) -> None:
        if error is not None:
            for taken in self.group or self._queue._take(self.group, None):
                if not taken.answer.done():
                    taken.answer.set_exception(error)
        for taken in self.group:
            if not taken.answer.done() and taken not in self._later:
                taken.answer.set_exception(RuntimeError("a commit group ended without deciding a commit"))
        self._queue._hand_over(self._later)


class CommitQueues:
    """One queue per table in this process."""

    def __init__(self, max_group: int = MAX_GROUP, timer: Callable[[], float] = time.monotonic) -> None:
        self.max_group = max_group
        self._timer = timer
        self._queues: dict[str, CommitQueue] = {}
        self._guard = threading.Lock()

    def of(self, table_id: str) -> CommitQueue:
        with self._guard:
            queue = self._queues.get(table_id)
            if queue is None:
                queue = self._queues[table_id] = CommitQueue(self.max_group, self._timer)
            return queue

    def group_seconds(self, table_id: str) -> float | None:
        """How long a group of this table takes here (CommitQueue.group_seconds); None if it had none."""
        with self._guard:
            queue = self._queues.get(table_id)
        return None if queue is None else queue.group_seconds()

    def busy(self, table_id: str) -> bool:
        """Whether this process is committing the table, or has commits to it waiting."""
        return self.of(table_id).busy

    def depth(self, table_id: str) -> int:
        """Commits to this table waiting in this process for the current group to finish."""
        return self.of(table_id).depth
