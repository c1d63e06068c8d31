"""Snapshots and live files of a table."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from coordinator.api.auth import reader
from coordinator.api.deps import ServicesDep
from coordinator.api.errors import AUTH_ERRORS, SNAPSHOT_ERRORS, TABLE_ERRORS, responses
from coordinator.errors import InvalidRequest, TableNotFound
from coordinator.usecases.reads import snapshot_model
from coordinator_client.models import (
    FileListResponse,
    SequenceNumbersResponse,
    SnapshotListResponse,
    SnapshotModel,
)

router = APIRouter(
    prefix="/tables/{table_id}", tags=["snapshots"], dependencies=[Depends(reader)], responses=AUTH_ERRORS
)


@router.get("/snapshots", responses=TABLE_ERRORS)
def list_snapshots(
    table_id: str,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    before: Annotated[int | None, Query(ge=1)] = None,
) -> SnapshotListResponse:
    """Newest first; page with `before`."""
    return SnapshotListResponse(snapshots=services.reads.snapshots(table_id, limit=limit, before=before))


@router.get("/snapshots/latest", responses=SNAPSHOT_ERRORS)
def latest_snapshot(table_id: str, services: ServicesDep) -> SnapshotModel:
    return snapshot_model(services.reads.snapshot(table_id, None))


@router.get("/snapshots/{snapshot_id}", responses=SNAPSHOT_ERRORS)
def get_snapshot(table_id: str, snapshot_id: int, services: ServicesDep) -> SnapshotModel:
    return snapshot_model(services.reads.snapshot(table_id, snapshot_id))


@router.get("/files", responses=SNAPSHOT_ERRORS)
def live_files(
    table_id: str,
    services: ServicesDep,
    snapshot: Annotated[int | None, Query(ge=1)] = None,
    partition: Annotated[str | None, Query(description='JSON object, e.g. {"dt": "2024-01-01"}')] = None,
) -> FileListResponse:
    """The live data files at a snapshot (the latest by default): a reader's scan plan."""
    return services.reads.files(table_id, snapshot, partition)


@router.get("/sequence-numbers", responses=responses(TableNotFound, InvalidRequest))
def sequence_numbers(
    table_id: str,
    services: ServicesDep,
    partition: Annotated[str | None, Query(description='JSON object, e.g. {"dt": "2024-01-01"}')] = None,
) -> SequenceNumbersResponse:
    """The highest sequence number of each bucket's live files at the latest snapshot: what a writer
    numbers its next files after, without fetching the file list."""
    return services.reads.sequence_numbers(table_id, partition)
