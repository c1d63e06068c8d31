"""Access control as route dependencies: 401 without a valid bearer token, 403 outside its role or grant.

Without `require_tokens` (the embedded default on 127.0.0.1) every caller is an admin; maintenance
history then names the caller from the `X-Coordinator-User` header, as before tokens existed.

The dependencies are coroutines: FastAPI runs a plain function dependency on a worker thread, and a
thread hop per dependency per request was a tenth of a commit's CPU time.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from coordinator.access.tokens import Principal
from coordinator.api.deps import ServicesDep
from coordinator.api.params import TableId
from coordinator.errors import Forbidden, Unauthenticated
from coordinator.usecases.tables import split_table_id
from coordinator_client.models import PRINTABLE_PATTERN

_bearer = HTTPBearer(auto_error=False, description="a token from `coordinator tokens create`")


async def caller(
    request: Request,
    services: ServicesDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    user: Annotated[
        str | None,
        Header(
            alias="X-Coordinator-User",
            min_length=1,
            max_length=200,
            pattern=PRINTABLE_PATTERN,
            include_in_schema=False,
        ),
    ] = None,
) -> Principal:
    """The principal of this request (cached per request by FastAPI)."""
    if not services.settings.require_tokens:
        return Principal(user or "api", "admin")
    if credentials is None:
        raise Unauthenticated("send Authorization: Bearer <token>")
    # A database read: on a worker thread, so the event loop goes on serving meanwhile.
    principal = await run_in_threadpool(services.tokens.verify, credentials.credentials)
    if principal is None:
        raise Unauthenticated("the bearer token is unknown or revoked")
    request.state.principal = principal
    return principal


Caller = Annotated[Principal, Depends(caller)]


async def reader(principal: Caller) -> Principal:
    """Any valid token reads (tables, snapshots, history, locks, metrics, the dashboard's data)."""
    return principal


async def admin(principal: Caller) -> Principal:
    """Create and drop tables, maintenance, force-release locks."""
    if principal.role != "admin":
        raise Forbidden(f"{principal.name} ({principal.role}) is not an admin")
    return principal


async def table_writer(table_id: TableId, principal: Caller) -> Principal:
    """Commit to `table_id`: admins, and writers whose grant covers the table's database or the table."""
    database, name = split_table_id(table_id)
    if not principal.may_write(database, name):
        raise Forbidden(f"{principal.name} ({principal.role}) may not write to {table_id}")
    return principal


async def writer(principal: Caller) -> Principal:
    """Writers and admins: what the route may change is checked against the grant once it is known."""
    if principal.role not in ("writer", "admin"):
        raise Forbidden(f"{principal.name} ({principal.role}) may not write")
    return principal


Admin = Annotated[Principal, Depends(admin)]
Writer = Annotated[Principal, Depends(writer)]
TableWriter = Annotated[Principal, Depends(table_writer)]
