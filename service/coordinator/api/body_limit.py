"""A plain ASGI guard on request body size.

Plain ASGI rather than Starlette's BaseHTTPMiddleware, which costs every request an extra task and
memory streams: this sits on the commit path, where every tenth of a millisecond shows.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from coordinator.api.errors import coordinator_error
from coordinator.errors import PayloadTooLarge


class BodyLimit:
    """413 for a declared Content-Length over the limit, and for a streamed body once it grows past it
    (the route reading it stops before doing anything)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self._app = app
        self._max = max_bytes

    def _too_large(self) -> PayloadTooLarge:
        return PayloadTooLarge(f"request body over {self._max} bytes", field="body")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self._max:
            await self._refuse(scope, receive, send)
            return
        received = 0
        exceeded = False

        async def counted() -> Message:
            nonlocal received, exceeded
            message = await receive()
            received += len(message.get("body", b""))
            if received > self._max:
                exceeded = True
                raise self._too_large()  # stops the route before it runs
            return message

        async def answered(message: Message) -> None:
            if not exceeded:
                await send(message)
            elif message["type"] == "http.response.start":
                await self._refuse(scope, receive, send)  # instead of the app's own answer to the raise

        await self._app(scope, counted, answered)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await coordinator_error(Request(scope), self._too_large())
        await response(scope, receive, send)
