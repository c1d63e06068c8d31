"""Group commit: the commits to one table that arrive while another commit holds its lock go together.

Each request thread queues its committable. When no commit of the table is running in this process, the
first waiting thread becomes the leader: it takes up to `max_group` queued committables, commits them in
one lock hold (one snapshot each, in arrival order) and hands every thread its own answer. With N
writers waiting, the table lock is taken, the state reconciled and the commit point written once per
group instead of once per writer, which is what lets throughput grow with the number of writers.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from coordinator.db import repositories as repo
from coordinator.domain.committable import ResolvedCommittable
from coordinator.observability.metrics import Metrics
from coordinator.usecases.snapshot_proposals import ProposedSnapshot
from coordinator.usecases.tables import Table, version_of
from coordinator_client.models import CommitResponse, InFlightCommitModel
from paimon_format.manifest import ManifestEntry
from paimon_format.snapshot import Snapshot

log = logging.getLogger(__name__)

Intake = Callable[[Table, int], tuple[ResolvedCommittable, ProposedSnapshot | None]]
"""How a door turns its request into what the pipeline decides, against a table at a time (ms): a
native committable's messages (resolved), or a proposed snapshot (resolved from its delta, and itself)."""


@dataclass(eq=False)
class PendingCommit:
    """One request in a group: its committable, the phases it went through (ms) and, once decided, its
    answer. Time between its own timed phases, once it holds the lock, is time spent on the members
    before it: groupWait."""

    resolved: ResolvedCommittable
    idempotency_key: str | None
    started: float
    intake: Intake
    """Resolves the request again when the table turns out to have changed."""
    version: tuple[str, int]
    """The (uuid, schema id) of the table `resolved` was resolved against."""
    proposed: ProposedSnapshot | None = None
    """A snapshot the client finished itself (REST protocol): accepted as is, or not at all."""
    transaction: tuple[str, ...] = ()
    """The tables of the multi-table transaction it is one table's part of (usecases.transactions)."""
    extends_record: int | None = None
    """The history row (its id) of a commit already recorded whose later snapshot this is (another
    commit kind), as Paimon's engines send a commit's APPEND and COMPACT separately: its snapshots join
    that row."""
    current: str = "validate"
    """The phase it is in now, for the ops API."""
    started_at: float = field(default_factory=time.time)
    timings: dict[str, float] = field(default_factory=dict)
    snapshots: list[Snapshot] = field(default_factory=list)
    deltas: dict[int, list[ManifestEntry]] = field(default_factory=dict)
    """The delta entries of each snapshot built, by snapshot id: the index advances by them."""
    records: dict[int, list[bytes]] = field(default_factory=dict)
    """The Avro records of those entries, by snapshot id, where the manifest write encoded them."""
    mark: float = 0.0
    """perf_counter() at the end of the last timed phase."""
    _response: CommitResponse | None = None
    _error: BaseException | None = None

    def __post_init__(self) -> None:
        self.mark = self.started

    @property
    def key(self) -> tuple[str, int]:
        return self.resolved.commit_user, self.resolved.identifier

    @property
    def record_key(self) -> repo.RecordKey:
        """How its record is found: by its name, and for the batch identifier by its changes too."""
        return repo.record_key(self.resolved.commit_user, self.resolved.identifier, self.resolved.digest)

    def unbuild(self) -> None:
        """Forget the snapshots built for it: its group is decided again, or not at all."""
        self.snapshots.clear()
        self.deltas.clear()
        self.records.clear()

    def built(self) -> list[tuple[int, list[ManifestEntry]]]:
        """Each snapshot built for this commit with its delta entries, in order."""
        return [(s.id, self.deltas[s.id]) for s in self.snapshots]

    def resolve_for(self, table: Table, *, now_millis: int) -> None:
        """Make sure the committable is resolved against `table` as it is now: one resolved against an
        older version (another replica re-created or altered the table) is resolved again from its
        request, so it gets the answer a replica that never saw the old table would give.

        Raises:
            InvalidRequest: it is not valid for the table now.
        """
        version = version_of(table)
        if self.version != version:
            self.resolved, self.proposed = self.intake(table, now_millis)
            self.version = version

    @property
    def decided(self) -> bool:
        return self._response is not None or self._error is not None

    def waited(self, name: str, until: float | None = None) -> None:
        """The time since the last phase (validation, the wait for the lock) goes to `name`."""
        now = time.perf_counter() if until is None else until
        self._add(name, self.mark, now)
        self.mark = now

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """A phase of this member alone; the gap since its last phase counts as groupWait."""
        self.waited("groupWait")
        self.current = name
        try:
            yield
        finally:
            self.waited(name)
            self.current = "groupWait"

    def shared(self, name: str, started: float, ended: float) -> None:
        """A phase the whole group went through once (reconcile, commit point, publish)."""
        if started > self.mark:
            self.waited("groupWait", started)
        self._add(name, started, ended)
        self.mark = ended

    def _add(self, name: str, start: float, end: float) -> None:
        self.timings[name] = round(self.timings.get(name, 0.0) + (end - start) * 1000, 3)

    def succeed(self, response: CommitResponse) -> None:
        self._response = response

    def fail(self, error: BaseException) -> None:
        self._error = error

    def outcome(self) -> CommitResponse:
        if self._error is not None:
            raise self._error
        assert self._response is not None
        return self._response


@contextmanager
def timed_together(members: Sequence[PendingCommit], name: str) -> Iterator[None]:
    """A phase done once for several members, each of which is shown in it while it runs."""
    for member in members:
        member.current = name
    started = time.perf_counter()
    try:
        yield
    finally:
        ended = time.perf_counter()
        for member in members:
            member.shared(name, started, ended)
            member.current = "groupWait"


class InFlight:
    """The commits this process is working on, for the ops API."""

    def __init__(self) -> None:
        self._pending: dict[int, tuple[str, PendingCommit]] = {}
        self._guard = threading.Lock()

    @contextmanager
    def tracking(self, table_id: str, pending: PendingCommit) -> Iterator[None]:
        with self._guard:
            self._pending[id(pending)] = (table_id, pending)
        try:
            yield
        finally:
            with self._guard:
                del self._pending[id(pending)]

    def listing(self) -> list[InFlightCommitModel]:
        """Oldest first, each with the phase it is in and the phases it went through."""
        with self._guard:
            pending = sorted(self._pending.values(), key=lambda p: p[1].started)
        now = time.perf_counter()
        return [
            InFlightCommitModel(
                table_id=table_id,
                commit_user=member.resolved.commit_user,
                identifier=member.resolved.identifier,
                phase=member.current,
                started_at=member.started_at,
                elapsed_ms=round((now - member.started) * 1000, 3),
                timings=dict(member.timings),
                tables=list(member.transaction) or None,
            )
            for table_id, member in pending
        ]


TakeGroup = Callable[[], list[PendingCommit]]
"""Called by a leader once it holds the table lock: the waiting commits that form its group."""


class CommitQueue:
    """The waiting commits of one table in this process, and whether a leader is committing a group."""

    def __init__(self, max_group: int) -> None:
        self._max_group = max_group
        self._waiting: deque[PendingCommit] = deque()
        self._changed = threading.Condition()
        self._leading = False

    @property
    def depth(self) -> int:
        """Commits waiting for a group (not counting one being committed)."""
        with self._changed:
            return len(self._waiting)

    def waiting(self) -> list[ResolvedCommittable]:
        """The committables waiting for the table lock (a group is taken only once the lock is held)."""
        with self._changed:
            return [m.resolved for m in self._waiting]

    def run(
        self, pending: PendingCommit, commit_group: Callable[[TakeGroup], Sequence[PendingCommit]]
    ) -> CommitResponse:
        """Queue `pending` and return its answer, leading groups (ours or earlier ones) when it is our turn.

        The leader takes the table lock first and only then its group, so every commit that arrived
        while it waited joins. `commit_group` decides the commits it took and returns those it left for
        the next group. If it raises, every commit it took shares the error; if it raises before taking
        any (the lock stayed busy past the timeout), so does every waiting commit, since all of them
        were waiting for that same lock.
        """
        with self._changed:
            self._waiting.append(pending)
        while True:
            with self._changed:
                while self._leading and not pending.decided:
                    self._changed.wait()
                if pending.decided:
                    return pending.outcome()
                self._leading = True
            group: list[PendingCommit] = []
            later: Sequence[PendingCommit] = ()
            try:
                later = commit_group(functools.partial(self._take, group, self._max_group))
            except BaseException as error:
                for member in group or self._take(group, None):
                    if not member.decided:
                        member.fail(error)
            finally:
                for member in group:
                    if not member.decided and member not in later:
                        member.fail(RuntimeError("a commit group ended without deciding a commit"))
                with self._changed:
                    # Left-over commits go first in the next group, so arrival order is kept.
                    self._waiting.extendleft(reversed([m for m in later if not m.decided]))
                    self._leading = False
                    self._changed.notify_all()

    def _take(self, group: list[PendingCommit], limit: int | None) -> list[PendingCommit]:
        """Move up to `limit` (None: all) waiting commits into `group`."""
        with self._changed:
            count = len(self._waiting) if limit is None else min(limit, len(self._waiting))
            group.extend(self._waiting.popleft() for _ in range(count))
        return group


AfterCommit = Callable[[str, int], None]
"""Called with (table id, latest snapshot id) once a commit stands. What it raises is logged and counted
(coordinator_post_commit_failures_total), never answered: the commit stands whatever happens after it."""


def after_commit(hook: AfterCommit | None, table_id: str, latest: int, metrics: Metrics) -> None:
    """Run the after-commit hook (retention) for a commit that stands; its failure is logged and counted."""
    if hook is None:
        return
    try:
        hook(table_id, latest)
    except Exception:
        log.exception("retention after a commit to %s failed; the commit stands", table_id)
        metrics.post_commit_failures.labels("retention").inc()
