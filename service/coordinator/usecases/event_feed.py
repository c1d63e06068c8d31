"""The commit event feed: the outbox read by cursor (GET /events), and its retention.

Events are written by the changes themselves (commit/outbox.py, usecases/table_events.py) in their own
transactions; this module only reads them and deletes those older than the retention, in the
background, as the overwrite watch checks heads: every replica runs it, and deleting twice is harmless.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sqlalchemy import Engine, Row

from coordinator.clock import Clock
from coordinator.db.engine import read_only
from coordinator.db.repositories import events as outbox
from coordinator.db.repositories.events import EventFilter
from coordinator.errors import CursorExpired
from coordinator_client.models import (
    EventHeadResponse,
    EventModel,
    EventsResponse,
    FeedConsumerModel,
    FeedConsumersResponse,
    PartitionChangeModel,
)

log = logging.getLogger(__name__)

PRUNE_EVERY_SECONDS = 60.0
"""How often retention runs, at most (more often when the retention itself is shorter)."""


class EventFeed:
    def __init__(self, engine: Engine, clock: Clock, *, retention_seconds: float) -> None:
        self._engine = engine
        self._clock = clock
        self.retention_seconds = retention_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="event-retention", daemon=True)

    def read(self, after: int | None, wanted: EventFilter, limit: int) -> EventsResponse:
        """The events after `after` (None: from the oldest kept), in cursor order.

        Raises:
            CursorExpired: retention deleted events after `after`; the answer names the oldest kept.
        """
        with read_only(self._engine) as conn:
            start = outbox.pruned_through(conn) if after is None else after
            rows = outbox.events_after(conn, start, wanted, limit)
            # Read after the events: retention deletes and moves this mark in one transaction, so a
            # deletion the read above may have missed shows here.
            pruned = outbox.pruned_through(conn)
            if start < pruned:
                oldest = outbox.oldest_cursor(conn)
                raise CursorExpired(
                    f"events after cursor {start} are past the retention "
                    f"({self.retention_seconds:g} s); the oldest kept is {oldest}",
                    oldest_cursor=oldest,
                )
        events = [event_model(r) for r in rows]
        return EventsResponse(events=events, next_cursor=events[-1].cursor if events else start)

    def head(self, wanted: EventFilter) -> EventHeadResponse:
        """Where a consumer that wants only what happens from now on starts: after the newest event it
        would be sent (after the retention's mark when there is none)."""
        with read_only(self._engine) as conn:
            newest = outbox.newest_cursor(conn, wanted)
            return EventHeadResponse(cursor=outbox.pruned_through(conn) if newest is None else newest)

    def delivered(self, consumer: str, cursor: int, wanted: EventFilter) -> None:
        """Record that `consumer` was sent the events through `cursor` (GET /events?consumer=), so
        GET /ops/consumers can show how far behind it is."""
        with self._engine.begin() as conn:
            outbox.record_consumer(conn, consumer, cursor, wanted, self._clock.now())

    def consumers(self) -> FeedConsumersResponse:
        """Every named consumer with its cursor, its lag in events and in seconds, and when it last read."""
        with read_only(self._engine) as conn:
            lags = outbox.consumer_lags(conn)
        now = self._clock.now()
        return FeedConsumersResponse(
            now=now,
            consumers=[
                FeedConsumerModel(
                    name=c.name,
                    cursor=c.delivered_through,
                    table=c.table_id,
                    database=c.database,
                    kind=c.kind,
                    lag_events=c.lag_events,
                    lag_seconds=0.0 if c.oldest_pending_at is None else max(0.0, now - c.oldest_pending_at),
                    last_seen_at=c.last_seen_at,
                )
                for c in lags
            ],
        )

    def prune(self) -> int:
        """Delete the events older than the retention; returns how many went."""
        with self._engine.begin() as conn:
            return outbox.prune(conn, self._clock.now() - self.retention_seconds)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(30)

    def _run(self) -> None:
        interval = min(PRUNE_EVERY_SECONDS, self.retention_seconds / 10)
        while not self._stop.wait(interval):
            try:
                self.prune()
            except Exception as error:  # the database is down, say: the next pass tries again
                log.warning("deleting events past the retention failed: %r", error)


def event_model(row: Row[Any]) -> EventModel:
    return EventModel(
        cursor=row.id,
        table_id=row.table_id,
        database=row.database,
        table=row.table_name,
        table_uuid=row.table_uuid,
        kind=row.kind,
        snapshot_ids=row.snapshot_ids,
        commit_user=row.commit_user,
        commit_identifier=row.commit_identifier,
        partitions=[PartitionChangeModel.model_validate(p) for p in row.partitions],
        details=row.details,
        at=row.created_at,
    )
