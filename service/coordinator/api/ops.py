"""Health and held locks."""

from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy import text

from coordinator.api.deps import ServicesDep
from coordinator_client.models import HealthResponse, LockListResponse

router = APIRouter(tags=["ops"])


@router.get("/health")
def health(services: ServicesDep) -> HealthResponse:
    """OK when the database answers."""
    with services.engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    return HealthResponse(
        status="ok", database=services.engine.dialect.name, warehouse=services.warehouse_root
    )


@router.get("/locks")
def locks(services: ServicesDep) -> LockListResponse:
    """Locks whose lease is live: lock id, owner, epoch, acquired and expiry (database clock)."""
    return LockListResponse(locks=services.reads.locks())
