"""The webhook sink: an HTTP POST of each event as JSON, signed, delivered when answered 2xx.

Headers: `X-Coordinator-Signature: sha256=<hex>`, the HMAC-SHA256 of the exact body bytes under the
webhook's secret (a receiver recomputes it over the bytes it read and compares in constant time);
`X-Coordinator-Event-Id`, the event's cursor (a receiver drops an id it has seen: a delivery may come
twice after a replica crash); `X-Coordinator-Timestamp`, epoch seconds of this attempt.
"""

from __future__ import annotations

import hashlib
import hmac

import httpx

from coordinator.clock import Clock
from coordinator.usecases.publishing.sink import DeliveryFailed
from coordinator_client.models import EventModel

SIGNATURE_HEADER = "X-Coordinator-Signature"
EVENT_ID_HEADER = "X-Coordinator-Event-Id"
TIMESTAMP_HEADER = "X-Coordinator-Timestamp"


def signature(secret: bytes, body: bytes) -> str:
    """The signature header's value for `body`."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


class WebhookSink:
    kind = "webhook"

    def __init__(self, url: str, secret: str, clock: Clock, timeout_seconds: float) -> None:
        self.target = url
        self._secret = secret.encode()
        self._clock = clock
        self._http = httpx.Client(timeout=timeout_seconds, follow_redirects=False)

    def send(self, event: EventModel) -> None:
        body = event.model_dump_json(by_alias=True).encode()
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: signature(self._secret, body),
            EVENT_ID_HEADER: str(event.cursor),
            TIMESTAMP_HEADER: str(int(self._clock.now())),
        }
        try:
            answer = self._http.post(self.target, content=body, headers=headers)
        except httpx.HTTPError as error:
            raise DeliveryFailed(f"{type(error).__name__}: {error}") from error
        if not answer.is_success:
            raise DeliveryFailed(f"HTTP {answer.status_code}")

    def close(self) -> None:
        self._http.close()
