"""A database that is down, restarting or refusing connections is a 503 with Retry-After, never a 500.

Any route can meet the database (a token check, a table read, a commit point), so the mapping is one
exception handler for the database's errors: it renders the ones db/faults.py calls unavailability as
DatabaseUnavailable, through the service's one error handler, so each door keeps its shape (the
native `{code, message}`, Paimon's ErrorResponse under /v1). Any other database error is left to
fail as before: it is a fault of ours that a retry would not fix.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response
from sqlalchemy import exc

from coordinator.db.faults import DRIVER_FAULTS, first_line, unavailable

log = logging.getLogger(__name__)

Render = Callable[[Request, Exception], Awaitable[Response]]
"""The handler that renders a CoordinatorError (api/errors.py::coordinator_error)."""

FAULTS: tuple[type[Exception], ...] = (
    exc.DBAPIError,
    exc.DisconnectionError,
    exc.TimeoutError,
    *DRIVER_FAULTS,
)
"""The errors db/faults.py may call unavailability (DBAPIError: only some of them)."""


def install_database_errors(app: FastAPI, render: Render) -> None:
    """Answer the database's unavailability on every route with 503 and Retry-After, in `render`'s shape."""

    async def database_error(request: Request, error: Exception) -> Response:
        answer = unavailable(error)
        if answer is None:
            raise error  # not unavailability: the server's own error answer, as without this handler
        log.warning("%s %s: database unavailable: %s", request.method, request.url.path, first_line(error))
        return await render(request, answer)

    for fault in FAULTS:
        app.add_exception_handler(fault, database_error)
