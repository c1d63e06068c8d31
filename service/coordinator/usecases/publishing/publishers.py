"""The configured publishers (settings: events_nats_*, events_webhooks), their relays, and what the ops
API shows of them: positions and lag (GET /ops/publishers) and the webhooks' dead letters."""

from __future__ import annotations

from sqlalchemy import Engine

from coordinator.clock import Clock
from coordinator.db.engine import read_only
from coordinator.db.repositories import publishers as repo
from coordinator.db.repositories.publishers import PublisherLeases
from coordinator.errors import DeadLetterNotFound
from coordinator.observability.metrics import Metrics
from coordinator.settings import Settings
from coordinator.usecases.event_feed import event_model
from coordinator.usecases.publishing.relay import Relay
from coordinator.usecases.publishing.sink import DeliveryFailed, Sink
from coordinator.usecases.publishing.webhooks import WebhookSink
from coordinator_client.models import (
    DeadLetterModel,
    DeadLettersResponse,
    PublisherModel,
    PublishersResponse,
    RedeliveryResponse,
)

NATS = "nats"


def webhook_name(name: str) -> str:
    return f"webhook-{name}"


def sinks(settings: Settings, clock: Clock) -> dict[str, tuple[Sink, int | None]]:
    """Each configured publisher's sink and its max attempts (None: retried for ever), by name."""
    configured: dict[str, tuple[Sink, int | None]] = {}
    if settings.events_nats_url is not None:
        from coordinator.usecases.publishing.jetstream import JetStreamSink

        sink = JetStreamSink(
            settings.events_nats_url,
            settings.events_nats_stream,
            settings.events_nats_subject,
            settings.events_nats_duplicate_window_seconds,
        )
        configured[NATS] = (sink, None)
    for hook in settings.events_webhooks:
        webhook = WebhookSink(
            hook.url, hook.secret.get_secret_value(), clock, settings.events_webhook_timeout_seconds
        )
        configured[webhook_name(hook.name)] = (webhook, settings.events_webhook_max_attempts)
    return configured


class Publishers:
    def __init__(self, engine: Engine, settings: Settings, metrics: Metrics, clock: Clock) -> None:
        self._engine = engine
        self._clock = clock
        leases = PublisherLeases(engine, settings.events_publisher_lease_seconds)
        self.relays = {
            name: Relay(
                name,
                sink,
                engine,
                leases,
                metrics,
                clock,
                lease_seconds=settings.events_publisher_lease_seconds,
                poll_seconds=settings.events_poll_seconds,
                backoff_seconds=settings.events_publisher_backoff_seconds,
                max_backoff_seconds=settings.events_publisher_max_backoff_seconds,
                max_attempts=max_attempts,
            )
            for name, (sink, max_attempts) in sinks(settings, clock).items()
        }

    def start(self) -> None:
        for relay in self.relays.values():
            relay.start()

    def close(self) -> None:
        for relay in self.relays.values():
            relay.close()

    def status(self) -> PublishersResponse:
        """Every configured publisher's shared row, with its lag read now."""
        now = self._clock.now()
        with read_only(self._engine) as conn:
            rows = {row.name: row for row in repo.publishers(conn)}
            letters = repo.dead_letter_counts(conn)
            shown = []
            for name in self.relays:
                row = rows.get(name)
                if row is None:
                    continue  # registered as its relay starts
                lag = repo.lag(conn, row.cursor, now)
                shown.append(
                    PublisherModel(
                        name=name,
                        kind=row.kind,
                        target=row.target,
                        cursor=row.cursor,
                        lag_events=lag.events,
                        lag_seconds=lag.seconds,
                        delivered=row.delivered,
                        failures=row.failures,
                        last_error=row.last_error,
                        dead_letters=letters.get(name, 0),
                    )
                )
        return PublishersResponse(publishers=shown)

    def dead_letters(self, publisher: str | None, limit: int) -> DeadLettersResponse:
        """The dead letters, oldest first, each with its event while retention keeps it."""
        with read_only(self._engine) as conn:
            letters = []
            for row in repo.dead_letters(conn, publisher, limit):
                found = repo.event(conn, row.event_id)
                letters.append(
                    DeadLetterModel(
                        id=row.id,
                        publisher=row.publisher,
                        event_id=row.event_id,
                        attempts=row.attempts,
                        last_error=row.last_error,
                        failed_at=row.failed_at,
                        event=None if found is None else event_model(found),
                    )
                )
        return DeadLettersResponse(dead_letters=letters)

    def redeliver(self, letter_id: int) -> RedeliveryResponse:
        """One delivery attempt now, from this replica: delivered, the dead letter goes; else it stays,
        its attempts counted.

        Raises:
            DeadLetterNotFound: no dead letter has this id, or its publisher or event is gone.
        """
        with read_only(self._engine) as conn:
            letter = repo.dead_letter(conn, letter_id)
            found = None if letter is None else repo.event(conn, letter.event_id)
        if letter is None:
            raise DeadLetterNotFound(f"no dead letter {letter_id}")
        relay = self.relays.get(letter.publisher)
        if relay is None or found is None:
            why = "is not configured here" if relay is None else "has no event any more (retention)"
            raise DeadLetterNotFound(f"dead letter {letter_id}: {letter.publisher} {why}; drop it")
        try:
            relay.sink.send(event_model(found))
        except DeliveryFailed as error:
            with self._engine.begin() as conn:
                repo.retried_dead_letter(conn, letter_id, str(error), self._clock.now())
            return RedeliveryResponse(delivered=False, error=str(error)[: repo.ERROR_CHARS])
        with self._engine.begin() as conn:
            repo.drop_dead_letter(conn, letter_id)
        return RedeliveryResponse(delivered=True)

    def drop(self, letter_id: int) -> None:
        """Forget a dead letter.

        Raises:
            DeadLetterNotFound: no dead letter has this id.
        """
        with self._engine.begin() as conn:
            if not repo.drop_dead_letter(conn, letter_id):
                raise DeadLetterNotFound(f"no dead letter {letter_id}")
