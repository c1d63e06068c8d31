"""The phases of a commit and their times (ms): what its answer, its history row and the ops API show.

A commit's time is cut into named phases: `validate` and `lockWait` before it holds the lock, then phases
of its own (`conflictCheck`, `manifestWrite`) and phases its whole group goes through once (`reconcile`,
`commitPoint`, `publish`). Time between its own phases, once it holds the lock, is time spent on the
members before it: `groupWait`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager


class PhaseTimer:
    """The phases one commit went through and the one it is in now."""

    def __init__(self, started: float) -> None:
        self.started = started
        """perf_counter() when its request came in."""
        self.started_at = time.time()
        self.current = "validate"
        self.timings: dict[str, float] = {}
        self._mark = started
        """perf_counter() at the end of the last timed phase."""

    def waited(self, name: str, until: float | None = None) -> None:
        """The time since the last phase (validation, the wait for the lock) goes to `name`."""
        now = time.perf_counter() if until is None else until
        self._add(name, self._mark, now)
        self._mark = now

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """A phase of this commit alone; the gap since its last phase counts as groupWait."""
        self.waited("groupWait")
        self.current = name
        try:
            yield
        finally:
            self.waited(name)
            self.current = "groupWait"

    def shared(self, name: str, started: float, ended: float) -> None:
        """A phase the whole group went through once."""
        if started > self._mark:
            self.waited("groupWait", started)
        self._add(name, started, ended)
        self._mark = ended

    def total(self, ended: float) -> None:
        self.timings["total"] = round((ended - self.started) * 1000, 3)

    def _add(self, name: str, start: float, end: float) -> None:
        self.timings[name] = round(self.timings.get(name, 0.0) + (end - start) * 1000, 3)


@contextmanager
def timed_together(timers: Sequence[PhaseTimer], name: str) -> Iterator[None]:
    """A phase done once for several commits, each of which is shown in it while it runs."""
    for timer in timers:
        timer.current = name
    started = time.perf_counter()
    try:
        yield
    finally:
        ended = time.perf_counter()
        for timer in timers:
            timer.shared(name, started, ended)
            timer.current = "groupWait"
