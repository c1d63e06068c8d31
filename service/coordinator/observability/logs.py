"""Structured logs: one JSON object per line, each carrying the id of the request it belongs to.

The request id comes from the caller's `X-Request-ID` (so a job can correlate its own logs) or is made
up, is echoed in the response, and reaches every log record of the request through a context variable
(FastAPI runs sync routes in a thread pool that copies the context).
"""

from __future__ import annotations

import contextvars
import logging
import re
import time
import uuid
from typing import Any, Literal

from pythonjsonlogger.json import JsonFormatter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)

_VALID_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
access_log = logging.getLogger("coordinator.access")


class _RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = request_id.get()
        return True


def configure_logging(fmt: Literal["json", "text"], level: int = logging.INFO) -> None:
    """Route every logger (ours, uvicorn's, SQLAlchemy's warnings) to stderr in one format."""
    handler = logging.StreamHandler()
    handler.addFilter(_RequestIdFilter())
    if fmt == "json":
        handler.setFormatter(
            JsonFormatter(
                "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s",
                rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
                datefmt="%Y-%m-%dT%H:%M:%S%z",
            )
        )
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s")
        )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


class RequestContext:
    """ASGI middleware: sets the request id, returns it as `X-Request-ID`, writes one access line."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        rid = sent if _VALID_ID.match(sent) else uuid.uuid4().hex
        token = request_id.set(rid)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            principal = scope.get("state", {}).get("principal")
            fields: dict[str, Any] = {
                "method": scope["method"],
                "path": scope["path"],
                "status": status,
                "durationMs": round((time.perf_counter() - started) * 1000, 3),
            }
            if principal is not None:
                fields["caller"] = principal.name
            access_log.info("request", extra=fields)
            request_id.reset(token)
