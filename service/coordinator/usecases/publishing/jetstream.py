"""The NATS JetStream sink: each event a message on `<prefix>.<database>.<table>`, its message id
(header Nats-Msg-Id) the event's cursor, sent only once the previous one was acknowledged (PubAck).

nats-py is asyncio; the relay's thread is not. The sink keeps an event loop of its own and runs each
call on it to completion, so a send returns only with JetStream's acknowledgement (or fails). A failed
send drops the connection, and the next one connects afresh: nats-py's own reconnection would buffer
messages while the server is away, which would acknowledge nothing anyway.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from coordinator.usecases.publishing.sink import DeliveryFailed
from coordinator_client.models import EventModel

log = logging.getLogger(__name__)

SEND_TIMEOUT_SECONDS = 5.0
CONNECT_TIMEOUT_SECONDS = 2.0
_NOT_A_TOKEN = re.compile(r"[^A-Za-z0-9_-]")
"""A subject token holds no dot, space, `*` or `>`; table names never have them, but say so once."""


def subject_of(prefix: str, event: EventModel) -> str:
    """Where a table's events go: one subject per table, so a consumer can filter on `<prefix>.db.>`."""
    return f"{prefix}.{_NOT_A_TOKEN.sub('_', event.database)}.{_NOT_A_TOKEN.sub('_', event.table)}"


async def _connection_error(error: Exception) -> None:
    # nats-py logs these at ERROR by default; the failed send that follows is the one worth a warning.
    log.debug("nats connection: %r", error)


class JetStreamSink:
    kind = "nats"

    def __init__(self, url: str, stream: str, subject: str, duplicate_window_seconds: float) -> None:
        self.target = f"{url} stream {stream} subjects {subject}.>"
        self._servers = url.split(",")
        self._stream = stream
        self._subject = subject
        self._window = duplicate_window_seconds
        self._loop = asyncio.new_event_loop()
        self._nc: Any = None
        self._js: Any = None

    def send(self, event: EventModel) -> None:
        try:
            self._loop.run_until_complete(self._publish(event))
        except DeliveryFailed:
            self._drop()
            raise
        except Exception as error:  # nats-py's own errors, timeouts, refused connections
            self._drop()
            raise DeliveryFailed(f"{type(error).__name__}: {error}") from error

    async def _publish(self, event: EventModel) -> None:
        if self._js is None:
            await self._connect()
        payload = event.model_dump_json(by_alias=True).encode()
        await self._js.publish(
            subject_of(self._subject, event),
            payload,
            timeout=SEND_TIMEOUT_SECONDS,
            stream=self._stream,
            headers={"Nats-Msg-Id": str(event.cursor)},
        )

    async def _connect(self) -> None:
        import nats
        from nats.js.errors import NotFoundError

        self._nc = await nats.connect(
            servers=self._servers,
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
            allow_reconnect=False,
            max_reconnect_attempts=0,
            error_cb=_connection_error,
        )
        self._js = self._nc.jetstream(timeout=SEND_TIMEOUT_SECONDS)
        try:
            await self._js.stream_info(self._stream)
        except NotFoundError:
            await self._js.add_stream(
                name=self._stream, subjects=[f"{self._subject}.>"], duplicate_window=self._window
            )

    def _drop(self) -> None:
        nc, self._nc, self._js = self._nc, None, None
        if nc is not None:
            try:
                self._loop.run_until_complete(asyncio.wait_for(nc.close(), CONNECT_TIMEOUT_SECONDS))
            except Exception:  # closing a connection that already broke: nothing left to do
                pass

    def close(self) -> None:
        self._drop()
        self._loop.close()
