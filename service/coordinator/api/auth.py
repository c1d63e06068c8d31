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
from coordinator.db.scope import TableScope
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


async def optional_caller(
    request: Request,
    services: ServicesDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal | None:
    """The principal of a route open to all that says more to some (/health): None for a request
    without a valid token, never a 401. A failing token lookup (the database is down: what /health is
    asked about) is no token either."""
    if not services.settings.require_tokens:
        return Principal("api", "admin")
    if credentials is None:
        return None
    try:
        principal = await run_in_threadpool(services.tokens.verify, credentials.credentials)
    except Exception:  # the database is unreachable; the probe still answers, without the details
        return None
    if principal is not None:
        request.state.principal = principal
    return principal


async def reader(principal: Caller) -> Principal:
    """Any valid token: routes that show each token only what it may read (listings, /commits, /locks,
    the dashboard's data) or that show nothing of any table (/v1/config)."""
    return principal


def refusal(principal: Principal, method: str, table_id: str) -> Forbidden:
    """403 for a table outside the token's grant: a refused read says read, a refused change write."""
    verb = "read" if method in ("GET", "HEAD") else "write to"
    return Forbidden(
        f"{principal.name} ({principal.role}, granted {principal.grant()}) may not {verb} {table_id}"
    )


async def table_reader(request: Request, table_id: TableId, principal: Caller) -> Principal:
    """Any route of one table: admins, readers without a grant, and tokens whose grant covers it.

    Decided on the name alone, before the table is looked up, so a 403 says nothing of whether the
    table exists."""
    database, name = split_table_id(table_id)
    if not principal.may_read(database, name):
        raise refusal(principal, request.method, table_id)
    return principal


def listing_scope(principal: Principal, database: str | None) -> TableScope | None:
    """What a listing shows `principal`: everything, or its grant's tables. A `database` filter
    outside the grant is refused (403) rather than answered empty, as naming any table outside is.

    Raises:
        Forbidden
    """
    if database is not None and not principal.may_read_database(database):
        raise Forbidden(
            f"{principal.name} ({principal.role}, granted {principal.grant()}) may not read database "
            f"{database}"
        )
    return principal.scope


async def everything_reader(principal: Caller) -> Principal:
    """Admins and readers without a grant: for what sums up every table at once (/metrics)."""
    if not principal.reads_everything:
        raise Forbidden(
            f"{principal.name} ({principal.role}, granted {principal.grant()}) reads only its grant; "
            "this sums up every table"
        )
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
OptionalCaller = Annotated[Principal | None, Depends(optional_caller)]
Writer = Annotated[Principal, Depends(writer)]
TableWriter = Annotated[Principal, Depends(table_writer)]
