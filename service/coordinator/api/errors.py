"""One error shape for every answer that is not a success: the service's ErrorResponse `{code, message,
field}`, under /v1 Paimon's (api/rest_catalog/errors.py). One handler renders every CoordinatorError;
request validation errors, Starlette's own refusals (no route: 404, no route for the method: 405 with
Allow), a pydantic ValidationError escaping from below the routes and any unexpected error (500) are
rendered in the same shapes.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.routing import Match

from coordinator.api.database_errors import install_database_errors
from coordinator.api.rest_catalog.errors import is_rest_catalog, rest_error, rest_validation_error
from coordinator.errors import (
    CommitConflict,
    CommitQueueFull,
    CoordinatorError,
    Forbidden,
    InvalidRequest,
    LocationInUse,
    LockUnavailable,
    MethodNotAllowed,
    PayloadTooLarge,
    PurgeRefused,
    RouteNotFound,
    SnapshotNotFound,
    TableAlreadyExists,
    TableNotFound,
    Unauthenticated,
    Unavailable,
)
from coordinator_client.models import ErrorResponse

log = logging.getLogger(__name__)


def _render(error: ErrorResponse, status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error.model_dump(mode="json", by_alias=True, exclude_none=True), status, headers)


async def coordinator_error(request: Request, exc: Exception) -> JSONResponse:
    """The error's status and body; under /v1 in the shape of Paimon's REST catalog protocol."""
    assert isinstance(exc, CoordinatorError)
    headers = None
    if isinstance(exc, (Unavailable, CommitQueueFull)):
        headers = {"Retry-After": str(exc.retry_after_seconds)}
    elif isinstance(exc, Unauthenticated):
        headers = {"WWW-Authenticate": 'Bearer realm="paimon-coordinator"'}
    elif isinstance(exc, MethodNotAllowed):
        headers = {"Allow": ", ".join(exc.allowed)}
    if is_rest_catalog(request.url.path):
        return rest_error(request, exc, headers)
    return _render(exc.to_response(), exc.status_code, headers)


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0]
    location = [p for p in first["loc"] if p not in ("body", "query", "path", "header")]
    field, message = _named(location, str(first["msg"]))
    if is_rest_catalog(request.url.path):
        return rest_validation_error(message)
    return _render(ErrorResponse(code="INVALID_REQUEST", message=message, field=field or None), 422)


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's refusals before any route runs: no route has the path (404), or routes have it but
    not for this method (405, their methods in Allow). No route of the service raises HTTPException."""
    assert isinstance(exc, HTTPException)
    path = request.url.path
    if exc.status_code == 405:
        allowed = _methods_on(request)
        message = f"{request.method} is not allowed on {path}; allowed: {', '.join(allowed)}"
        return await coordinator_error(request, MethodNotAllowed(message, allowed=allowed))
    if exc.status_code == 404:
        return await coordinator_error(request, RouteNotFound(f"no route has the path {path}"))
    error = CoordinatorError(str(exc.detail))
    if 400 <= exc.status_code < 500:
        error = InvalidRequest(str(exc.detail))
        error.status_code = exc.status_code
    return await coordinator_error(request, error)


def _methods_on(request: Request) -> list[str]:
    """Every method the routes of the request's path take, asked of the router itself. Starlette's own
    Allow names only the first route that has the path (GET /tables and POST /tables are two routes)."""
    routes = request.app.router.routes
    return [
        method
        for method in _METHODS
        if any(route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes)
    ]


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


async def model_error(request: Request, exc: Exception) -> JSONResponse:
    """A pydantic ValidationError raised below the routes (a model built in a use case from what the
    request carried) is the request's fault, not a 500: a 422 naming the field, as at the edge. The
    edge should have refused it first, so it is logged to be found and fixed there."""
    assert isinstance(exc, ValidationError)
    first = exc.errors()[0]
    field, message = _named(list(first["loc"]), str(first["msg"]))
    log.warning("validation error below the routes", exc_info=exc, extra={"model": exc.title})
    if not field:
        message = f"{exc.title}: {message}"
    return await coordinator_error(request, InvalidRequest(message, field=field or None))


async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    """Anything unexpected: 500 in the error shape (Starlette still logs the traceback)."""
    return await coordinator_error(request, CoordinatorError("internal error; the service logged it"))


def _named(location: list[str | int], problem: str) -> tuple[str, str]:
    """The field a validation error names and its message. A refused dict key (pydantic's `[key]`)
    names the dict, the key in the message: the key itself is what is wrong."""
    parts = [_printable(str(p)) for p in location]
    problem = _printable(problem)
    if len(parts) >= 2 and parts[-1] == "[key]":
        field = _dotted(parts[:-2])
        return field, f"{field}: key {parts[-2]!r}: {problem}"
    field = _dotted(parts)
    return field, f"{field}: {problem}" if field else problem


def _printable(part: str) -> str:
    """A name as sent, but a lone surrogate (valid JSON, not encodable UTF-8) escaped, so the answer
    that names it can be written at all."""
    return part.encode("utf-8", "backslashreplace").decode("utf-8")


def _dotted(parts: list[str]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out


def install(app: FastAPI) -> None:
    app.add_exception_handler(CoordinatorError, coordinator_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(ValidationError, model_error)
    app.add_exception_handler(Exception, internal_error)
    install_database_errors(app, coordinator_error)


def responses(*errors: type[CoordinatorError]) -> dict[int | str, dict[str, Any]]:
    """The `responses=` a route declares for the errors it can raise; errors of one status share its
    entry, their names joined."""
    names: dict[int | str, list[str]] = {}
    for e in errors:
        names.setdefault(e.status_code, []).append(e.__name__)
    return {status: {"model": ErrorResponse, "description": " or ".join(n)} for status, n in names.items()}


AUTH_ERRORS = responses(Unauthenticated, Forbidden)
"""Every route but /health and the dashboard page: no valid token, or one whose role does not allow it."""
TABLE_ERRORS = responses(TableNotFound)
COMMIT_ERRORS = responses(
    TableNotFound, InvalidRequest, CommitConflict, LockUnavailable, PayloadTooLarge, CommitQueueFull
)
CREATE_ERRORS = responses(InvalidRequest, TableAlreadyExists, LocationInUse)
DROP_ERRORS = responses(TableNotFound, PurgeRefused)
SNAPSHOT_ERRORS = responses(TableNotFound, SnapshotNotFound)
