"""Sending a commit on to the replica that holds its table's lock.

Behind a load balancer, commits to one table reach every replica. Each replica that took the table's
lock in turn would commit a small group, and the next holder would first catch up with what the last
one wrote. Instead a replica that finds the lock held by another one (which recorded its advertise_url
with the lock) passes the request on as it came, before it takes any lock itself; the holder queues it
with its own commits and answers them together. The forwarded request is marked, so it is never passed
on again: it waits for the lock where it arrived. A holder that cannot be reached is not waited for:
the commit is made here instead (a resend of one the holder did commit is answered from its record, as
any resend). The question costs a round trip, so it is asked only about a table whose lock this replica
found held by another lately (locks/lock_table.py, holder_elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import httpx
from fastapi import Request, Response

from coordinator.api.deps import LockThreads
from coordinator.errors import TableNotFound
from coordinator.observability.metrics import Metrics
from coordinator.services import Services

_T = TypeVar("_T")

FORWARDED_BY = "X-Coordinator-Forwarded-By"
"""Set on a forwarded request to the advertise_url of the replica that forwarded it."""

_PASSED_ON = ("authorization", "content-type", "idempotency-key", "x-request-id", "x-coordinator-user")
_PASSED_BACK = ("content-type", "retry-after")


class Forwarder:
    """One keep-alive client to the other replicas, for the life of the app."""

    def __init__(self, own_url: str, answer_timeout_seconds: float, metrics: Metrics) -> None:
        self._own_url = own_url
        self._metrics = metrics
        # The holder may queue the commit for as long as its own lock wait allows, then commit it.
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(answer_timeout_seconds, connect=2.0))

    @staticmethod
    def may_forward(request: Request) -> bool:
        """Whether this request may be passed on: not if it was itself forwarded here."""
        return FORWARDED_BY.lower() not in request.headers

    async def commit(self, request: Request, body: bytes, holder_url: str) -> Response | None:
        """The holder's answer to `request`, or None when the holder could not be reached before it
        answered anything (the caller commits here then)."""
        headers = {name: request.headers[name] for name in _PASSED_ON if name in request.headers}
        headers[FORWARDED_BY] = self._own_url
        try:
            answer = await self._client.post(
                holder_url + request.url.path, content=body, headers=headers, params=request.query_params
            )
        except httpx.TransportError:
            self._metrics.forwarded.labels("unreachable").inc()
            return None
        self._metrics.forwarded.labels("answered").inc()
        passed = {name: answer.headers[name] for name in _PASSED_BACK if name in answer.headers}
        return Response(answer.content, status_code=answer.status_code, headers=passed)

    async def close(self) -> None:
        await self._client.aclose()


async def at_the_holder(
    request: Request,
    threads: LockThreads,
    services: Services,
    table_ids: Sequence[str],
    commit: Callable[[], _T],
) -> _T | Response:
    """`commit()` here, or the answer of the replica that holds one of the tables' locks now, asked before
    any lock is taken here; here after all when that one cannot be reached. Here, the commit is admitted
    first (commit/admission.py), before it waits for a lock thread: the holder decides on what it takes.

    Asking and committing share one lock thread: a hop to a thread costs as much CPU as the question,
    and a commit that is not sent on (the usual case) then takes one hop, not two.

    Raises:
        CommitQueueFull: the commits waiting here would take too long; nothing was done.
    """
    forwarder: Forwarder | None = request.app.state.forwarder
    ask = forwarder is not None and forwarder.may_forward(request)
    with services.admission.admitted(table_ids):
        outcome = await threads.run(_here_unless_held_elsewhere, services, table_ids, commit, ask=ask)
    if not isinstance(outcome, _HeldElsewhere):
        return outcome
    assert forwarder is not None  # asked only with a forwarder
    answer = await forwarder.commit(request, await request.body(), outcome.url)
    if answer is not None:
        return answer
    with services.admission.admitted(table_ids):
        return await threads.run(commit)


@dataclass(frozen=True)
class _HeldElsewhere:
    url: str
    """The advertise_url of the replica holding one of the tables' locks."""


def _here_unless_held_elsewhere(
    services: Services, table_ids: Sequence[str], commit: Callable[[], _T], *, ask: bool
) -> _T | _HeldElsewhere:
    holder = _holder_elsewhere(services, table_ids) if ask else None
    return commit() if holder is None else _HeldElsewhere(holder)


def _holder_elsewhere(services: Services, table_ids: Sequence[str]) -> str | None:
    """Where to send the commit: the replica holding one of its tables' locks, asked only when this
    replica is committing none of them (a commit joins a group of this replica's without a query, so a
    hot table costs no round trip per commit)."""
    if any(services.queues.busy(table_id) for table_id in table_ids):
        return None
    tables = []
    for table_id in table_ids:
        try:
            tables.append(services.tables.cached(table_id))
        except TableNotFound:
            continue  # the commit itself answers 404, naming its field
    return services.holds.held_elsewhere(tables)
