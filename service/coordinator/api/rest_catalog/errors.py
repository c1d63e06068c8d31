"""Errors under /v1 in Paimon's shape: `{message, resourceType, resourceName, code}`, `code` the status.

api/errors.py renders every error of the service; for a path under /v1 it hands over to `rest_error`,
so the native routes keep their own shape. The resource type tells a client which "no such ..." it got
(pypaimon and Java turn a 404 SNAPSHOT into "the table has no snapshot yet", any other 404 into "no such
table"); the resource name comes from the path the client called.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from coordinator.api.rest_catalog.models import ResourceType, RestErrorResponse
from coordinator.errors import (
    CoordinatorError,
    DatabaseAlreadyExists,
    DatabaseNotFound,
    SnapshotNotFound,
    TableAlreadyExists,
    TableNotFound,
    TagAlreadyExists,
    TagNotFound,
    ViewNotFound,
)

PREFIX = "/v1"

_RESOURCES: dict[type[CoordinatorError], ResourceType] = {
    DatabaseNotFound: "DATABASE",
    DatabaseAlreadyExists: "DATABASE",
    TableNotFound: "TABLE",
    TableAlreadyExists: "TABLE",
    SnapshotNotFound: "SNAPSHOT",
    TagNotFound: "TAG",
    TagAlreadyExists: "TAG",
    ViewNotFound: "VIEW",
}


def is_rest_catalog(path: str) -> bool:
    """True for the paths of Paimon's REST catalog protocol."""
    return path == PREFIX or path.startswith(f"{PREFIX}/")


def rest_error(request: Request, exc: CoordinatorError, headers: dict[str, str] | None) -> JSONResponse:
    """`exc` in Paimon's shape. Paimon knows no 422: a request the coordinator cannot take is a 400
    (BadRequest to the clients), and the field it names leads the message (the shape has no field)."""
    resource = _RESOURCES.get(type(exc))
    status = 400 if exc.status_code == 422 else exc.status_code
    message = exc.message
    if exc.field and not message.startswith(exc.field):
        message = f"{exc.field}: {message}"
    return render(status, message, resource, _resource_name(request, resource), headers=headers)


def rest_validation_error(message: str) -> JSONResponse:
    """A body or parameter the route could not take: 400, as Paimon's clients expect (not 422)."""
    return render(400, message)


def render(
    status: int,
    message: str,
    resource_type: ResourceType | None = None,
    resource_name: str | None = None,
    *,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = RestErrorResponse(
        message=message, resource_type=resource_type, resource_name=resource_name, code=status
    )
    return JSONResponse(body.model_dump(mode="json", by_alias=True), status, headers)


def _resource_name(request: Request, resource: ResourceType | None) -> str | None:
    params = request.path_params
    database, table = params.get("database"), params.get("table")
    if resource == "DATABASE":
        return database
    if resource == "TABLE" and database and table:
        return f"{database}.{table}"
    if resource == "SNAPSHOT":
        return params.get("version") or (f"{database}.{table}" if database and table else None)
    if resource == "TAG":
        return params.get("tag")
    if resource == "VIEW" and database:
        return f"{database}.{params.get('view')}"
    return None


def responses(*errors: type[CoordinatorError]) -> dict[int | str, dict[str, Any]]:
    """The `responses=` a /v1 route declares: Paimon's ErrorResponse under each status."""
    names: dict[int | str, list[str]] = {}
    for e in errors:
        names.setdefault(e.status_code, []).append(e.__name__)
    return {s: {"model": RestErrorResponse, "description": " or ".join(n)} for s, n in names.items()}
