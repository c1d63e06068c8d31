"""What a relay hands events to: one event at a time, returning only once the target has it."""

from __future__ import annotations

from typing import Protocol

from coordinator_client.models import EventModel


class DeliveryFailed(Exception):
    """The target did not take the event (refused, unreachable, no acknowledgement in time)."""


class Sink(Protocol):
    kind: str
    target: str
    """Where the events go, for ops (no secret in it)."""

    def send(self, event: EventModel) -> None:
        """Deliver one event; returns once the target acknowledged it.

        Raises:
            DeliveryFailed: it did not; the relay retries the same event after a backoff.
        """
        ...

    def close(self) -> None: ...
