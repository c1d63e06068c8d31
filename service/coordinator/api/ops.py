"""Operations: health, held locks and their forced release, commits across tables, audit, metrics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from fastapi import APIRouter, Depends, Request, Response

from coordinator.api.auth import (
    Admin,
    Caller,
    OptionalCaller,
    everything_reader,
    reader,
    refusal,
    table_writer,
)
from coordinator.api.bodies import NoBody
from coordinator.api.deps import ServicesDep
from coordinator.api.errors import AUTH_ERRORS, responses
from coordinator.api.params import DEFAULT_PAGE, LockId, PageLimit, TableFilter, TableId
from coordinator.db import repositories as repo
from coordinator.errors import InvalidRequest, LockNotFound
from coordinator.services import Services
from coordinator.usecases.tables import split_table_id
from coordinator_client.models import (
    AuditListResponse,
    CommitsOverviewResponse,
    FeedConsumersResponse,
    HealthResponse,
    LockListResponse,
    ReleaseLockResponse,
)

router = APIRouter(tags=["ops"])
readers = APIRouter(tags=["ops"], dependencies=[Depends(reader)], responses=AUTH_ERRORS)

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


HEALTH_PROBE = ".coordinator-health"
"""A name nobody writes: looking it up proves the warehouse answers, without listing anything."""


@router.get(
    "/health",
    responses={503: {"model": HealthResponse, "description": "database or warehouse down"}},
    response_model_exclude_none=True,
)
def health(services: ServicesDep, response: Response, caller: OptionalCaller) -> HealthResponse:
    """200 when the database and the warehouse both answer, else 503; the body says which part failed.
    Open to all, for load balancers and orchestrators, who learn "ok" or "unavailable" per part and
    nothing else; an admin's token also gets the database's dialect, the warehouse's root and why a
    part failed (whose text may name the store's internal endpoint or a path)."""
    failures = {
        "database": _failure(lambda: _ping(services)),
        "warehouse": _failure(lambda: services.fileio.exists(f"{services.warehouse_root}/{HEALTH_PROBE}")),
    }
    healthy = all(failure is None for failure in failures.values())
    if not healthy:
        response.status_code = 503
    status: Literal["ok", "unavailable"] = "ok" if healthy else "unavailable"
    if caller is None or caller.role != "admin":
        return HealthResponse(
            status=status, checks={part: "ok" if f is None else "unavailable" for part, f in failures.items()}
        )
    return HealthResponse(
        status=status,
        database=services.engine.dialect.name,
        warehouse=services.warehouse_root,
        checks={part: "ok" if f is None else f"unavailable: {f}" for part, f in failures.items()},
    )


def _ping(services: Services) -> None:
    with services.engine.connect() as conn:
        repo.ping(conn)


def _failure(probe: Callable[[], object]) -> str | None:
    """None when `probe` answers, else the first line of why not."""
    try:
        probe()
    except Exception as failed:  # any failure is the answer here, not an error of the probe
        return (str(failed).splitlines() or [type(failed).__name__])[0][:300]
    return None


@readers.post(
    "/tables/{table_id}/ping", status_code=204, response_class=Response, dependencies=[Depends(table_writer)]
)
async def ping(table_id: TableId) -> Response:
    """204 and nothing else, for whoever may commit to `table_id` (the table need not exist): a commit's
    way through this server (middleware, token and grant checks) without the commit, the floor the
    benchmark measures a commit against."""
    return Response(status_code=204)


@readers.get("/locks")
def locks(services: ServicesDep, caller: Caller) -> LockListResponse:
    """Held locks: owner, epoch, acquired and expiry on the lock backend's clock, and the commits of
    this instance waiting behind each. A token limited by a grant sees its tables' locks only."""
    return services.operations.locks(caller.scope)


@router.post("/locks/{lock_id}/release", responses={**AUTH_ERRORS, **responses(LockNotFound, InvalidRequest)})
def release_lock(
    lock_id: LockId, services: ServicesDep, admin: Admin, body: NoBody = None
) -> ReleaseLockResponse:
    """Force-release a stuck lock (admin). The epoch moves on, so the old holder's commit is rejected
    with LOCK_LOST and nothing of it becomes visible. Recorded in the audit log. A lock nobody holds
    is 404 LOCK_NOT_FOUND, and nothing is recorded."""
    return services.operations.force_release(lock_id, actor=admin.name)


@readers.get("/commits")
def commits(
    request: Request,
    services: ServicesDep,
    caller: Caller,
    limit: PageLimit = DEFAULT_PAGE,
    table: TableFilter = None,
) -> CommitsOverviewResponse:
    """Commits in flight in this instance with their phase, and the latest recorded commits and
    maintenance actions of all tables, newest first. A token limited by a grant sees its tables'
    only (403 for a `table` outside it)."""
    if table is not None and not caller.may_read(*split_table_id(table)):
        raise refusal(caller, request.method, table)
    return services.operations.commits(limit=limit, table_id=table, scope=caller.scope)


@router.get("/ops/consumers", dependencies=[Depends(everything_reader)], responses=AUTH_ERRORS)
def feed_consumers(services: ServicesDep) -> FeedConsumersResponse:
    """Every named consumer of the event feed (GET /events?consumer=<name>): the last cursor it was
    delivered, how many events its filter matches after it and how old the oldest is, when it last read.
    Admins and readers without a grant only: the lags count events of every table."""
    return services.events.consumers()


@router.get("/audit", responses=AUTH_ERRORS)
def audit(services: ServicesDep, _admin: Admin, limit: PageLimit = DEFAULT_PAGE) -> AuditListResponse:
    """Forced lock releases and token changes, newest first (admin: it names tokens, roles and grants)."""
    return services.operations.audit(limit=limit)


@router.get(
    "/metrics",
    response_class=Response,
    dependencies=[Depends(everything_reader)],
    responses={**AUTH_ERRORS, 200: {"content": {PROMETHEUS_TEXT: {}}}},
)
def metrics(services: ServicesDep) -> Response:
    """Prometheus text format: commits by outcome and kind, phase latencies, lock wait and hold,
    conflicts by type, dedup hits, expirations. The series sum up every table (none is per table), so
    only admins and readers without a grant may read them."""
    return Response(services.metrics.exposition(), media_type=PROMETHEUS_TEXT)
