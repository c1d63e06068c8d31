"""Operations: health, held locks and their forced release, commits across tables, audit, metrics."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response

from coordinator.api.auth import Admin, reader
from coordinator.api.deps import ServicesDep
from coordinator.api.errors import AUTH_ERRORS
from coordinator.db import repositories as repo
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


@router.get("/health")
def health(services: ServicesDep) -> HealthResponse:
    """OK when the database answers; open to all, for load balancers and orchestrators."""
    with services.engine.connect() as conn:
        repo.ping(conn)
    return HealthResponse(
        status="ok", database=services.engine.dialect.name, warehouse=services.warehouse_root
    )


@readers.get("/locks")
def locks(services: ServicesDep) -> LockListResponse:
    """Held locks: owner, epoch, acquired and expiry on the lock backend's clock, and the commits of
    this instance waiting behind each."""
    return services.operations.locks()


@router.post("/locks/{lock_id}/release", responses=AUTH_ERRORS)
def release_lock(lock_id: str, services: ServicesDep, admin: Admin) -> ReleaseLockResponse:
    """Force-release a stuck lock (admin). The epoch moves on, so the old holder's commit is rejected
    with LOCK_LOST and nothing of it becomes visible. Recorded in the audit log."""
    return services.operations.force_release(lock_id, actor=admin.name)


@readers.get("/commits")
def commits(
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    table: Annotated[str | None, Query(max_length=300, description="only this table id")] = None,
) -> CommitsOverviewResponse:
    """Commits in flight in this instance with their phase, and the latest recorded commits and
    maintenance actions of all tables, newest first."""
    return services.operations.commits(limit=limit, table_id=table)


@readers.get("/audit")
def audit(services: ServicesDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> AuditListResponse:
    """Forced lock releases and token changes, newest first."""
    return services.operations.audit(limit=limit)


@readers.get("/metrics", response_class=Response, responses={200: {"content": {PROMETHEUS_TEXT: {}}}})
def metrics(services: ServicesDep) -> Response:
    """Prometheus text format: commits by outcome and kind, phase latencies, lock wait and hold,
    conflicts by type, dedup hits, expirations."""
    return Response(services.metrics.exposition(), media_type=PROMETHEUS_TEXT)
