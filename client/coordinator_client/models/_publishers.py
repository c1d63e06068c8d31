"""Publishers of the event feed (NATS JetStream, webhooks): their positions, lag and dead letters."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from coordinator_client.models._base import _Model
from coordinator_client.models._events import EventModel


class PublisherModel(_Model):
    """A publisher as every replica shares it: how far it delivered and how far behind it is."""

    name: str = Field(description="`nats`, or `webhook-<name>`")
    kind: Literal["nats", "webhook"]
    target: str = Field(description="where it sends (no secret)")
    cursor: int = Field(description="the event cursor it has delivered through")
    lag_events: int = Field(description="events in the outbox after its cursor")
    lag_seconds: float | None = Field(description="age of the oldest event not delivered; null when none")
    delivered: int = Field(description="events delivered, by every replica, since it was first configured")
    failures: int = Field(description="failed delivery attempts, each retried after a backoff")
    last_error: str | None = Field(description="why the last attempt failed; null once one succeeded")
    dead_letters: int = Field(description="events it gave up on (webhooks only), see GET /ops/dead-letters")


class PublishersResponse(_Model):
    publishers: list[PublisherModel]


class DeadLetterModel(_Model):
    """An event a webhook failed to deliver `attempts` times; redeliver or drop it."""

    id: int
    publisher: str
    event_id: int = Field(description="the event's cursor")
    attempts: int
    last_error: str | None
    failed_at: float = Field(description="epoch seconds of the last failed attempt")
    event: EventModel | None = Field(description="the event; null once retention deleted it")


class DeadLettersResponse(_Model):
    dead_letters: list[DeadLetterModel]


class RedeliveryResponse(_Model):
    """One more delivery attempt of a dead letter: delivered (and the dead letter gone), or why not."""

    delivered: bool
    error: str | None = None
