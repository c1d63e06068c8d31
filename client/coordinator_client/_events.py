"""Following the commit event feed (GET /events): the I/O-free half both clients share.

A follower keeps the cursor of the last event it handed out and asks for the events after it with a long
poll, so it resumes exactly where it stopped: after a dropped connection, a replica that went away, a
503 or a 5xx, it waits (0.5 s, doubling up to 10 s) and asks again from the same cursor. A 410 (the
cursor is older than the feed's retention), a 4xx or a 403 are raised: asking again would not help.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator_client._calls import Calls, route
from coordinator_client._steps import Flow, Send
from coordinator_client.errors import (
    CoordinatorClientError,
    ServerError,
    ServiceUnavailable,
    TooManyRequests,
    TransportError,
)
from coordinator_client.models import EventModel, EventsResponse

FIRST_DELAY = 0.5
MAX_DELAY = 10.0
ANSWER_MARGIN = 5.0
"""A long poll waits this much less than the client's timeout, so its empty answer arrives in time."""


def events_page(
    calls: Calls,
    after: int | None,
    *,
    table: str | None = None,
    database: str | None = None,
    kind: str | None = None,
    limit: int = 100,
    wait: float = 0.0,
) -> Flow[EventsResponse]:
    """One page of the feed: GET /events."""
    given: dict[str, str | int | float | None] = {
        "after": after,
        "table": table,
        "database": database,
        "kind": kind,
        "limit": limit,
        "wait": wait,
    }
    params = {k: v if isinstance(v, (str, int)) else f"{v:g}" for k, v in given.items() if v is not None}
    return (yield from calls.call(Send("GET", route("events"), params=params), EventsResponse))


def long_poll_wait(wait: float, timeout: float | None) -> float:
    """The wait to ask for: `wait`, cut so the answer comes before the client's own timeout."""
    if timeout is None:
        return wait
    return max(0.0, min(wait, timeout - ANSWER_MARGIN, timeout / 2))


@dataclass
class Follower:
    """Where a follower of the feed stands: its cursor, its filter and its backoff."""

    after: int | None
    table: str | None
    database: str | None
    kind: str | None
    wait: float
    limit: int = 100
    _delay: float = 0.0

    def page(self, calls: Calls) -> Flow[EventsResponse]:
        return events_page(
            calls,
            self.after,
            table=self.table,
            database=self.database,
            kind=self.kind,
            limit=self.limit,
            wait=self.wait,
        )

    def take(self, page: EventsResponse) -> list[EventModel]:
        """The page's events; the cursor moves past them."""
        self._delay = 0.0
        self.after = page.next_cursor
        return page.events

    def retry_delay(self, error: CoordinatorClientError) -> float:
        """How long to wait before asking again after `error`; raises it when asking again is useless."""
        if not isinstance(error, (TransportError, ServiceUnavailable, TooManyRequests, ServerError)):
            raise error
        self._delay = min(MAX_DELAY, self._delay * 2 or FIRST_DELAY)
        return self._delay
