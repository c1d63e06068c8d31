"""Snapshots and live files of a table."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from coordinator.api.auth import table_reader
from coordinator.api.deps import ServicesDep
from coordinator.api.errors import AUTH_ERRORS, SNAPSHOT_ERRORS, TABLE_ERRORS, responses
from coordinator.api.params import (
    DEFAULT_PAGE,
    AtSnapshot,
    BeforeSnapshot,
    PageLimit,
    PartitionFilter,
    ScanScope,
    SnapshotId,
    TableId,
)
from coordinator.api.scan_stream import JSON_LINES, json_document, json_lines, wants_json_lines
from coordinator.errors import InvalidRequest, SnapshotNotFound, TableNotFound
from coordinator.usecases.reads import snapshot_model
from coordinator_client.models import (
    FileListResponse,
    ScanPlanEnd,
    ScanPlanHeader,
    SequenceNumbersResponse,
    SnapshotListResponse,
    SnapshotModel,
)

router = APIRouter(
    prefix="/tables/{table_id}",
    tags=["snapshots"],
    dependencies=[Depends(table_reader)],
    responses=AUTH_ERRORS,
)


@router.get("/snapshots", responses=TABLE_ERRORS)
def list_snapshots(
    table_id: TableId,
    services: ServicesDep,
    limit: PageLimit = DEFAULT_PAGE,
    before: BeforeSnapshot = None,
) -> SnapshotListResponse:
    """Newest first; page with `before`."""
    return SnapshotListResponse(snapshots=services.reads.snapshots(table_id, limit=limit, before=before))


@router.get("/snapshots/latest", responses=SNAPSHOT_ERRORS)
def latest_snapshot(table_id: TableId, services: ServicesDep) -> SnapshotModel:
    return snapshot_model(services.reads.snapshot(table_id, None))


@router.get("/snapshots/{snapshot_id}", responses=SNAPSHOT_ERRORS)
def get_snapshot(table_id: TableId, snapshot_id: SnapshotId, services: ServicesDep) -> SnapshotModel:
    return snapshot_model(services.reads.snapshot(table_id, snapshot_id))


def _inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A model's schema for a content type FastAPI does not register models for; what it refers to
    (LiveFileModel, ErrorResponse) is in the document's components through other routes."""
    schema = model.model_json_schema(by_alias=True, ref_template="#/components/schemas/{model}")
    schema.pop("$defs", None)
    return schema


_FILES_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The JSON document (FileListResponse) by default; JSON lines with "
        f"`Accept: {JSON_LINES}`: a ScanPlanHeader line, one LiveFileModel line per file, "
        "then a ScanPlanEnd line.",
        "content": {
            JSON_LINES: {
                "schema": {
                    "oneOf": [
                        _inline_schema(ScanPlanHeader),
                        {"$ref": "#/components/schemas/LiveFileModel"},
                        _inline_schema(ScanPlanEnd),
                    ]
                }
            }
        },
    },
    **responses(TableNotFound, SnapshotNotFound, InvalidRequest),
}


@router.get("/files", response_model=FileListResponse, responses=_FILES_RESPONSES)
def live_files(
    table_id: TableId,
    services: ServicesDep,
    snapshot: AtSnapshot = None,
    partition: PartitionFilter = None,
    scope: ScanScope = "all",
    accept: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> StreamingResponse:
    """The live data files at a snapshot (the latest by default): a reader's scan plan, streamed.

    With `partition`, only manifests whose partition statistics may hold it are read. The answer is
    produced while the manifests are read, so any table size costs the service the same memory; pin
    `snapshot` to the id of a first answer to read the same plan again. With `scope=delta` (and
    `snapshot`), only the files that snapshot adds: a streaming reader's changes of one snapshot.
    """
    plan = services.reads.files(table_id, snapshot, partition, scope)
    if wants_json_lines(accept):
        return StreamingResponse(json_lines(plan), media_type=JSON_LINES)
    return StreamingResponse(json_document(plan), media_type="application/json")


@router.get("/sequence-numbers", responses=responses(TableNotFound, InvalidRequest))
def sequence_numbers(
    table_id: TableId,
    services: ServicesDep,
    partition: PartitionFilter = None,
) -> SequenceNumbersResponse:
    """The highest sequence number of each bucket's live files at the latest snapshot: what a writer
    numbers its next files after, without fetching the file list."""
    return services.reads.sequence_numbers(table_id, partition)
