"""Operations: health, held locks and their forced release, commits across tables, audit, metrics."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Depends, Response

from coordinator.api.auth import Admin, reader, table_writer
from coordinator.api.bodies import NoBody
from coordinator.api.deps import ServicesDep
from coordinator.api.errors import AUTH_ERRORS, responses
from coordinator.api.params import DEFAULT_PAGE, LockId, PageLimit, TableFilter, TableId
from coordinator.db import repositories as repo
from coordinator.errors import InvalidRequest, LockNotFound
from coordinator.services import Services
from coordinator_client.models import (
    AuditListResponse,
    CommitsOverviewResponse,
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
    "/health", responses={503: {"model": HealthResponse, "description": "database or warehouse down"}}
)
def health(services: ServicesDep, response: Response) -> HealthResponse:
    """200 when the database and the warehouse both answer, else 503; the body says which part failed.
    Open to all, for load balancers and orchestrators."""
    checks = {
        "database": _check(lambda: _ping(services)),
        "warehouse": _check(lambda: services.fileio.exists(f"{services.warehouse_root}/{HEALTH_PROBE}")),
    }
    healthy = all(v == "ok" for v in checks.values())
    if not healthy:
        response.status_code = 503
    return HealthResponse(
        status="ok" if healthy else "unavailable",
        database=services.engine.dialect.name,
        warehouse=services.warehouse_root,
        checks=checks,
    )


def _ping(services: Services) -> None:
    with services.engine.connect() as conn:
        repo.ping(conn)


def _check(probe: Callable[[], object]) -> str:
    try:
        probe()
    except Exception as failed:  # any failure is the answer here, not an error of the probe
        return f"unavailable: {failed}".splitlines()[0][:300]
    return "ok"


@readers.post(
    "/tables/{table_id}/ping", status_code=204, response_class=Response, dependencies=[Depends(table_writer)]
)
async def ping(table_id: TableId) -> Response:
    """204 and nothing else, for whoever may commit to `table_id` (the table need not exist): a commit's
    way through this server (middleware, token and grant checks) without the commit, the floor the
    benchmark measures a commit against."""
    return Response(status_code=204)


@readers.get("/locks")
def locks(services: ServicesDep) -> LockListResponse:
    """Held locks: owner, epoch, acquired and expiry on the lock backend's clock, and the commits of
    this instance waiting behind each."""
    return services.operations.locks()


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
    services: ServicesDep,
    limit: PageLimit = DEFAULT_PAGE,
    table: TableFilter = None,
) -> CommitsOverviewResponse:
    """Commits in flight in this instance with their phase, and the latest recorded commits and
    maintenance actions of all tables, newest first."""
    return services.operations.commits(limit=limit, table_id=table)


@readers.get("/audit")
def audit(services: ServicesDep, limit: PageLimit = DEFAULT_PAGE) -> AuditListResponse:
    """Forced lock releases and token changes, newest first."""
    return services.operations.audit(limit=limit)


@readers.get("/metrics", response_class=Response, responses={200: {"content": {PROMETHEUS_TEXT: {}}}})
def metrics(services: ServicesDep) -> Response:
    """Prometheus text format: commits by outcome and kind, phase latencies, lock wait and hold,
    conflicts by type, dedup hits, expirations."""
    return Response(services.metrics.exposition(), media_type=PROMETHEUS_TEXT)
