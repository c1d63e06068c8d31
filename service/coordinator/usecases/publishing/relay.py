"""A relay: follows the outbox from a publisher's durable cursor and hands each event to its sink.

Every replica runs a relay per configured publisher, but only the one holding the publisher's lease
(db/repositories/publishers.py) sends. The holder reads the events after the cursor, in cursor order,
sends them one by one (each acknowledged by the target before the next), then moves the cursor past
them, fenced by its lease. A crash between a send and the cursor's move makes the next holder send those
events again: JetStream drops them by their message id (the event's cursor) within its duplicate window,
and a webhook sees the same X-Coordinator-Event-Id again (at-least-once).

Order: a holder sends only while its lease has at least two thirds of its length left on the local
clock (it renews before that), and another replica takes over only once the lease expired on the
database clock. So two replicas never send at the same moment unless a send stalls for more than that
margin, and a table's events reach the target in cursor order, which is commit order.

A failed send is retried after a backoff (doubling up to a maximum), from the same event: the relay
never skips ahead. A webhook relay gives an event up after `max_attempts` and records it as a dead
letter (moving the cursor past it in the same transaction); the NATS relay never gives up. Commits never
wait for any of this: they only write the outbox.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any

from sqlalchemy import Engine, Row

from coordinator.clock import Clock
from coordinator.db.engine import read_only
from coordinator.db.repositories import publishers as repo
from coordinator.db.repositories.publishers import PublisherLease, PublisherLeases
from coordinator.locks.base import process_owner
from coordinator.observability.metrics import Metrics
from coordinator.usecases.event_feed import event_model
from coordinator.usecases.publishing.sink import Sink

log = logging.getLogger(__name__)

BATCH = 200
"""Events read per pass; the cursor moves once per batch (a crash resends at most this many)."""
LAG_EVERY_SECONDS = 1.0
"""How often the lag gauges are refreshed, by every replica (leader or not)."""


class Relay:
    def __init__(
        self,
        name: str,
        sink: Sink,
        engine: Engine,
        leases: PublisherLeases,
        metrics: Metrics,
        clock: Clock,
        *,
        lease_seconds: float,
        poll_seconds: float,
        backoff_seconds: float,
        max_backoff_seconds: float,
        max_attempts: int | None,
    ) -> None:
        """`max_attempts`: after this many failed sends of one event it becomes a dead letter; None:
        retry for ever (the order of a stream matters more than any one event)."""
        self.name = name
        self.sink = sink
        self._engine = engine
        self._leases = leases
        self._metrics = metrics
        self._clock = clock
        self._lease_seconds = lease_seconds
        self._poll = poll_seconds
        self._backoff = backoff_seconds
        self._max_backoff = max_backoff_seconds
        self._max_attempts = max_attempts
        # Unique per process start: a restarted replica reusing a pid is a new owner.
        self._owner = f"{process_owner()}-{uuid.uuid4().hex[:8]}"
        self._lease: PublisherLease | None = None
        self._renewed_at = 0.0
        self._attempts: dict[int, int] = {}
        self._lag_at = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"publisher-{name}", daemon=True)

    def start(self) -> None:
        self._leases.register(self.name, self.sink.kind, self.sink.target)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.ident is None:
            self.sink.close()  # never started; otherwise the thread closes it as it ends
        elif self._thread.is_alive():
            self._thread.join(30)

    def _run(self) -> None:
        # The sink is closed on the thread that used it: the NATS sink's event loop cannot be run from
        # the app's lifespan, where an event loop is already running.
        try:
            self._relay()
        finally:
            self.sink.close()

    def _relay(self) -> None:
        backoff = self._backoff
        while not self._stop.is_set():
            try:
                self._observe_lag()
                if not self._leading():
                    self._stop.wait(self._lease_seconds / 3)
                    continue
                if self._pass() == 0:
                    self._stop.wait(self._poll)
                backoff = self._backoff
            except Exception as error:  # the target or the database is down: wait, then the same again
                log.warning("publisher %s: %r; retrying in %.1f s", self.name, error, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, self._max_backoff)

    def _leading(self) -> bool:
        """Whether this replica holds the lease, with at least two thirds of it left (renewed or taken
        when a third has passed)."""
        started = time.monotonic()
        if self._lease is not None and started - self._renewed_at < self._lease_seconds / 3:
            return True
        if self._lease is not None and self._leases.renew(self._lease):
            self._renewed_at = started
            return True
        self._lease = self._leases.take(self.name, self._owner)
        if self._lease is not None:
            self._renewed_at = started
            log.info("publisher %s: this replica publishes now (epoch %d)", self.name, self._lease.epoch)
        return self._lease is not None

    def _pass(self) -> int:
        """Send the events after the cursor (one batch); returns how many were delivered."""
        assert self._lease is not None
        lease = self._lease
        with read_only(self._engine) as conn:
            rows = repo.events_after(conn, repo.cursor_of(conn, self.name), BATCH)
        sent = 0
        for row in rows:
            if not self._leading() or self._lease != lease:
                break  # lost the lease mid-batch: the new holder resends from the cursor
            try:
                self._send(row)
            except Exception as error:
                # What went through first, then the failure (which may move the cursor past this event).
                if sent:
                    self._advance(lease, rows[sent - 1].id, sent)
                self._failed(row.id, f"{type(error).__name__}: {error}"[: repo.ERROR_CHARS])
                raise
            sent += 1
        if sent:
            self._advance(lease, rows[sent - 1].id, sent)
        return sent

    def _send(self, row: Row[Any]) -> None:
        """One event to the sink, acknowledged."""
        self.sink.send(event_model(row))
        self._attempts.pop(row.id, None)
        self._metrics.publisher_delivered.labels(self.name).inc()

    def _failed(self, event_id: int, reason: str) -> None:
        self._metrics.publisher_failures.labels(self.name).inc()
        attempts = self._attempts[event_id] = self._attempts.get(event_id, 0) + 1
        with self._engine.begin() as conn:
            repo.record_failure(conn, self.name, reason)
        if self._max_attempts is None or attempts < self._max_attempts or self._lease is None:
            return
        with self._engine.begin() as conn:
            given_up = repo.add_dead_letter(conn, self._lease, event_id, attempts, reason, self._clock.now())
        self._attempts.pop(event_id, None)
        if given_up:
            log.warning(
                "publisher %s: event %d failed %d times: a dead letter", self.name, event_id, attempts
            )

    def _advance(self, lease: PublisherLease, cursor: int, sent: int) -> None:
        with self._engine.begin() as conn:
            if not repo.advance(conn, lease, cursor, sent):
                # Another replica took the lease over (this one stalled past it): it resends from the
                # cursor, and the target drops or tolerates what this one sent twice.
                self._lease = None

    def _observe_lag(self) -> None:
        if time.monotonic() - self._lag_at < LAG_EVERY_SECONDS:
            return
        self._lag_at = time.monotonic()
        with read_only(self._engine) as conn:
            lag = repo.lag(conn, repo.cursor_of(conn, self.name), self._clock.now())
        self._metrics.publisher_lag_events.labels(self.name).set(lag.events)
        self._metrics.publisher_lag_seconds.labels(self.name).set(lag.seconds or 0.0)
