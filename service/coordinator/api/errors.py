"""One handler renders every CoordinatorError; request validation errors get the same shape."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from coordinator.api.database_errors import install_database_errors
from coordinator.api.rest_catalog.errors import is_rest_catalog, rest_error, rest_validation_error
from coordinator.errors import (
    CommitConflict,
    CoordinatorError,
    Forbidden,
    InvalidRequest,
    LocationInUse,
    LockUnavailable,
    PayloadTooLarge,
    PurgeRefused,
    SnapshotNotFound,
    TableAlreadyExists,
    TableNotFound,
    Unauthenticated,
    Unavailable,
)
from coordinator_client.models import ErrorResponse


def _render(error: ErrorResponse, status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error.model_dump(mode="json", by_alias=True, exclude_none=True), status, headers)


async def coordinator_error(request: Request, exc: Exception) -> JSONResponse:
    """The error's status and body; under /v1 in the shape of Paimon's REST catalog protocol."""
    assert isinstance(exc, CoordinatorError)
    headers = None
    if isinstance(exc, Unavailable):
        headers = {"Retry-After": str(exc.retry_after_seconds)}
    elif isinstance(exc, Unauthenticated):
        headers = {"WWW-Authenticate": 'Bearer realm="paimon-coordinator"'}
    if is_rest_catalog(request.url.path):
        return rest_error(request, exc, headers)
    return _render(exc.to_response(), exc.status_code, headers)


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0]
    location = [str(p) for p in first["loc"] if p not in ("body", "query", "path", "header")]
    field = _dotted(location)
    message = f"{field}: {first['msg']}" if field else str(first["msg"])
    if is_rest_catalog(request.url.path):
        return rest_validation_error(message)
    return _render(ErrorResponse(code="INVALID_REQUEST", message=message, field=field or None), 422)


def _dotted(parts: list[str]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out


def install(app: FastAPI) -> None:
    app.add_exception_handler(CoordinatorError, coordinator_error)
    app.add_exception_handler(RequestValidationError, validation_error)
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
COMMIT_ERRORS = responses(TableNotFound, InvalidRequest, CommitConflict, LockUnavailable, PayloadTooLarge)
CREATE_ERRORS = responses(InvalidRequest, TableAlreadyExists, LocationInUse)
DROP_ERRORS = responses(TableNotFound, PurgeRefused)
SNAPSHOT_ERRORS = responses(TableNotFound, SnapshotNotFound)
