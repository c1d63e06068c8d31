"""The commit event feed: GET /events (a page, or a long poll with `wait`) and GET /events/stream
(server-sent events, resuming from Last-Event-ID). Both read what the outbox holds (usecases/event_feed.py)
and show a token limited by a grant only its tables' events, as the other listings do."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool

from coordinator.access.tokens import Principal
from coordinator.api.auth import Caller, listing_scope, reader, refusal
from coordinator.api.deps import ServicesDep
from coordinator.api.errors import AUTH_ERRORS, responses
from coordinator.api.params import (
    DEFAULT_PAGE,
    DatabaseFilter,
    EventCursor,
    EventWait,
    FeedConsumerName,
    LastEventId,
    PageLimit,
    TableFilter,
)
from coordinator.db.repositories.events import EventFilter
from coordinator.errors import CoordinatorError, CursorExpired
from coordinator.services import Services
from coordinator.usecases.tables import split_table_id
from coordinator_client.models import EventHeadResponse, EventKind, EventsResponse

router = APIRouter(
    tags=["events"], dependencies=[Depends(reader)], responses={**AUTH_ERRORS, **responses(CursorExpired)}
)

KindFilter = Annotated[EventKind | None, Query(description="only events of this kind")]

KEEPALIVE_SECONDS = 15.0
"""A stream without events sends a comment this often, so proxies and clients see it alive."""
STREAM_PAGE = 100


def _wanted(
    request: Request, caller: Principal, table: str | None, database: str | None, kind: str | None
) -> EventFilter:
    """The filter of the caller's request, cut to its grant (403 for a table or database outside)."""
    if table is not None and not caller.may_read(*split_table_id(table)):
        raise refusal(caller, request.method, table)
    return EventFilter(table, database, kind, listing_scope(caller, database))


@router.get("/events")
async def events(
    request: Request,
    services: ServicesDep,
    caller: Caller,
    after: EventCursor = None,
    table: TableFilter = None,
    database: DatabaseFilter = None,
    kind: KindFilter = None,
    limit: PageLimit = DEFAULT_PAGE,
    wait: EventWait = 0,
    consumer: FeedConsumerName = None,
) -> EventsResponse:
    """Every change to a table, in the order the changes committed: commits, transactions, rollbacks,
    tags, expirations, schema changes, tables created and dropped. Resume with `after` = the last
    event's cursor (or `nextCursor`): every event comes once. With `wait`, an empty answer waits up to
    that many seconds for the first event after the cursor. 410 CURSOR_EXPIRED when retention deleted
    events after the cursor, naming the oldest kept (`oldestCursor`). With `consumer`, the service
    records the cursor it answered through under that name (GET /ops/consumers)."""
    wanted = _wanted(request, caller, table, database, kind)
    deadline = time.monotonic() + wait
    while True:
        page = await run_in_threadpool(services.events.read, after, wanted, limit)
        left = deadline - time.monotonic()
        if page.events or left <= 0 or await request.is_disconnected():
            if consumer is not None:
                await run_in_threadpool(services.events.delivered, consumer, page.next_cursor, wanted)
            return page
        after = page.next_cursor
        await anyio.sleep(min(services.settings.events_poll_seconds, left))


@router.get("/events/head")
def event_head(
    request: Request,
    services: ServicesDep,
    caller: Caller,
    table: TableFilter = None,
    database: DatabaseFilter = None,
    kind: KindFilter = None,
) -> EventHeadResponse:
    """The newest cursor of the events the filter (and the token's grant) matches: a consumer that wants
    only what happens from now on (the dashboard's live list) asks after it."""
    return services.events.head(_wanted(request, caller, table, database, kind))


@router.get(
    "/events/stream",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "one SSE message per event"}},
)
async def event_stream(
    request: Request,
    services: ServicesDep,
    caller: Caller,
    last_event_id: LastEventId = None,
    after: EventCursor = None,
    table: TableFilter = None,
    database: DatabaseFilter = None,
    kind: KindFilter = None,
    consumer: FeedConsumerName = None,
) -> StreamingResponse:
    """The feed as server-sent events: `id` the cursor, `event` the kind, `data` the event as JSON. A
    reconnecting EventSource sends Last-Event-ID and resumes after it (it wins over `after`). With
    `consumer`, the service records under that name the cursor each message carried (and, on a quiet
    stream, that the consumer is still there at each keepalive)."""
    wanted = _wanted(request, caller, table, database, kind)
    start = last_event_id if last_event_id is not None else after
    # The first page before the answer begins, so an expired cursor is a 410, not a cut stream.
    first = await run_in_threadpool(services.events.read, start, wanted, STREAM_PAGE)
    if consumer is not None and not first.events:
        # A consumer that opens a stream and has nothing to catch up on is seen now, not at the next event.
        await run_in_threadpool(services.events.delivered, consumer, first.next_cursor, wanted)
    return StreamingResponse(
        _messages(request, services, wanted, first, consumer),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _messages(
    request: Request, services: Services, wanted: EventFilter, page: EventsResponse, consumer: str | None
) -> AsyncIterator[str]:
    quiet_since = time.monotonic()
    while True:
        for event in page.events:
            yield f"id: {event.cursor}\nevent: {event.kind}\ndata: {event.model_dump_json(by_alias=True)}\n\n"
        seen = bool(page.events)
        if page.events:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= KEEPALIVE_SECONDS:
            yield ": keepalive\n\n"
            quiet_since = time.monotonic()
            seen = True
        if consumer is not None and seen:
            try:
                await run_in_threadpool(services.events.delivered, consumer, page.next_cursor, wanted)
            except SQLAlchemyError:
                return  # the database went away: as below, the client reconnects and is told
        if await request.is_disconnected():
            return
        if not page.events:
            await anyio.sleep(services.settings.events_poll_seconds)
        try:
            page = await run_in_threadpool(services.events.read, page.next_cursor, wanted, STREAM_PAGE)
        except (CoordinatorError, SQLAlchemyError):
            # Retention overtook a slow reader, or the database went away: the stream ends, and the
            # client's reconnect (from Last-Event-ID) gets the 410 or the 503.
            return
