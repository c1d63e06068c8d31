"""A table whose commit queue outlasts the service's admission limit (commit/admission.py), on a live server.

Its lock is held by an outside holder (another replica, as far as the service can tell) while commits to
it wait in the service, until their turn has taken longer than the limit: a new commit to the table is
then refused with 429. Leaving releases the lock, and the waiting commits are answered.
"""

from __future__ import annotations

import re
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import httpx

from coordinator.locks.base import Lease
from coordinator.locks.renewal import LeaseKeeper
from tests.support.commits import post_commit
from tests.support.paimon_files import PaimonTable
from tests.support.served import LiveServer
from tests.support.waiting import wait_for

OUTSIDE_HOLDER = "outside-holder"


class Jam:
    """`bodies` committed to `table` from threads, admitted and stuck behind its held lock while active."""

    def __init__(
        self, server: LiveServer, http: httpx.Client, table: PaimonTable, bodies: list[dict[str, Any]]
    ) -> None:
        self._server = server
        self._http = http
        self._table = table
        self._bodies = bodies
        self._pool = ThreadPoolExecutor(len(bodies), thread_name_prefix="jammed-commit")
        self._answers: list[Future[httpx.Response]] = []
        self._lease: Lease | None = None
        self._keeper: LeaseKeeper | None = None

    def __enter__(self) -> Jam:
        services = self._server.services
        lock_id = services.tables.get(self._table.id).lock_id
        self._lease = services.locks.acquire(lock_id, OUTSIDE_HOLDER, timeout_seconds=10)
        self._keeper = LeaseKeeper(services.locks, self._lease, services.settings.lock_lease_seconds)
        self._keeper.__enter__()  # renewed until the jam ends
        self._answers = [self._pool.submit(post_commit, self._http, self._table, b) for b in self._bodies]
        wait_for(
            lambda: services.admission.state(1).waiting >= len(self._bodies) or self._any_answered(),
            "the jammed commits admitted",
        )
        assert not self._any_answered(), [a.result().text for a in self._answers if a.done()]
        limit = services.admission.limit_seconds
        wait_for(
            lambda: (services.queues.group_seconds(self._table.id) or 0) > limit,
            "their turn to take longer than the admission limit",
        )
        return self

    def _any_answered(self) -> bool:
        return any(answer.done() for answer in self._answers)

    def __exit__(self, *exc: object) -> None:
        assert self._keeper is not None
        assert self._lease is not None
        self._keeper.stop()
        self._server.services.locks.release(self._lease)
        self._pool.shutdown(wait=True)

    def responses(self) -> list[httpx.Response]:
        """The jammed commits' answers, once the jam is over."""
        return [answer.result() for answer in self._answers]


def refused(http: httpx.Client) -> dict[str, float]:
    """coordinator_commits_refused_total by reason, as the service's /metrics say."""
    metrics = http.get("/metrics").text
    found = re.findall(r'^coordinator_commits_refused_total\{reason="(\w+)"\} (\S+)$', metrics, re.M)
    return {reason: float(value) for reason, value in found}
